//! `slow_stream`: wait between the SSE events of an answer (and before a JSON body), as a
//! congested gateway or a slow server flushing its stream would. HTTP only; no effect on
//! stdio.

use super::{Ctx, Shaping};
use crate::time::Time;
use crate::verdict::StreamShape;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
pub struct SlowStream {
    /// Milliseconds to wait before each event (default 100).
    #[serde(default = "default_gap")]
    #[schemars(range(min = 0))]
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
