//! `bandwidth`: throttle the answer to N bytes per second, as a saturated link would: the
//! HTTP relay sends the body or SSE stream in slices at that rate. HTTP only; on stdio it
//! has no effect (use `latency` there).

use super::simulated::SimulatedCall;
use super::{AddedDelay, FaultKind, KindInfo, Phase, CALLS};
use super::{Ctx, Shaping};
use crate::capability::{Capability, Need};
use crate::select::Direction;
use crate::verdict::StreamShape;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
pub struct Bandwidth {
    /// Bytes per second.
    #[schemars(range(min = 1))]
    pub bytes_per_sec: u64,
}

impl Bandwidth {
    pub fn apply(&self, _c: &Ctx<'_>, s: &mut Shaping<'_>) -> String {
        s.merge_stream(&StreamShape {
            bytes_per_sec: Some(self.bytes_per_sec.max(1)),
            ..StreamShape::default()
        });
        format!("throttled to {} B/s", self.bytes_per_sec)
    }
}

pub const KIND: KindInfo = KindInfo::of::<Bandwidth>(
    "bandwidth",
    "throttle the answer to N bytes per second (HTTP)",
    CALLS,
    Direction::ToServer,
    r#"{"bytes_per_sec": 1024}"#,
);

impl FaultKind for Bandwidth {
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

    /// Bandwidth acts on real bytes: the simulator does not model it.
    fn simulate(&self, _direction: Direction, _c: &mut Ctx<'_>, _out: &mut SimulatedCall) -> bool {
        false
    }

    fn max_added_delay(&self) -> AddedDelay {
        AddedDelay::PerKib(1024.0 * 1000.0 / self.bytes_per_sec.max(1) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::KindState;
    use crate::rng::StreamKey;
    use crate::time::Time;

    #[test]
    fn the_rate_shapes_the_stream_and_nothing_else() {
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
        let f: Bandwidth =
            serde_json::from_value(serde_json::json!({"bytes_per_sec": 2048})).expect("valid");
        let mut s = Shaping::new(b"{}");
        f.apply(&c, &mut s);
        let shape = s.stream.clone().expect("a shape");
        assert_eq!(shape.bytes_per_sec, Some(2048));
        assert_eq!(shape.event_gap, Time::ZERO);
        assert!(s.forwards() && s.delay == Time::ZERO && s.http.is_none());
        assert!(
            serde_json::from_value::<Bandwidth>(serde_json::json!({})).is_err(),
            "bytes_per_sec is required"
        );
    }
}
