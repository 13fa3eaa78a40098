//! Circuit breakers, one per tool: closed → open when the sliding window of answers trips the
//! threshold, open → half-open after `open_ms`, half-open → closed when every probe succeeds,
//! or back to open at the first failed probe. Times are microseconds (virtual in the
//! simulator, real in live load).

use super::{ms, Answer, Sim};
use crate::metrics::{BreakerTransition, BREAKER_LOG_CAP};
use crate::workload::{Breaker as BreakerConfig, BreakerMode};
use std::collections::VecDeque;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BreakerState {
    Closed,
    /// Open until this time.
    Open(u64),
    /// Probes still to let through, probes that succeeded.
    HalfOpen {
        left: u32,
        ok: u32,
    },
}

/// A state change, for the log and the count of open breakers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Moved {
    Open,
    HalfOpen,
    Closed,
}

impl Moved {
    fn name(self) -> &'static str {
        match self {
            Moved::Open => "open",
            Moved::HalfOpen => "half_open",
            Moved::Closed => "closed",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Breaker {
    pub(super) state: BreakerState,
    /// (answered, answered correctly) of the last `window` attempts while closed.
    window: VecDeque<(bool, bool)>,
}

impl Breaker {
    #[allow(clippy::new_without_default)]
    pub fn new() -> Breaker {
        Breaker {
            state: BreakerState::Closed,
            window: VecDeque::new(),
        }
    }

    /// May an attempt go out now? An open breaker whose time is up half-opens here.
    pub fn allows(&mut self, now: u64, cfg: &BreakerConfig) -> (bool, Option<Moved>) {
        match self.state {
            BreakerState::Closed => (true, None),
            BreakerState::Open(until) if now < until => (false, None),
            BreakerState::Open(_) => {
                let probes = cfg.half_open_probes.unwrap_or(1).max(1);
                self.state = BreakerState::HalfOpen {
                    left: probes - 1,
                    ok: 0,
                };
                (true, Some(Moved::HalfOpen))
            }
            BreakerState::HalfOpen { left, ok } => {
                if left == 0 {
                    return (false, None);
                }
                self.state = BreakerState::HalfOpen { left: left - 1, ok };
                (true, None)
            }
        }
    }

    /// Record an attempt's answer.
    pub fn record(&mut self, now: u64, cfg: &BreakerConfig, answer: Answer) -> Option<Moved> {
        let open_us = ms(cfg.open_ms.unwrap_or(5000.0));
        let responded = answer != Answer::Fail;
        let correct = answer == Answer::Ok;
        match self.state {
            BreakerState::HalfOpen { left, ok } => {
                let good = match cfg.mode {
                    BreakerMode::ErrorRate => responded,
                    BreakerMode::Eta => correct,
                };
                if !good {
                    self.state = BreakerState::Open(now + open_us);
                    Some(Moved::Open)
                } else if left == 0 && ok + 1 >= cfg.half_open_probes.unwrap_or(1) {
                    self.state = BreakerState::Closed;
                    self.window.clear();
                    Some(Moved::Closed)
                } else {
                    self.state = BreakerState::HalfOpen { left, ok: ok + 1 };
                    None
                }
            }
            BreakerState::Open(_) => None,
            BreakerState::Closed => {
                let window = cfg.window.unwrap_or(20) as usize;
                self.window.push_back((responded, correct));
                if self.window.len() > window {
                    self.window.pop_front();
                }
                if self.window.len() < cfg.min_calls.unwrap_or(10) as usize {
                    return None;
                }
                let n = self.window.len() as f64;
                let trip = match cfg.mode {
                    BreakerMode::ErrorRate => {
                        self.window.iter().filter(|(r, _)| !r).count() as f64 / n > cfg.threshold
                    }
                    BreakerMode::Eta => {
                        self.window.iter().filter(|(r, c)| *r && *c).count() as f64 / n
                            < cfg.threshold
                    }
                };
                if !trip {
                    return None;
                }
                self.state = BreakerState::Open(now + open_us);
                Some(Moved::Open)
            }
        }
    }
}

impl Sim<'_> {
    pub(super) fn breaker_allows(&mut self, tool: usize) -> bool {
        let w = self.w;
        let Some(cfg) = &w.client.breaker else {
            return true;
        };
        let (allowed, moved) = self.breakers[tool].allows(self.now, cfg);
        if let Some(m) = moved {
            self.breaker_moved(tool, m);
        }
        allowed
    }

    pub(super) fn breaker_record(&mut self, tool: usize, answer: Answer) {
        let w = self.w;
        let Some(cfg) = &w.client.breaker else {
            return;
        };
        if let Some(m) = self.breakers[tool].record(self.now, cfg, answer) {
            self.breaker_moved(tool, m);
        }
    }

    fn breaker_moved(&mut self, tool: usize, moved: Moved) {
        match moved {
            Moved::Open => self.set_open(1),
            Moved::HalfOpen => self.set_open(-1),
            Moved::Closed => {}
        }
        self.c.breaker_transitions += 1;
        if self.c.breaker_log.len() < BREAKER_LOG_CAP {
            self.c.breaker_log.push(BreakerTransition {
                t_ms: self.now as f64 / 1000.0,
                tool: self.names[tool].clone(),
                to: moved.name(),
            });
        }
    }

    fn set_open(&mut self, delta: i64) {
        self.open_breakers = (self.open_breakers as i64 + delta).max(0) as u64;
        let n = self.open_breakers;
        self.c.second(self.now).open_breakers = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(mode: BreakerMode, probes: u32) -> BreakerConfig {
        BreakerConfig {
            mode,
            threshold: 0.5,
            window: Some(4),
            min_calls: Some(4),
            open_ms: Some(100.0),
            half_open_probes: Some(probes),
        }
    }

    #[test]
    fn opens_on_the_failed_share_of_a_full_window() {
        let c = cfg(BreakerMode::ErrorRate, 1);
        let mut b = Breaker::new();
        // Fewer answers than min_calls never trip, however bad.
        for _ in 0..3 {
            assert_eq!(b.record(0, &c, Answer::Fail), None);
        }
        // 3 of 4 failed > 50 %: open for 100 ms.
        assert_eq!(b.record(5, &c, Answer::Ok), Some(Moved::Open));
        assert_eq!(b.state, BreakerState::Open(100_005));
        assert_eq!(b.allows(100_004, &c), (false, None));
        // Answers of attempts already out do not move an open breaker.
        assert_eq!(b.record(100_004, &c, Answer::Fail), None);
    }

    #[test]
    fn half_opens_lets_probes_through_and_closes_when_all_succeed() {
        let c = cfg(BreakerMode::ErrorRate, 2);
        let mut b = Breaker {
            state: BreakerState::Open(1_000),
            window: VecDeque::from(vec![(false, false); 4]),
        };
        assert_eq!(b.allows(1_000, &c), (true, Some(Moved::HalfOpen)));
        assert_eq!(b.allows(1_001, &c), (true, None));
        // Both probes are out: nothing else until they answer.
        assert_eq!(b.allows(1_002, &c), (false, None));
        assert_eq!(b.record(1_010, &c, Answer::Ok), None);
        assert_eq!(b.record(1_020, &c, Answer::Ok), Some(Moved::Closed));
        assert_eq!(b.state, BreakerState::Closed);
        // Closing forgets the old window.
        assert_eq!(b.record(1_030, &c, Answer::Fail), None);
    }

    #[test]
    fn a_failed_probe_opens_again_and_eta_mode_counts_corrupt_answers_as_bad() {
        let c = cfg(BreakerMode::Eta, 1);
        let mut b = Breaker {
            state: BreakerState::Open(0),
            window: VecDeque::new(),
        };
        assert_eq!(b.allows(0, &c), (true, Some(Moved::HalfOpen)));
        assert_eq!(b.record(7, &c, Answer::Corrupt), Some(Moved::Open));
        assert_eq!(b.state, BreakerState::Open(100_007));
        // In error-rate mode a corrupt answer is an answer: the window holds.
        let c = cfg(BreakerMode::ErrorRate, 1);
        let mut b = Breaker::new();
        for _ in 0..8 {
            assert_eq!(b.record(0, &c, Answer::Corrupt), None);
        }
        let c = cfg(BreakerMode::Eta, 1);
        let mut b = Breaker::new();
        let moves: Vec<_> = (0..4).map(|_| b.record(0, &c, Answer::Corrupt)).collect();
        assert_eq!(moves, vec![None, None, None, Some(Moved::Open)]);
    }
}
