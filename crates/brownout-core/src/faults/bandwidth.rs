//! `bandwidth`: throttle the answer to N bytes per second, as a saturated link would: the
//! HTTP relay sends the body or SSE stream in slices at that rate. HTTP only; on stdio it
//! has no effect (use `latency` there).

use super::{Ctx, Shaping};
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
