//! The plan as written: the keys every fault shares (head and selectors) and the plan's
//! top level. Each fault kind's own keys live beside its logic in `faults/<kind>.rs`.
//!
//! These types derive `JsonSchema`; `brownout plan schema` prints the schema built from them
//! and the validator checks every plan against the same schema, so the reference and the
//! checks cannot disagree.
//!
//! A module of its own beside [`crate::plan`] (which re-exports it as `plan::spec`): the
//! selectors and the fault kinds read these shapes, and the plan compiles them with the
//! kinds and selectors, so the shapes sit below all three.

use crate::time::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Keys that name and switch a fault.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
pub struct HeadSpec {
    /// Stable identifier, used in events, metrics and the admin API. Defaults to
    /// `<kind>-<hash>`, a hash of the fault's own keys, so other faults never rename it
    /// (identical unnamed faults get `-2`, `-3`, … in plan order).
    #[serde(default)]
    pub id: Option<String>,
    /// The fault kind (`type` is accepted as an alias, as in mcp-chaos plans).
    pub kind: String,
    /// Free text for people reading the plan.
    #[serde(default)]
    pub description: Option<String>,
    /// Set to false to keep a fault in the plan without applying it.
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// Which way a message travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DirectionSpec {
    ToServer,
    ToClient,
}

/// An argument condition: a literal value to equal, or `{regex: "..."}`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ArgMatcher {
    /// The value (as a string) must match this regular expression.
    Regex { regex: String },
    /// The value must equal this JSON value.
    Equals(serde_json::Value),
}

/// A span of run time: seconds as a number, or a string with a unit
/// (`"500ms"`, `"30s"`, `"2m"`, `"1h"`) or a percentage of the plan's `duration` (`"25%"`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Span {
    Seconds(#[schemars(range(min = 0))] f64),
    Text(
        #[schemars(regex(pattern = r"^\s*[0-9]+(\.[0-9]+)?\s*(ms|s|m|h|%)\s*$"))]
        #[schemars(extend("examples" = ["500ms", "30s", "2m", "1h", "25%"]))]
        String,
    ),
}

impl Span {
    /// The span as run time; `None` for a percentage without a run duration.
    pub fn resolve(&self, run: Option<Time>) -> Option<Time> {
        match self {
            Span::Seconds(s) => Some(Time::from_secs_f64(*s)),
            Span::Text(t) => {
                if let Some(pct) = t.trim().strip_suffix('%') {
                    let n: f64 = pct.trim().parse().ok()?;
                    return run.map(|r| Time((r.0 as f64 * n / 100.0) as u64));
                }
                Some(Time::from_secs_f64(
                    crate::duration::parse_millis(t)? / 1000.0,
                ))
            }
        }
    }
}

/// When a fault is active, in run time.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WindowSpec {
    /// When the window opens (default: at once).
    #[serde(default)]
    pub start: Option<Span>,
    /// How long it stays open (default: until the end of the run).
    #[serde(default)]
    pub duration: Option<Span>,
}

/// How injections cluster, keeping the long-run rate equal to `probability`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CorrelationSpec {
    /// `burst`: a two-state Markov chain over a session's calls (Gilbert model).
    /// `episodes`: time is cut into episodes; some are degraded, the rest are clean.
    pub mode: CorrelationMode,
    /// burst: mean number of consecutive calls in a bad run (default 5).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub mean_burst_calls: Option<f64>,
    /// episodes: length of one episode in milliseconds (default 10000).
    #[serde(default, deserialize_with = "crate::millis::opt")]
    #[schemars(schema_with = "crate::millis::opt_schema")]
    pub episode_ms: Option<f64>,
    /// episodes: injection probability inside a degraded episode (default 0.5; must be at
    /// least `probability`).
    #[serde(default)]
    #[schemars(range(min = 0, max = 1))]
    pub intensity: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CorrelationMode {
    Burst,
    Episodes,
}

/// Where a fault applies. Every fault kind accepts these keys beside its own.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct SelectorSpec {
    /// Which messages the fault acts on: `to_server` (requests, client notifications) or
    /// `to_client` (responses, server notifications and requests).
    /// Each kind has a natural default (see docs/plans.md).
    #[serde(default)]
    pub direction: Option<DirectionSpec>,
    /// JSON-RPC method globs (default for most kinds: `["tools/call"]`; `"*"` for all).
    #[serde(default)]
    pub methods: Option<Vec<String>>,
    /// Tool name globs, matched against `params.name` of `tools/call`.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Server name globs: with several servers behind one relay (an experiment's
    /// `target.servers`), only calls to these servers. A relay in front of one server
    /// matches none of them.
    #[serde(default)]
    pub servers: Option<Vec<String>>,
    /// Conditions on `params.arguments`: JSON pointer (or a top-level name) → a value to
    /// equal, or `{regex: "..."}`. All must hold.
    #[serde(default)]
    pub arguments: Option<BTreeMap<String, ArgMatcher>>,
    /// Chance that a matching call is hit (default 1).
    #[serde(default)]
    #[schemars(range(min = 0, max = 1))]
    pub probability: Option<f64>,
    /// Fraction of sessions in the blast radius: a stable, seed-determined subset.
    #[serde(default)]
    #[schemars(range(min = 0, max = 1))]
    pub sessions: Option<f64>,
    /// Skip the first N matching calls of each session.
    #[serde(default)]
    pub after_calls: Option<u64>,
    /// Only every Nth matching call (after `after_calls`) is a candidate.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub every_nth: Option<u64>,
    /// At most N injections per session.
    #[serde(default)]
    pub max_injections: Option<u64>,
    /// Only inside this window of run time.
    #[serde(default)]
    pub window: Option<WindowSpec>,
    /// Cluster injections into bursts or episodes at the same long-run rate.
    #[serde(default)]
    pub correlation: Option<CorrelationSpec>,
}

/// The top level of a plan file.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanSpec {
    /// Seed of every random decision; the same seed replays the same decisions.
    #[serde(default)]
    pub seed: Option<u64>,
    /// A name for reports.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// Planned length of a run; needed by percentage windows.
    #[serde(default)]
    pub duration: Option<Span>,
    /// The faults, applied in this order. Required: a plan with no faults says `faults: []`,
    /// so an empty or half-written file is an error, not a plan that injects nothing.
    pub faults: Vec<serde_json::Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_resolve() {
        assert_eq!(Span::Seconds(1.5).resolve(None), Some(Time(1_500_000)));
        assert_eq!(
            Span::Text("250ms".into()).resolve(None),
            Some(Time(250_000))
        );
        assert_eq!(
            Span::Text("2m".into()).resolve(None),
            Some(Time(120_000_000))
        );
        assert_eq!(Span::Text("50%".into()).resolve(None), None);
        assert_eq!(
            Span::Text("50%".into()).resolve(Some(Time(10))),
            Some(Time(5))
        );
    }
}
