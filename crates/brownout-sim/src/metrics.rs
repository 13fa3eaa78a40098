//! What a simulation measured: per-call and per-task counts, the SLIs built from them, and a
//! per-second time series.

use hdrhistogram::Histogram;
use serde::Serialize;

/// Counters the simulator keeps while it runs.
#[derive(Debug, Clone)]
pub struct Counters {
    pub tasks: u64,
    pub failed_tasks: u64,
    pub tasks_within_deadline: u64,
    /// Logical calls: what the agent asked for.
    pub calls: u64,
    /// Attempts: what went on the wire (retries included).
    pub attempts: u64,
    /// Calls answered (not an error, not a timeout), correct or not.
    pub responded: u64,
    /// Calls answered correctly.
    pub correct: u64,
    /// Calls answered with a drifted or partial result, consumed as success.
    pub silent: u64,
    /// Calls that failed visibly (error, timeout, skipped, breaker open).
    pub surfaced: u64,
    /// Calls not started: breaker open or deadline-aware skip.
    pub skipped: u64,
    pub latency_us: Histogram<u64>,
    pub series: Vec<Second>,
    /// Breaker state changes, the first [`BREAKER_LOG_CAP`] of them.
    pub breaker_log: Vec<BreakerTransition>,
    /// Breaker state changes in all.
    pub breaker_transitions: u64,
    /// What became of the results faults changed (chained workloads).
    pub chain: ChainCounts,
}

/// What became of the results faults changed, as the relay's taint tracking classifies them
/// (`docs/silent.md`), and the agent's extra reads.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ChainCounts {
    /// The agent's policy.
    pub policy: crate::chain::Policy,
    pub altered: u64,
    pub propagated: u64,
    pub noticed: u64,
    pub unobserved: u64,
    /// Reads the policy added (validate's re-fetches, verify's second and third reads).
    pub rereads: u64,
    /// Tasks that failed because a value a step takes `from` an earlier result was missing.
    pub missing_values: u64,
}

/// The silent-failure figures of a run: `altered` results, each `propagated` (a later step
/// acted on a value the fault introduced: failed silently), `noticed` (the agent read it
/// again: failed safely) or `unobserved` (no later step took from it, or the agent gave the
/// task up without reading again).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SilentReport {
    /// The agent's policy: `trust`, `validate` or `verify`.
    pub policy: &'static str,
    pub altered: u64,
    pub propagated: u64,
    pub noticed: u64,
    pub unobserved: u64,
    /// Propagated / altered.
    pub silent_rate: f64,
    /// Noticed / altered.
    pub safe_rate: f64,
    /// Reads the policy added; they are calls (in `calls` and TCAF).
    pub rereads: u64,
    pub missing_values: u64,
    /// "of the N results a fault changed, X% failed safely (noticed), Y% silently (acted on)".
    pub headline: String,
}

impl SilentReport {
    pub fn of(c: &ChainCounts) -> SilentReport {
        let core = brownout_core::stats::Silent {
            altered: c.altered,
            propagated: c.propagated,
            noticed: c.noticed,
            unobserved: c.unobserved,
            pending: 0,
            silent_rate: ratio(c.propagated, c.altered),
            safe_rate: ratio(c.noticed, c.altered),
        };
        SilentReport {
            policy: c.policy.as_str(),
            altered: c.altered,
            propagated: c.propagated,
            noticed: c.noticed,
            unobserved: c.unobserved,
            silent_rate: core.silent_rate,
            safe_rate: core.safe_rate,
            rereads: c.rereads,
            missing_values: c.missing_values,
            headline: core.headline(),
        }
    }
}

/// How many breaker transitions a report lists (they are all counted).
pub const BREAKER_LOG_CAP: usize = 10_000;

/// A circuit breaker changed state.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BreakerTransition {
    /// Virtual time, in milliseconds.
    pub t_ms: f64,
    pub tool: String,
    /// `open`, `half_open` or `closed`.
    pub to: &'static str,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            tasks: 0,
            failed_tasks: 0,
            tasks_within_deadline: 0,
            calls: 0,
            attempts: 0,
            responded: 0,
            correct: 0,
            silent: 0,
            surfaced: 0,
            skipped: 0,
            latency_us: Histogram::new_with_bounds(1, 86_400_000_000, 3).unwrap_or_else(|_| {
                Histogram::new(3).unwrap_or_else(|_| unreachable!("3 significant digits is valid"))
            }),
            series: Vec::new(),
            breaker_log: Vec::new(),
            breaker_transitions: 0,
            chain: ChainCounts::default(),
        }
    }
}

/// One second of virtual time.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Second {
    pub t_s: u64,
    /// Logical calls started.
    pub offered: u64,
    pub attempts: u64,
    /// Attempts that failed (error, timeout, rejected).
    pub errors: u64,
    /// The longest server queue seen in this second.
    pub max_queue: u64,
    /// Breakers open at the end of the second.
    pub open_breakers: u64,
}

