//! What the load observes per call and per task. Temporary: these are
//! `brownout_core::slo`'s types, defined here until that module lands.

use brownout_core::event::Outcome;

/// One logical call, as the client saw it after its retries.
#[derive(Debug, Clone, PartialEq)]
pub struct CallObservation {
    /// When it ended, in milliseconds since the load started.
    pub at_ms: f64,
    pub method: String,
    pub tool: Option<String>,
    pub outcome: Outcome,
    /// From the call's intended start to its end, retries and backoff included.
    pub latency_ms: f64,
    /// An `ok` answer that is right (not an error, valid against the tool's `outputSchema`).
    pub correct: bool,
    /// Its last attempt timed out.
    pub timed_out: bool,
    /// Attempts made (0 when the client refused it before any went out).
    pub attempts: u32,
}

/// One task: all its steps, ok or failed.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskObservation {
    /// When it ended, in milliseconds since the load started.
    pub at_ms: f64,
    pub ok: bool,
}
