//! The runner's view of SLO gates: `brownout_core::slo` (the grammar and the sliding
//! windows, shared with the simulator), plus the few questions the runner asks of them.

pub use brownout_core::slo::{
    CallObservation, Gate as ParsedGate, GateState as GateView, GateStatus, GateWatch as Watch,
    TaskObservation,
};

/// Parse one gate (`error_rate < 1% over 10s`); the error says what is wrong.
pub fn parse(text: &str) -> Result<ParsedGate, String> {
    ParsedGate::parse(text).map_err(|e| format!("{e} (see docs/gates.md)"))
}

/// Whether a gate compares a measured SLI with a number: every gate of the grammar does.
pub fn is_numeric(g: &ParsedGate) -> bool {
    g.limit().is_finite()
}

/// SLIs that see what an agent did with a changed result (docs/silent.md).
fn sees_silent(g: &ParsedGate) -> bool {
    use brownout_core::slo::Sli;
    matches!(g.sli, Sli::SilentRate | Sli::SafeRate | Sli::Propagated)
}

/// When the plan changes results (`corrupt`, `schema_drift`, `partial_result`, a stale
/// registry) but no gate can see what the agent did with them: the run would pass green
/// with every changed result acted on. Says which faults and the gate to add. A drifted
/// result breaks the schema, so `correctness` (or `eta`, `tcsr`) sees a `schema_drift`
/// fault; the valid-but-wrong kinds need `silent_rate`, `safe_rate` or `propagated`.
pub fn silent_blind_spot(plan: &brownout_core::Plan, gates: &[ParsedGate]) -> Option<String> {
    use brownout_core::slo::Sli;
    let sees_drift = gates
        .iter()
        .any(|g| matches!(g.sli, Sli::Correctness | Sli::Eta | Sli::Tcsr));
    if gates.iter().any(sees_silent) {
        return None;
    }
    let blind: Vec<String> = plan
        .faults
        .iter()
        .filter(|f| f.effect.alters_result())
        .filter(|f| !(sees_drift && f.effect.breaks_output_schema()))
        .map(|f| format!("`{}` ({})", f.id, f.effect.kind()))
        .collect();
    (!blind.is_empty()).then(|| {
        format!(
            "{} change results, but no gate sees what the agent does with them: the run can pass with every wrong result acted on; add e.g. `silent_rate < 1% over 30s` (docs/silent.md)",
            blind.join(", ")
        )
    })
}

/// Whether any gate is breached.
pub fn any_breached(states: &[GateView]) -> Option<&GateView> {
    states.iter().find(|s| s.status == GateStatus::Breached)
}

/// Whether no gate is failing or breached (too few samples counts as holding).
pub fn all_hold(states: &[GateView]) -> bool {
    states
        .iter()
        .all(|s| matches!(s.status, GateStatus::Holding | GateStatus::Insufficient))
}
