//! Correlation: injections that cluster, at the same long-run rate.
//!
//! - `burst`: a two-state Markov chain (the Gilbert model) over a session's matching calls.
//!   With long-run rate p and mean burst length L, a bad run ends with probability 1/L per
//!   call and starts with probability p / (L (1 − p)); the chain spends a fraction p of calls
//!   in the bad state, where every call is hit.
//! - `episodes`: run time is cut into episodes of `episode_ms`; an episode is degraded with
//!   probability p / intensity, and inside it each call is hit with probability `intensity`.
//!   Episodes are shared by all sessions (the server degrades, not one client).

use crate::plan::spec::{CorrelationMode, CorrelationSpec};
use crate::rng::{salt, StreamKey};
use crate::time::Time;

#[derive(Debug, Clone, PartialEq)]
pub enum Correlation {
    Burst { mean_burst: f64 },
    Episodes { episode: Time, intensity: f64 },
}

impl Correlation {
    pub fn compile(spec: &CorrelationSpec, p: f64) -> Result<Correlation, (String, String)> {
        match spec.mode {
            CorrelationMode::Burst => {
                let l = spec.mean_burst_calls.unwrap_or(5.0);
                if p < 1.0 && p / (l * (1.0 - p)) > 1.0 {
                    return Err((
                        "correlation/mean_burst_calls".into(),
                        format!(
                            "a rate of {p} needs mean_burst_calls of at least {:.2}",
                            p / (1.0 - p)
                        ),
                    ));
                }
                Ok(Correlation::Burst { mean_burst: l })
            }
            CorrelationMode::Episodes => {
                let intensity = spec.intensity.unwrap_or(0.5);
                if intensity < p {
                    return Err((
                        "correlation/intensity".into(),
                        format!("intensity {intensity} is below the probability {p}"),
                    ));
                }
                let ms = spec.episode_ms.unwrap_or(10_000.0);
                if ms < 1.0 {
                    return Err((
                        "correlation/episode_ms".into(),
                        format!("an episode lasts at least 1ms, not {ms}ms"),
                    ));
                }
                Ok(Correlation::Episodes {
                    episode: Time((ms * 1000.0) as u64),
                    intensity,
                })
            }
        }
    }

    /// Decide one call. `bad` is the session's chain state (burst mode); `episode_key` is a
    /// session-independent stream (episodes mode).
    pub fn fires(
        &self,
        p: f64,
        key: StreamKey,
        episode_key: StreamKey,
        seq: u64,
        now: Time,
        bad: &mut bool,
    ) -> bool {
        match *self {
            Correlation::Burst { mean_burst } => {
                if p >= 1.0 {
                    return true;
                }
                let u = key.unit(seq, salt::CORRELATION);
                let leave = 1.0 / mean_burst;
                let enter = p / (mean_burst * (1.0 - p));
                *bad = if *bad { u >= leave } else { u < enter };
                *bad
            }
            Correlation::Episodes { episode, intensity } => {
                if intensity <= 0.0 {
                    return false;
                }
                let slot = now.as_micros() / episode.as_micros().max(1);
                let degraded = episode_key.unit(slot, salt::CORRELATION) < p / intensity;
                degraded && key.unit(seq, salt::FIRE) < intensity
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::hash_str;

    fn key(s: &str) -> StreamKey {
        StreamKey::new(42, hash_str("f"), hash_str(s))
    }

    /// Run lengths of hits, for checking that bursts cluster.
    fn mean_run(hits: &[bool]) -> f64 {
        let mut runs = Vec::new();
        let mut cur = 0;
        for &h in hits {
            if h {
                cur += 1;
            } else if cur > 0 {
                runs.push(cur);
                cur = 0;
            }
        }
        runs.iter().sum::<usize>() as f64 / runs.len().max(1) as f64
    }

    #[test]
    fn burst_keeps_the_long_run_rate_and_clusters() {
        let c = Correlation::Burst { mean_burst: 8.0 };
        let p = 0.05;
        let n = 400_000u64;
        let mut bad = false;
        let hits: Vec<bool> = (0..n)
            .map(|i| c.fires(p, key("s"), key(""), i, Time::ZERO, &mut bad))
            .collect();
        let rate = hits.iter().filter(|h| **h).count() as f64 / n as f64;
        // Burstiness inflates variance: allow a band several times the binomial σ (3.4e-4).
        assert!((rate - p).abs() < 0.004, "rate {rate}");
        let run = mean_run(&hits);
        assert!((run - 8.0).abs() < 0.6, "mean burst {run}");
        // Independent draws at 5 % would give runs of about 1.05.
    }

    #[test]
    fn episodes_keep_the_long_run_rate() {
        let c = Correlation::Episodes {
            episode: Time::from_millis(1000),
            intensity: 0.5,
        };
        let p = 0.1;
        let mut total = 0usize;
        let n = 200_000u64;
        let mut bad = false;
        for i in 0..n {
            // 100 calls per episode, 2000 episodes.
            if c.fires(p, key("s"), key("ep"), i, Time(i * 10_000), &mut bad) {
                total += 1;
            }
        }
        let rate = total as f64 / n as f64;
        // With 2000 episodes the degraded fraction has σ ≈ 0.0095; rate σ ≈ 0.005.
        assert!((rate - p).abs() < 0.02, "rate {rate}");
    }

    #[test]
    fn impossible_bursts_are_rejected() {
        let spec = CorrelationSpec {
            mode: CorrelationMode::Burst,
            mean_burst_calls: Some(1.0),
            episode_ms: None,
            intensity: None,
        };
        assert!(Correlation::compile(&spec, 0.9).is_err());
        assert!(Correlation::compile(&spec, 0.3).is_ok());
    }
}
