//! `cold_start`: extra latency on the first call of each tool in a session, as when a
//! server loads a model, warms a cache or opens a connection pool on first use. Takes the
//! same delay keys as `latency`.

use super::latency::Latency;
use super::{Ctx, Shaping};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct ColdStart {
    #[serde(flatten)]
    pub delay: Latency,
}

impl ColdStart {
    /// Delays the request when this session has not called this tool before.
    pub fn apply(&self, c: &mut Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        let tool = c.tool.unwrap_or(c.method).to_string();
        if !c.state.seen_tools.insert(tool.clone()) {
            return None;
        }
        Some(format!("cold start of {tool}: {}", self.delay.apply(c, s)))
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
                state: &mut state,
            };
            let mut s = Shaping::new(b"{}");
            cs.apply(&mut c, &mut s);
            delays.push(s.delay.as_micros() / 1000);
        }
        assert_eq!(delays, vec![500, 0, 500, 0, 0]);
    }
}
