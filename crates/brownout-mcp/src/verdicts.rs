//! brownout's own findings as JSON, one shape wherever they are shown (the MCP server's
//! `validate_*` and `start_*` tools, and `design_experiments`' drafts): a plan's errors with
//! their positions, and the policy's verdict on an experiment.

use brownout_core::plan::PlanErrors;
use serde_json::{json, Value};

/// Each error of a plan (or experiment) file: line, column, key, message.
pub fn errors_json(e: &PlanErrors) -> Vec<Value> {
    e.errors
        .iter()
        .map(|x| json!({"line": x.pos.line, "column": x.pos.column, "key": x.key, "message": x.message}))
        .collect()
}

/// The policy's verdict on an experiment, as `policy_check` shows it.
pub fn verdict_json(v: Result<(), brownout_experiment::experiment::Refusal>) -> Value {
    match v {
        Ok(()) => json!({"allowed": true}),
        Err(r) => json!({"allowed": false, "rule": r.rule, "detail": r.detail}),
    }
}
