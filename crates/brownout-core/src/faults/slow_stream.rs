//! `slow_stream`: wait between the SSE events of an answer (and before a JSON body), as a
//! congested gateway or a slow server flushing its stream would. HTTP only; no effect on
//! stdio.

use super::simulated::SimulatedCall;
use super::{AddedDelay, FaultKind, KindInfo, Phase, CALLS};
use super::{Ctx, Shaping};
use crate::capability::{Capability, Need};
use crate::select::Direction;
use crate::time::Time;
use crate::verdict::StreamShape;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
pub struct SlowStream {
    /// Milliseconds to wait before each event (default 100).
    #[serde(default = "default_gap", deserialize_with = "crate::millis::req")]
    #[schemars(schema_with = "crate::millis::schema")]
    pub gap_ms: f64,
}

fn default_gap() -> f64 {
    100.0
}

impl SlowStream {
    pub fn apply(&self, _c: &Ctx<'_>, s: &mut Shaping<'_>) -> String {
        s.merge_stream(&StreamShape {
            event_gap: Time((self.gap_ms.max(0.0) * 1000.0) as u64),
            ..StreamShape::default()
        });
        format!("{}ms between events", self.gap_ms)
    }
}

pub const KIND: KindInfo = KindInfo::of::<SlowStream>(
    "slow_stream",
    "wait between the SSE events of an answer (HTTP)",
    CALLS,
    Direction::ToServer,
    r#"{}"#,
);

impl FaultKind for SlowStream {
    fn acts_on_request(&self, _direction: Direction) -> bool {
        true
    }

    fn acts_on_response(&self, _direction: Direction) -> bool {
        false
    }

    fn needs(&self, _direction: Direction) -> Vec<Need> {
        vec![Need::whole(Capability::ShapeStreams)]
    }

    fn act(&self, phase: Phase, c: &mut Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        match phase {
            Phase::Request => Some(self.apply(c, s)),
            Phase::Response => None,
        }
    }

    fn simulate(&self, _direction: Direction, _c: &mut Ctx<'_>, out: &mut SimulatedCall) -> bool {
        out.response_delay = out.response_delay + Time((self.gap_ms.max(0.0) * 1000.0) as u64);
        true
    }

    fn max_added_delay(&self) -> AddedDelay {
        AddedDelay::PerEvent(self.gap_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::KindState;
    use crate::rng::StreamKey;

    #[test]
    fn the_gap_shapes_the_stream_and_nothing_else() {
        let mut state = KindState::default();
        let c = Ctx {
            key: StreamKey::new(1, 2, 3),
            seq: 0,
            now: Time::ZERO,
            method: "tools/call",
            tool: Some("x"),
            id: None,
            tools: None,
            state: &mut state,
            schema: None,
        };
        let f: SlowStream = serde_json::from_value(serde_json::json!({})).expect("defaults");
        let mut s = Shaping::new(b"{}");
        f.apply(&c, &mut s);
        assert_eq!(
            s.stream.as_ref().map(|k| k.event_gap),
            Some(Time::from_millis(100))
        );
        let f: SlowStream =
            serde_json::from_value(serde_json::json!({"gap_ms": 2.5})).expect("valid");
        let mut s = Shaping::new(b"{}");
        f.apply(&c, &mut s);
        assert_eq!(s.stream.as_ref().map(|k| k.event_gap), Some(Time(2500)));
        // Stdio: the message itself is untouched.
        assert!(s.forwards() && s.delay == Time::ZERO && s.http.is_none());
    }
}
