//! `duplicate`: deliver the message more than once (`copies` extra copies, `gap_ms` apart),
//! as an at-least-once network or a retrying gateway would.

use super::simulated::SimulatedCall;
use super::{AddedDelay, FaultKind, KindInfo, Phase, CALLS};
use super::{Ctx, Shaping};
use crate::capability::{Capability, Need};
use crate::select::Direction;
use crate::time::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct Duplicate {
    /// Extra copies to deliver (default 1).
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    pub copies: Option<u32>,
    /// Milliseconds between copies (default 0).
    #[serde(default, deserialize_with = "crate::millis::opt")]
    #[schemars(schema_with = "crate::millis::opt_schema")]
    pub gap_ms: Option<f64>,
}

impl Duplicate {
    pub fn apply(&self, _c: &Ctx<'_>, s: &mut Shaping<'_>) -> String {
        let n = self.copies.unwrap_or(1);
        s.duplicates += n;
        s.duplicate_gap = Time((self.gap_ms.unwrap_or(0.0) * 1000.0) as u64);
        format!("{n} extra cop{}", if n == 1 { "y" } else { "ies" })
    }
}

pub const KIND: KindInfo = KindInfo::of::<Duplicate>(
    "duplicate",
    "deliver the message more than once",
    CALLS,
    Direction::ToClient,
    r#"{}"#,
);

impl FaultKind for Duplicate {
    fn acts_on_loose_messages(&self) -> bool {
        true
    }

    fn needs(&self, direction: Direction) -> Vec<Need> {
        vec![Need::whole(if direction == Direction::ToClient {
            Capability::MultipleAnswers
        } else {
            Capability::MultipleRequests
        })]
    }

    fn act(&self, _phase: Phase, c: &mut Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        Some(self.apply(c, s))
    }

    /// Duplicates do not change a call's outcome.
    fn simulate(&self, _direction: Direction, _c: &mut Ctx<'_>, _out: &mut SimulatedCall) -> bool {
        false
    }

    /// The original passes at once; only the extra copies wait `gap_ms`.
    fn max_added_delay(&self) -> AddedDelay {
        AddedDelay::NONE
    }
}
