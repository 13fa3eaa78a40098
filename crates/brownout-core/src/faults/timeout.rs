//! `timeout`: withhold the response. With no `hold_ms` it never arrives (the client's own
//! timeout must fire); with `hold_ms` it is held that long and then dropped (`then: drop`,
//! the default) or delivered late (`then: deliver`).

use super::simulated::{SimOutcome, SimulatedCall};
use super::{AddedDelay, FaultKind, KindInfo, Phase, CALLS};
use super::{Ctx, Shaping};
use crate::select::Direction;
use crate::time::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Then {
    #[default]
    Drop,
    Deliver,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct Timeout {
    /// How long to hold the message, in milliseconds (absent: forever).
    #[serde(default, deserialize_with = "crate::millis::opt")]
    #[schemars(schema_with = "crate::millis::opt_schema")]
    pub hold_ms: Option<f64>,
    /// After `hold_ms`: `drop` (default) or `deliver` late.
    #[serde(default)]
    pub then: Then,
}

impl Timeout {
    pub fn apply(&self, _c: &Ctx<'_>, s: &mut Shaping<'_>) -> String {
        match (self.hold_ms, self.then) {
            (Some(ms), Then::Deliver) => {
                s.delay = s.delay + Time((ms * 1000.0) as u64);
                format!("held {ms}ms, then delivered late")
            }
            (Some(ms), Then::Drop) => {
                // Held first: the relay keeps the way open that long, and the call's
                // latency says how long the client waited for nothing.
                s.delay = s.delay + Time((ms * 1000.0) as u64);
                s.drop = true;
                format!("held {ms}ms, then dropped")
            }
            (None, _) => {
                s.drop = true;
                "withheld forever".to_string()
            }
        }
    }
}

pub const KIND: KindInfo = KindInfo::of::<Timeout>(
    "timeout",
    "withhold the response forever, or for a while then drop or deliver it",
    CALLS,
    Direction::ToClient,
    r#"{}"#,
);

impl FaultKind for Timeout {
    fn act(&self, _phase: Phase, c: &mut Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        Some(self.apply(c, s))
    }

    fn simulate(&self, _direction: Direction, _c: &mut Ctx<'_>, out: &mut SimulatedCall) -> bool {
        match (self.hold_ms, self.then) {
            (Some(ms), Then::Deliver) => {
                out.response_delay = out.response_delay + Time((ms * 1000.0) as u64)
            }
            _ => out.worsen(SimOutcome::NoAnswer),
        }
        true
    }

    /// A hold delays the answer (delivered or dropped after it); without `hold_ms` the
    /// answer never comes, a failure the client's own timeout sees, not a delay.
    fn max_added_delay(&self) -> AddedDelay {
        AddedDelay::Bounded(self.hold_ms.unwrap_or(0.0))
    }
}
