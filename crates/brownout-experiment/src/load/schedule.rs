//! When tasks arrive and where they run: a pure function of the workload and the seed, so
//! a seed replays the same schedule.
//!
//! Open loop: a Poisson process at `rate_per_s` (exponential gaps drawn from the seed), the
//! same way the simulator draws them. Closed loop: `concurrency` agents, each running a task
//! as soon as its last one ended. Task `k` (open) or agent `k` (closed) uses session
//! `k mod sessions`.

use brownout_core::rng::{mix, SplitMix};

/// The arrival offsets, in milliseconds from the start, of an open loop at `rate_per_s`.
pub struct Arrivals {
    rng: SplitMix,
    rate_per_ms: f64,
    at_ms: f64,
}

impl Arrivals {
    pub fn new(rate_per_s: f64, seed: u64) -> Arrivals {
        Arrivals {
            rng: SplitMix::new(mix(seed ^ 0x6c6f_6164)),
            rate_per_ms: rate_per_s.max(1e-9) / 1000.0,
            at_ms: 0.0,
        }
    }
}

impl Iterator for Arrivals {
    type Item = f64;

    fn next(&mut self) -> Option<f64> {
        // 1 − u is in (0, 1]: the logarithm is finite.
        let u = 1.0 - self.rng.unit();
        self.at_ms += -u.ln() / self.rate_per_ms;
        Some(self.at_ms)
    }
}

/// The session of task (or agent) `k`.
pub fn session_of(k: u64, sessions: usize) -> usize {
    (k % sessions.max(1) as u64) as usize
}

/// A draw for one call's retry jitter, independent of the order calls finish in.
pub fn call_rng(seed: u64, task: u64, call: u64) -> SplitMix {
    SplitMix::new(mix(mix(seed ^ 0x7265_7472) ^ mix(task)) ^ call)
}

/// A running digest of the schedule (task number, session, intended start in µs): two runs
/// with the same seed and workload have the same one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fingerprint(pub u64);

impl Fingerprint {
    pub fn add(&mut self, task: u64, session: usize, intended_us: u64) {
        // Order-independent (tasks may start out of order in a closed loop): a sum of mixes.
        self.0 = self.0.wrapping_add(mix(
            mix(task) ^ mix(session as u64 ^ intended_us.rotate_left(17))
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_replays_its_arrivals_and_the_rate_holds() {
        let a: Vec<f64> = Arrivals::new(100.0, 7).take(20_000).collect();
        let b: Vec<f64> = Arrivals::new(100.0, 7).take(20_000).collect();
        let c: Vec<f64> = Arrivals::new(100.0, 8).take(20_000).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.windows(2).all(|w| w[1] > w[0]));
        // 20,000 arrivals at 100/s take about 200 s (within 5 %).
        let span_s = a[a.len() - 1] / 1000.0;
        assert!((190.0..210.0).contains(&span_s), "{span_s}");
    }

    #[test]
    fn sessions_are_round_robin() {
        let s: Vec<usize> = (0..5).map(|k| session_of(k, 2)).collect();
        assert_eq!(s, vec![0, 1, 0, 1, 0]);
        assert_eq!(session_of(9, 0), 0);
    }
}
