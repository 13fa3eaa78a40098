//! `reorder`: hold the message behind the next one going the same way, so the receiver sees
//! them swapped. If nothing follows within `max_hold_ms` (default 1000), it is released.

use super::simulated::SimulatedCall;
use super::{AddedDelay, FaultKind, KindInfo, Phase, CALLS};
use super::{Ctx, Shaping};
use crate::select::Direction;
use crate::time::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct Reorder {
    /// Longest hold in milliseconds when no other message follows (default 1000).
    #[serde(default, deserialize_with = "crate::millis::opt")]
    #[schemars(schema_with = "crate::millis::opt_schema")]
    pub max_hold_ms: Option<f64>,
}

impl Reorder {
    pub fn apply(&self, _c: &Ctx<'_>, s: &mut Shaping<'_>) -> String {
        let ms = self.max_hold_ms.unwrap_or(1000.0);
        s.hold = Some(Time((ms * 1000.0) as u64));
        format!("held behind the next message (at most {ms}ms)")
    }
}

pub const KIND: KindInfo = KindInfo::of::<Reorder>(
    "reorder",
    "hold the message behind the next one",
    CALLS,
    Direction::ToClient,
    r#"{}"#,
);

impl FaultKind for Reorder {
    fn acts_on_loose_messages(&self) -> bool {
        true
    }

    fn act(&self, _phase: Phase, c: &mut Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        Some(self.apply(c, s))
    }

    /// Reordering does not change a call's outcome.
    fn simulate(&self, _direction: Direction, _c: &mut Ctx<'_>, _out: &mut SimulatedCall) -> bool {
        false
    }

    fn max_added_delay(&self) -> AddedDelay {
        AddedDelay::Bounded(self.max_hold_ms.unwrap_or(1000.0))
    }
}
