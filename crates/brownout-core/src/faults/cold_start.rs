//! `cold_start`: extra latency on the first call of each tool in a session, as when a
//! server loads a model, warms a cache or opens a connection pool on first use. Takes the
//! same delay keys as `latency`.

use super::latency::Latency;
use super::simulated::{self, SimulatedCall};
use super::{AddedDelay, FaultKind, Invalid, KindInfo, Phase, CALLS};
use super::{Ctx, Shaping};
use crate::select::Direction;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The tools a session has called (the state a `cold_start` fault keeps per session).
pub type SeenTools = std::collections::HashSet<String>;

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct ColdStart {
    #[serde(flatten)]
    pub delay: Latency,
}

impl ColdStart {
    /// Delays the request when this session has not called this tool before.
    pub fn apply(&self, c: &mut Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        let tool = c.tool.unwrap_or(c.method).to_string();
        if !c.state.get::<SeenTools>().insert(tool.clone()) {
            return None;
        }
        Some(format!("cold start of {tool}: {}", self.delay.apply(c, s)))
    }
}

pub const KIND: KindInfo = KindInfo::of::<ColdStart>(
    "cold_start",
    "extra latency on the first call of each tool in a session",
    CALLS,
    Direction::ToServer,
    r#"{"added_ms": 500}"#,
);

impl FaultKind for ColdStart {
    fn check(&self) -> Vec<Invalid> {
        self.delay
            .check()
            .into_iter()
            .map(|(k, m)| Invalid::value(k, m))
            .collect()
    }

    fn acts_on_request(&self, _direction: Direction) -> bool {
        true
    }

    fn acts_on_response(&self, _direction: Direction) -> bool {
        false
    }

    fn act(&self, phase: Phase, c: &mut Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        match phase {
            Phase::Request => self.apply(c, s),
            Phase::Response => None,
        }
    }

    fn simulate(&self, _direction: Direction, c: &mut Ctx<'_>, out: &mut SimulatedCall) -> bool {
        let tool = c.tool.unwrap_or(c.method).to_string();
        if !c.state.get::<SeenTools>().insert(tool) {
            return false;
        }
        out.request_delay = out.request_delay + simulated::delay(&self.delay, c);
        true
    }

    fn max_added_delay(&self) -> AddedDelay {
        self.delay.most_ms()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::KindState;
    use crate::rng::StreamKey;
    use crate::time::Time;

    #[test]
    fn only_the_first_call_of_a_tool_is_slow() {
        let cs: ColdStart =
            serde_json::from_value(serde_json::json!({"added_ms": 500})).expect("valid");
        let mut state = KindState::default();
        let mut delays = Vec::new();
        for (seq, tool) in ["a", "a", "b", "a", "b"].iter().enumerate() {
            let mut c = Ctx {
                key: StreamKey::new(1, 2, 3),
                seq: seq as u64,
                now: Time::ZERO,
                method: "tools/call",
                tool: Some(tool),
                id: None,
                tools: None,
                state: &mut state,
                schema: None,
            };
            let mut s = Shaping::new(b"{}");
            cs.apply(&mut c, &mut s);
            delays.push(s.delay.as_micros() / 1000);
        }
        assert_eq!(delays, vec![500, 0, 500, 0, 0]);
    }
}
