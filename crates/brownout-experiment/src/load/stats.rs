//! The load's own tally: calls by outcome, tasks, attempts, latency percentiles from a
//! bounded log-scale histogram (1 % resolution, memory fixed however long the run).

use brownout_core::slo::CallObservation;
use serde::Serialize;
use std::collections::BTreeMap;

/// Buckets of the latency histogram: bucket `i` holds latencies up to `1.01^i` µs.
const BUCKETS: usize = 2400; // 1.01^2400 µs ≈ 23 million seconds
const GROWTH: f64 = 1.01;

#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Vec<u64>,
    n: u64,
    sum_ms: f64,
    max_ms: f64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; BUCKETS],
            n: 0,
            sum_ms: 0.0,
            max_ms: 0.0,
        }
    }
}

impl Histogram {
    pub fn record(&mut self, ms: f64) {
        let us = (ms * 1000.0).max(1.0);
        let i = (us.ln() / GROWTH.ln())
            .ceil()
            .clamp(0.0, (BUCKETS - 1) as f64) as usize;
        self.counts[i] += 1;
        self.n += 1;
        self.sum_ms += ms;
        self.max_ms = self.max_ms.max(ms);
    }

    /// The `q` quantile (0..=1) in milliseconds; 0 when empty. Read as the bucket's upper
    /// bound, so at most 1 % above the true value (and never above the maximum).
    pub fn quantile(&self, q: f64) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return (GROWTH.powi(i as i32) / 1000.0).min(self.max_ms);
            }
        }
        self.max_ms
    }

    pub fn count(&self) -> u64 {
        self.n
    }

    pub fn summary(&self) -> LatencySummary {
        LatencySummary {
            p50: self.quantile(0.5),
            p90: self.quantile(0.9),
            p95: self.quantile(0.95),
            p99: self.quantile(0.99),
            max: self.max_ms,
            mean: if self.n == 0 {
                0.0
            } else {
                self.sum_ms / self.n as f64
            },
        }
    }
}

/// Latency of logical calls in milliseconds, from their intended start.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

/// What a load run did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LoadSummary {
    /// Wall time from the first task to the end, in seconds.
    pub duration_s: f64,
    pub sessions: usize,
    pub seed: u64,
    pub tasks: u64,
    pub tasks_ok: u64,
    pub tasks_failed: u64,
    /// Logical calls ended (what the agents asked for).
    pub calls: u64,
    /// Logical calls by final outcome (`ok`, `error`, `tool_error`, `malformed`, `unanswered`).
    pub outcomes: BTreeMap<String, u64>,
    /// Calls whose last attempt timed out (counted as `unanswered`).
    pub timeouts: u64,
    /// Attempts that went on the wire, retries included.
    pub attempts: u64,
    /// Attempts the client's own rate limiter refused (`reject` mode).
    pub limiter_rejections: u64,
    /// Calls failed fast by an open circuit breaker.
    pub breaker_rejections: u64,
    /// Attempts per logical call.
    pub attempt_amplification: f64,
    pub calls_per_s: f64,
    pub attempts_per_s: f64,
    /// Failed calls over calls.
    pub error_rate: f64,
    pub latency_ms: LatencySummary,
    /// How late the generator started tasks against an open-loop schedule, at worst (ms).
    /// Latency already counts it; a large value means the generator was the bottleneck.
    pub max_start_lag_ms: f64,
    /// Stdio sessions started again after their process exited.
    pub session_restarts: u64,
    /// A digest of the schedule (tasks, sessions, intended starts): equal for equal seeds.
    pub schedule_fingerprint: u64,
    /// The agent's policy for results later steps take values from (`trust`, `validate`,
    /// `verify`).
    pub policy: &'static str,
    /// Reads the policy added (validate's re-fetches, verify's second and third reads);
    /// each is also a call.
    pub rereads: u64,
    /// Tasks failed because the policy found no result to act on (failed safely).
    pub gave_up: u64,
    /// Tasks failed because a value a step takes (`{from, path}`) was missing.
    pub missing_values: u64,
}

/// The running tally.
#[derive(Debug, Default)]
pub struct Tally {
    pub hist: Histogram,
    pub outcomes: BTreeMap<&'static str, u64>,
    pub calls: u64,
    pub failed: u64,
    pub timeouts: u64,
    pub tasks_ok: u64,
    pub tasks_failed: u64,
}

impl Tally {
    pub fn call(&mut self, c: &CallObservation) {
        self.calls += 1;
        *self.outcomes.entry(c.outcome.as_str()).or_default() += 1;
        if !c.outcome.is_success() {
            self.failed += 1;
        }
        if c.timed_out {
            self.timeouts += 1;
        }
        self.hist.record(c.latency_ms);
    }

    pub fn task(&mut self, ok: bool) {
        if ok {
            self.tasks_ok += 1;
        } else {
            self.tasks_failed += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_within_one_percent() {
        let mut h = Histogram::default();
        for i in 1..=1000 {
            h.record(f64::from(i));
        }
        for (q, want) in [(0.5, 500.0), (0.99, 990.0), (1.0, 1000.0)] {
            let got = h.quantile(q);
            assert!(got >= want * 0.999 && got <= want * 1.011, "q{q}: {got}");
        }
        assert_eq!(h.summary().max, 1000.0);
        assert!((h.summary().mean - 500.5).abs() < 1e-9);
        assert_eq!(Histogram::default().quantile(0.99), 0.0);
        // Sub-microsecond and absurd values land in the end buckets.
        h.record(0.0);
        h.record(1e12);
        assert_eq!(h.count(), 1002);
    }
}