impl Counters {
    pub fn second(&mut self, t_us: u64) -> &mut Second {
        let s = (t_us / 1_000_000) as usize;
        if self.series.len() <= s {
            let start = self.series.len();
            // open_breakers: u64::MAX means "unchanged in this second", filled in at the end.
            self.series.extend((start..=s).map(|t| Second {
                t_s: t as u64,
                open_breakers: u64::MAX,
                ..Default::default()
            }));
        }
        &mut self.series[s]
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencyMs {
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}

/// The simulation's results; `--json` prints this.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub name: Option<String>,
    pub seed: u64,
    pub plan_seed: u64,
    pub tasks: u64,
    pub calls: u64,
    pub attempts: u64,
    /// Logical calls per task.
    pub tcaf: f64,
    /// Attempts per logical call: retries stay visible here, never in TCAF.
    pub attempt_amplification: f64,
    /// Calls that succeeded (answered, correct) over calls.
    pub tcsr: f64,
    /// Calls answered over calls.
    pub availability: f64,
    /// Correct answers over answers.
    pub correctness: f64,
    /// Effective tool availability: availability × correctness.
    pub eta: f64,
    /// Tasks finished within their deadline over tasks.
    pub deadline_adherence: f64,
    /// Failed tasks over tasks.
    pub blast_radius: f64,
    /// Calls that failed visibly.
    pub surfaced_failures: u64,
    /// Calls whose drifted or partial result was consumed as success.
    pub silent_failures: u64,
    /// Calls not started (breaker open, deadline-aware skip).
    pub skipped_calls: u64,
    /// Failed attempts over attempts.
    pub attempt_error_rate: f64,
    /// Latency of logical calls, retries included, in milliseconds.
    pub latency_ms: LatencyMs,
    /// Virtual time the run covered, in seconds.
    pub duration_s: f64,
    /// Injections per fault id.
    pub injections: std::collections::BTreeMap<String, u64>,
    /// Breaker state changes in all (0 without a breaker).
    pub breaker_transitions: u64,
    /// The breaker state changes, in order (the first 10,000).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub breaker_log: Vec<BreakerTransition>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<Second>,
    /// The SLO gates of the run (`--gate`), each with whether and when it breached.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gates: Vec<brownout_core::slo::GateSummary>,
    /// What became of the results faults changed.
    pub silent: SilentReport,
    /// Robustness ρ over the gates: the smallest normalised margin (> 0 every gate held
    /// with room, < 0 one breached; `null` without gates or samples).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub robustness: Option<f64>,
    /// The bound that stopped the run before its end (events, memory, time, cancelled),
    /// when one did: the report then covers the run up to there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<String>,
}

impl Report {
    /// ρ from the gate summaries.
    pub fn robustness_of(gates: &[brownout_core::slo::GateSummary]) -> Option<f64> {
        gates.iter().filter_map(|g| g.robustness).reduce(f64::min)
    }
}

impl Report {
    pub fn from_counters(
        c: &Counters,
        name: Option<String>,
        seed: u64,
        plan_seed: u64,
        duration_us: u64,
        injections: std::collections::BTreeMap<String, u64>,
        keep_series: bool,
    ) -> Report {
        let q = |p: f64| {
            if c.latency_us.is_empty() {
                0.0
            } else {
                c.latency_us.value_at_quantile(p) as f64 / 1000.0
            }
        };
        let failed_attempts: u64 = c.series.iter().map(|s| s.errors).sum();
        let availability = ratio(c.responded, c.calls);
        let correctness = ratio(c.correct, c.responded);
        Report {
            name,
            seed,
            plan_seed,
            tasks: c.tasks,
            calls: c.calls,
            attempts: c.attempts,
            tcaf: ratio(c.calls, c.tasks),
            attempt_amplification: ratio(c.attempts, c.calls),
            tcsr: ratio(c.correct, c.calls),
            availability,
            correctness,
            eta: availability * correctness,
            deadline_adherence: ratio(c.tasks_within_deadline, c.tasks),
            blast_radius: ratio(c.failed_tasks, c.tasks),
            surfaced_failures: c.surfaced,
            silent_failures: c.silent,
            skipped_calls: c.skipped,
            attempt_error_rate: ratio(failed_attempts, c.attempts),
            latency_ms: LatencyMs {
                p50: q(0.5),
                p95: q(0.95),
                p99: q(0.99),
                max: if c.latency_us.is_empty() {
                    0.0
                } else {
                    c.latency_us.max() as f64 / 1000.0
                },
            },
            duration_s: duration_us as f64 / 1e6,
            injections,
            breaker_transitions: c.breaker_transitions,
            breaker_log: c.breaker_log.clone(),
            series: if keep_series {
                c.series.clone()
            } else {
                Vec::new()
            },
            gates: Vec::new(),
            silent: SilentReport::of(&c.chain),
            robustness: None,
            stopped_by: None,
        }
    }
}
