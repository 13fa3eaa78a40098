//! `rate_limit`: a real token bucket (`rate` tokens per second, `burst` capacity), per
//! session or global. A call that finds the bucket empty is answered with a JSON-RPC error
//! carrying `retry_after_ms` and never reaches the server (the HTTP relay answers 429).

use super::simulated::{SimOutcome, SimulatedCall};
use super::{AddedDelay, FaultKind, KindInfo, Phase, CALLS};
use super::{Ctx, Shaping};
use crate::select::Direction;
use crate::splice;
use crate::time::Time;
use crate::verdict::HttpAction;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    #[default]
    Session,
    Global,
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
pub struct RateLimit {
    /// Tokens added per second.
    #[schemars(range(min = 0))]
    pub rate: f64,
    /// Bucket capacity (default: max(1, rate)).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub burst: Option<f64>,
    /// `session` (one bucket per session, the default) or `global` (one shared bucket).
    #[serde(default)]
    pub scope: Scope,
    /// JSON-RPC error code of a rejected call (default -32000).
    #[serde(default)]
    pub code: Option<i64>,
    /// Error message (default "brownout: rate limit exceeded").
    #[serde(default)]
    pub message: Option<String>,
}

/// A token bucket's state.
#[derive(Debug, Clone, PartialEq)]
pub struct Bucket {
    tokens: f64,
    last: Time,
}

impl Bucket {
    pub fn full(capacity: f64, now: Time) -> Bucket {
        Bucket {
            tokens: capacity,
            last: now,
        }
    }

    /// Refill for the time since the last call, then take a token if there is one.
    /// `Err(wait)` is how long until the next token.
    pub fn take(&mut self, rate: f64, capacity: f64, now: Time) -> Result<(), Time> {
        let elapsed = now.saturating_sub(self.last).as_micros() as f64 / 1e6;
        self.tokens = (self.tokens + elapsed * rate).min(capacity);
        self.last = self.last.max(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else if rate > 0.0 {
            Err(Time(((1.0 - self.tokens) / rate * 1e6).ceil() as u64))
        } else {
            Err(Time(u64::MAX / 2))
        }
    }
}

impl RateLimit {
    pub fn capacity(&self) -> f64 {
        self.burst.unwrap_or(self.rate.max(1.0))
    }

    /// Spend a token from `bucket`; over the limit, answer in the server's place.
    pub fn apply(&self, c: &Ctx<'_>, bucket: &mut Bucket, s: &mut Shaping<'_>) -> Option<String> {
        let wait = bucket.take(self.rate, self.capacity(), c.now).err()?;
        let retry_after_ms = wait.as_micros().div_ceil(1000);
        let msg = self
            .message
            .as_deref()
            .unwrap_or("brownout: rate limit exceeded");
        let data = json!({"retry_after_ms": retry_after_ms});
        let reply = splice::error_response(c.id, self.code.unwrap_or(-32000), msg, Some(&data));
        // Over HTTP: 429 with Retry-After in whole seconds, at least 1.
        let retry_after_s = retry_after_ms.div_ceil(1000).max(1);
        s.http = Some(HttpAction::Status {
            code: 429,
            headers: vec![
                ("Retry-After".into(), retry_after_s.to_string()),
                ("Content-Type".into(), "application/json".into()),
            ],
            body: reply.clone(),
        });
        s.reply = Some(reply);
        Some(format!("rate limited (retry after {retry_after_ms}ms)"))
    }
}

pub const KIND: KindInfo = KindInfo::of::<RateLimit>(
    "rate_limit",
    "a token bucket per session or global; calls over it get an error",
    CALLS,
    Direction::ToServer,
    r#"{"rate": 0, "burst": 1}"#,
);

impl RateLimit {
    /// Spend a token from this fault's bucket (per session, or shared when global).
    fn limit(&self, c: &mut Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        let (capacity, now) = (self.capacity(), c.now);
        let mut bucket = c
            .state
            .get::<Option<Bucket>>()
            .take()
            .unwrap_or_else(|| Bucket::full(capacity, now));
        let out = self.apply(c, &mut bucket, s);
        *c.state.get::<Option<Bucket>>() = Some(bucket);
        out
    }
}

impl FaultKind for RateLimit {
    fn acts_on_request(&self, _direction: Direction) -> bool {
        true
    }

    fn acts_on_response(&self, _direction: Direction) -> bool {
        false
    }

    fn shared_state(&self) -> bool {
        self.scope == Scope::Global
    }

    fn act(&self, phase: Phase, c: &mut Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        match phase {
            Phase::Request => self.limit(c, s),
            Phase::Response => None,
        }
    }

    /// A call over the limit fails fast; one within it is not touched.
    fn simulate(&self, _direction: Direction, c: &mut Ctx<'_>, out: &mut SimulatedCall) -> bool {
        let limited = self.limit(c, &mut Shaping::new(b"")).is_some();
        if limited {
            out.worsen(SimOutcome::FailFast);
        }
        limited
    }

    /// Refused calls are answered at once (with `retry_after_ms` as advice).
    fn max_added_delay(&self) -> AddedDelay {
        AddedDelay::NONE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_allows_burst_then_rate() {
        let mut b = Bucket::full(3.0, Time::ZERO);
        let allowed = |b: &mut Bucket, t: u64| b.take(10.0, 3.0, Time(t)).is_ok();
        assert!(allowed(&mut b, 0) && allowed(&mut b, 0) && allowed(&mut b, 0));
        assert!(!allowed(&mut b, 0), "burst spent");
        assert!(!allowed(&mut b, 50_000), "half a token after 50ms");
        assert!(allowed(&mut b, 100_000), "one token after 100ms");
        // Over one simulated minute at 100 calls/s, about rate*60 + burst get through.
        let mut b = Bucket::full(3.0, Time::ZERO);
        let ok = (0..6000)
            .filter(|i| b.take(10.0, 3.0, Time(i * 10_000)).is_ok())
            .count();
        assert!((600..=604).contains(&ok), "{ok}");
    }

    #[test]
    fn wait_is_reported() {
        let mut b = Bucket::full(1.0, Time::ZERO);
        assert!(b.take(2.0, 1.0, Time::ZERO).is_ok());
        assert_eq!(b.take(2.0, 1.0, Time::ZERO), Err(Time(500_000)));
    }
}
