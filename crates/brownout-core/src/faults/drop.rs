//! `drop`: the message vanishes. On a response the client waits for an answer that never
//! comes; on a request (`direction: to_server`) the server never sees the call.

use super::simulated::{SimOutcome, SimulatedCall};
use super::{AddedDelay, FaultKind, KindInfo, Phase, CALLS};
use super::{Ctx, Shaping};
use crate::select::Direction;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct Drop {}

impl Drop {
    pub fn apply(&self, _c: &Ctx<'_>, s: &mut Shaping<'_>) -> String {
        s.drop = true;
        "dropped".to_string()
    }
}

pub const KIND: KindInfo = KindInfo::of::<Drop>(
    "drop",
    "drop the message",
    CALLS,
    Direction::ToClient,
    r#"{}"#,
);

impl FaultKind for Drop {
    fn acts_on_loose_messages(&self) -> bool {
        true
    }

    fn act(&self, _phase: Phase, c: &mut Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        Some(self.apply(c, s))
    }

    fn simulate(&self, _direction: Direction, _c: &mut Ctx<'_>, out: &mut SimulatedCall) -> bool {
        out.worsen(SimOutcome::NoAnswer);
        true
    }

    fn max_added_delay(&self) -> AddedDelay {
        AddedDelay::NONE
    }
}
