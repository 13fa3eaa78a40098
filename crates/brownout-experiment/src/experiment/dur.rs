//! A duration as an experiment or policy file writes it (`"500ms"`, `"30s"`, `"2m"`), on
//! its own so the target's parts (fleet_spec.rs) and the experiment (spec.rs) share it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A duration: `"500ms"`, `"30s"`, `"2m"`, `"1h"`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct Dur(
    #[schemars(regex(pattern = r"^\s*[0-9]+(\.[0-9]+)?\s*(ms|s|m|h)\s*$"))]
    #[schemars(extend("examples" = ["500ms", "30s", "2m"]))]
    pub String,
);

impl Dur {
    /// The duration (the schema has checked the syntax; a bad one reads as zero).
    pub fn get(&self) -> Duration {
        parse_duration(&self.0).unwrap_or_default()
    }
}

/// `"30s"` → 30 s (a unit written, at most a year: `brownout_core::duration::Rules::KEY`);
/// `None` for anything else.
pub fn parse_duration(s: &str) -> Option<Duration> {
    brownout_core::duration::parse(s, brownout_core::duration::Rules::KEY).ok()
}
