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
