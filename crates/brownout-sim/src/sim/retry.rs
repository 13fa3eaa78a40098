//! Retries: whether a failed attempt may be retried (attempts, the retry budget) and how long
//! the client waits first (exponential backoff, capped, with jitter and a least gap).

use super::{ms, CallEnd, Ev, Sim};
use crate::workload::Retries;

/// Attempts per call under `unbounded` retries: enough for any storm, and a run whose
/// calls have no deadline still ends.
pub const UNBOUNDED_ATTEMPTS: u32 = 1_000;

/// May a call that has made `attempts` attempts try again, with `retries_made` retries so
/// far across `calls` calls?
pub fn may_retry(r: &Retries, attempts: u32, retries_made: u64, calls: u64) -> bool {
    let within = if r.unbounded {
        attempts < UNBOUNDED_ATTEMPTS
    } else {
        attempts < r.max_attempts.unwrap_or(3)
    };
    let budget_ok = r
        .budget_ratio
        .is_none_or(|ratio| (retries_made as f64) < ratio * calls as f64);
    within && budget_ok
}

/// The wait in milliseconds before the retry that follows attempt number `attempts`;
/// `unit` draws the jitter (called only when there is jitter).
pub fn backoff_ms(r: &Retries, attempts: u32, unit: impl FnOnce() -> f64) -> f64 {
    let first = r.backoff_ms.unwrap_or(0.0);
    // The exponent is capped: 0 × 2^1024 would be NaN, and no backoff needs more.
    let exponent = attempts.saturating_sub(1).min(60) as i32;
    let base = if first == 0.0 {
        0.0
    } else {
        first * power(r.multiplier.unwrap_or(2.0), exponent)
    };
    let b = base.min(r.max_backoff_ms.unwrap_or(10_000.0));
    let j = r.jitter.unwrap_or(0.0);
    let wait = if j > 0.0 { b * (1.0 - j * unit()) } else { b };
    wait.max(r.min_gap_ms.unwrap_or(1.0).max(0.001))
}

/// `m.powi(e)` for `0 ≤ e ≤ 60`, the same value, without the library call for the usual
/// multipliers (a retry storm computes one per attempt): 1 and 2 give exact powers.
fn power(m: f64, e: i32) -> f64 {
    if m == 1.0 || e == 0 {
        1.0
    } else if m == 2.0 && (0..=60).contains(&e) {
        (1u64 << e) as f64
    } else {
        m.powi(e)
    }
}

impl Sim<'_> {
    /// An attempt failed: retry after a backoff, or fail the call.
    pub(super) fn attempt_failed<const F: bool>(&mut self, call: u32) {
        let attempts = self.calls.items[call as usize].attempts;
        let w = self.w;
        let Some(r) = w.client.retries.as_ref().filter(|_| F) else {
            return self.end_call::<F>(call, CallEnd::Fail);
        };
        if !may_retry(r, attempts, self.retries_made, self.c.calls) {
            return self.end_call::<F>(call, CallEnd::Fail);
        }
        self.retries_made += 1;
        let wait = backoff_ms(r, attempts, || self.rng.unit());
        let gen = self.calls.items[call as usize].gen;
        self.push(self.now + ms(wait), Ev::Attempt(call, gen));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_is_powi() {
        for m in [1.0, 2.0, 1.5, 0.5, 3.0, 0.0, -2.0, f64::NAN, f64::INFINITY] {
            for e in 0..=60 {
                assert_eq!(power(m, e).to_bits(), m.powi(e).to_bits(), "{m} {e}");
            }
        }
    }

    fn retries(yaml: &str) -> Retries {
        let v: serde_json::Value =
            brownout_core::plan::source::parse(yaml, brownout_core::plan::source::Format::Yaml)
                .expect("yaml")
                .to_json();
        serde_json::from_value(v).expect("retries")
    }

    #[test]
    fn backoff_grows_by_the_multiplier_up_to_the_cap() {
        let r = retries("{backoff_ms: 50, multiplier: 3, max_backoff_ms: 1000}");
        let waits: Vec<f64> = (1..=5)
            .map(|n| backoff_ms(&r, n, || unreachable!("no jitter")))
            .collect();
        assert_eq!(waits, vec![50.0, 150.0, 450.0, 1000.0, 1000.0]);
        // Attempt counts far past the exponent cap stay finite.
        assert_eq!(backoff_ms(&r, u32::MAX, || 0.0), 1000.0);
    }

    #[test]
    fn jitter_draws_below_the_backoff_and_the_gap_is_a_floor() {
        let r = retries("{backoff_ms: 100, jitter: 0.5}");
        assert_eq!(backoff_ms(&r, 1, || 0.0), 100.0);
        assert_eq!(backoff_ms(&r, 1, || 1.0), 50.0);
        assert_eq!(backoff_ms(&r, 2, || 0.5), 150.0);
        // No backoff: retry after the least gap (default 1 ms).
        let r = retries("{}");
        assert_eq!(backoff_ms(&r, 1, || unreachable!("no jitter")), 1.0);
        let r = retries("{min_gap_ms: 7}");
        assert_eq!(backoff_ms(&r, 3, || unreachable!("no jitter")), 7.0);
    }

    #[test]
    fn attempts_and_the_budget_bound_retries() {
        let r = retries("{max_attempts: 3}");
        assert!(may_retry(&r, 1, 0, 1));
        assert!(may_retry(&r, 2, 0, 1));
        assert!(!may_retry(&r, 3, 0, 1));
        let r = retries("{unbounded: true, budget_ratio: 0.1}");
        assert!(may_retry(&r, 999, 9, 100));
        assert!(!may_retry(&r, 999, 10, 100), "the budget is spent");
        assert!(!may_retry(&r, UNBOUNDED_ATTEMPTS, 0, 100));
    }
}
