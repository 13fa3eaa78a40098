//! SLO gates: predicates over sliding windows of the SLIs brownout keeps, such as
//! `error_rate < 1% over 10s` or `p95 <= 1.5s over 500 calls min 50 calls for 3s`.
//!
//! Pure and deterministic: a driver (the simulator in virtual time, the experiment runner
//! on the run clock) shows a [`GateWatch`] every completed call and task and asks it to
//! [`evaluate`](GateWatch::evaluate) at times of its choosing; the same observations and
//! times give the same states. Windows slide — the last 10 s, the last 200 calls — and are
//! never cumulative from the start of a run. The grammar and every SLI's definition are in
//! `docs/gates.md`.

mod grammar;
mod guard;
mod hist;
mod lex;
mod measure;
mod parse;
#[cfg(test)]
mod proptests;
pub mod robustness;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tick_tests;
pub mod tolerance;
mod watch;
mod window;

pub use grammar::{
    Gate, GateError, Scope, Window, DEFAULT_MIN_SAMPLES, MAX_COUNT_WINDOW, MAX_SPAN_MS,
};
pub use measure::{Cmp, Kind, Sli, SLI_NAMES};
pub use watch::{CallScope, GateWatch};

use crate::event::Outcome;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;

/// A completed call, as a gate sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct CallObservation {
    /// When the call completed (or was given up on), in run-clock milliseconds.
    pub at_ms: f64,
    pub method: String,
    pub tool: Option<String>,
    pub outcome: Outcome,
    pub latency_ms: f64,
    /// Answered correctly: `ok`, schema-valid, not drifted or truncated by a fault.
    pub correct: bool,
    /// The client gave up waiting (counts as not answered whatever `outcome` says).
    pub timed_out: bool,
    /// Attempts made for this logical call (retries included; 0 is read as 1).
    pub attempts: u32,
}

/// What became of a result a fault changed, as a silent-failure gate counts it
/// (docs/silent.md): the result itself, then at most one of propagated or noticed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaintMark {
    /// A fault changed a delivered result.
    Altered,
    /// A later request of the agent carried a value the fault introduced: a silent failure.
    Propagated,
    /// The agent re-fetched it or gave up on the task: a safe failure.
    Noticed,
}

/// A finished task.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TaskObservation {
    pub at_ms: f64,
    pub ok: bool,
}

/// Where a gate stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GateStatus {
    /// The condition holds over the window.
    Holding,
    /// The window holds fewer samples than the gate's minimum (or none to divide by):
    /// the gate cannot trip.
    Insufficient,
    /// The condition fails, but not yet for the gate's `for` duration.
    Failing,
    /// The condition fails (for at least the `for` duration): the SLO is broken.
    Breached,
}

/// One gate's evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct GateState {
    /// The gate's position in the list the watch was built from.
    pub index: usize,
    /// The gate's canonical text.
    pub gate: String,
    /// The SLI over the window (a fraction for ratios, milliseconds for latencies);
    /// `null` when the window has nothing to measure.
    pub value: Option<f64>,
    /// The limit, in the same unit.
    pub limit: f64,
    /// Calls (tasks for task SLIs) in the window.
    pub samples: u64,
    pub status: GateStatus,
    /// The status differs from the previous evaluation's.
    pub changed: bool,
    /// When the current status began (run-clock milliseconds).
    pub since_ms: f64,
}

/// One gate over a whole run.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct GateSummary {
    pub index: usize,
    pub gate: String,
    pub limit: f64,
    /// It breached at least once.
    pub breached: bool,
    /// The first evaluation that found it breached.
    pub first_breach_ms: Option<f64>,
    /// The window's value at that evaluation.
    pub breach_value: Option<f64>,
    /// The value furthest on the failing side among evaluations with enough samples.
    pub worst: Option<f64>,
    /// The gate's robustness: its margin at `worst`, normalised (> 0 held with room, < 0
    /// breached; see `slo::robustness`).
    pub robustness: Option<f64>,
    /// Times it went into `breached`.
    pub breaches: u64,
    /// Its status at the last evaluation.
    pub status: GateStatus,
}

impl std::str::FromStr for Gate {
    type Err = GateError;
    fn from_str(s: &str) -> Result<Gate, GateError> {
        Gate::parse(s)
    }
}

impl Serialize for Gate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Gate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Gate, D::Error> {
        let text = Cow::<str>::deserialize(d)?;
        Gate::parse(&text).map_err(|e| serde::de::Error::custom(format!("gate `{text}`: {e}")))
    }
}

impl JsonSchema for Gate {
    fn schema_name() -> Cow<'static, str> {
        "Gate".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "minLength": 1,
            "description": "An SLO gate: SLI[{tool=\"GLOB\", method=\"GLOB\"}] CMP VALUE over (DURATION | N calls) [min N calls] [for DURATION]. SLIs: error_rate, availability, correctness, eta, tcsr, timeouts, amplification, mean, max, pNN (p50, p99, p999), task_success, blast_radius. See docs/gates.md.",
            "examples": [
                "error_rate < 1% over 10s",
                "p99 < 800ms over 10s",
                "eta{tool=\"get_incident\"} >= 99% over 20s",
                "p95 <= 1.5s over 500 calls min 50 calls for 3s"
            ],
        })
    }
}
