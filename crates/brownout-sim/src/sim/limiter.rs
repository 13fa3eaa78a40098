//! The client's outbound rate limiter: a token bucket in virtual time (microseconds), also
//! used by live load (`brownout load`) with real time.

use crate::workload::{LimiterMode, RateLimiter};

/// What the limiter lets an attempt do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Take {
    /// A token was there: go now.
    Go,
    /// `queue` mode, no token: go after this many microseconds. The token is taken from the
    /// future (the bucket goes into debt), so the attempt does not pass the limiter again.
    Wait(u64),
    /// `reject` mode, no token: the attempt fails at once.
    Reject,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: u64,
    mode: LimiterMode,
}

impl TokenBucket {
    /// A full bucket; `burst` defaults to one second's worth (at least 1).
    pub fn new(l: &RateLimiter) -> TokenBucket {
        let burst = l.burst.unwrap_or(l.rate_per_s.max(1.0));
        TokenBucket {
            rate: l.rate_per_s,
            burst,
            tokens: burst,
            last: 0,
            mode: l.mode,
        }
    }

    pub fn take(&mut self, now: u64) -> Take {
        let tokens = (self.tokens + (now - self.last) as f64 / 1e6 * self.rate).min(self.burst);
        self.last = now;
        if tokens >= 1.0 {
            self.tokens = tokens - 1.0;
            return Take::Go;
        }
        match self.mode {
            LimiterMode::Queue => {
                let wait = ((1.0 - tokens) / self.rate * 1e6) as u64;
                self.tokens = tokens - 1.0;
                Take::Wait(wait)
            }
            LimiterMode::Reject => {
                self.tokens = tokens;
                Take::Reject
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(rate: f64, burst: f64, mode: LimiterMode) -> TokenBucket {
        TokenBucket::new(&RateLimiter {
            rate_per_s: rate,
            burst: Some(burst),
            mode,
        })
    }

    #[test]
    fn a_burst_then_the_rate_then_rejects() {
        let mut b = bucket(10.0, 3.0, LimiterMode::Reject);
        let at_zero: Vec<Take> = (0..4).map(|_| b.take(0)).collect();
        assert_eq!(at_zero, vec![Take::Go, Take::Go, Take::Go, Take::Reject]);
        // 10 per second: one token every 100 ms.
        assert_eq!(b.take(50_000), Take::Reject);
        assert_eq!(b.take(100_000), Take::Go);
        assert_eq!(b.take(100_000), Take::Reject);
        // A long pause refills to the burst, not beyond.
        let later: Vec<Take> = (0..4).map(|_| b.take(60_000_000)).collect();
        assert_eq!(later, vec![Take::Go, Take::Go, Take::Go, Take::Reject]);
    }

    #[test]
    fn queue_mode_spaces_attempts_at_the_rate() {
        let mut b = bucket(10.0, 1.0, LimiterMode::Queue);
        assert_eq!(b.take(0), Take::Go);
        // Each waiting attempt takes a token from the future: 100 ms, then 200 ms.
        assert_eq!(b.take(0), Take::Wait(100_000));
        assert_eq!(b.take(0), Take::Wait(200_000));
        // Later, the debt is paid back before a token is free again.
        assert_eq!(b.take(200_000), Take::Wait(100_000));
    }

    #[test]
    fn the_default_burst_is_a_second_of_rate() {
        let b = TokenBucket::new(&RateLimiter {
            rate_per_s: 0.5,
            burst: None,
            mode: LimiterMode::Reject,
        });
        assert_eq!(b.burst, 1.0);
        let b = TokenBucket::new(&RateLimiter {
            rate_per_s: 50.0,
            burst: None,
            mode: LimiterMode::Reject,
        });
        assert_eq!(b.burst, 50.0);
    }
}
