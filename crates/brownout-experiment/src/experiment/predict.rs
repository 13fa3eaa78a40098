//! Estimate before, actual after: once the baseline has run, the runner calibrates the
//! simulator from the baseline's calls ([`crate::calibrate::fit`]) and simulates each stage —
//! the experiment's workload on the calibrated server, the stage's plan and seed, the gates —
//! before running it. The journal keeps, per stage, the prediction and, after the stage, its
//! error against what happened. A prediction that cannot be made never fails the run: the
//! journal says why it is missing.

use super::journal::{Slis, StageRecord};
use super::load::Loaded;
pub use super::records::{Calibration, PredictedGate, Prediction, PredictionError};
use crate::calibrate::fit::{fit, servers_json, Fit};
use brownout_core::slo::CallObservation;
use brownout_sim::{simulate, SimOptions, Workload};
use std::collections::BTreeMap;

impl PredictionError {
    /// The one definition of a right prediction: the verdict matched *and* the error rate
    /// was near (a prediction of 99.54 % against 7.77 % is not right, whatever the gates).
    pub fn right(&self) -> bool {
        self.verdict_right && self.error_rate_right
    }
}

/// Whether a predicted error rate is near the actual one: within 2 percentage points, or
/// within a factor of 1.5 of each other (both fractions, 0..=1).
pub fn rates_agree(predicted: f64, actual: f64) -> bool {
    let (lo, hi) = (predicted.min(actual), predicted.max(actual));
    hi - lo <= 0.02 || hi <= 1.5 * lo
}

/// The calibrated model and one prediction per stage (`None` where none could be made).
/// `routes`: with several servers, which server has each tool (the model keeps them apart,
/// so a fault that picks servers picks the same ones in the simulator).
pub fn before_stages(
    x: &Loaded,
    calls: &[CallObservation],
    tasks: u64,
    baseline_s: f64,
    routes: &BTreeMap<String, String>,
) -> (Calibration, Vec<Option<Prediction>>) {
    let tools = calls
        .iter()
        .filter(|c| c.method == "tools/call" || c.tool.is_some())
        .cloned()
        .collect::<Vec<_>>();
    let tasks_per_s = tasks as f64 / baseline_s.max(1e-3);
    let mut cal = Calibration {
        calls: tools.len() as u64,
        tasks_per_s,
        concurrency: 0,
        tools: serde_json::Value::Null,
        note: None,
    };
    if tools.len() < 20 || tasks == 0 {
        cal.note = Some(format!(
            "the baseline had {} call(s) and {tasks} task(s): too few to calibrate the simulator",
            tools.len()
        ));
        return (cal, vec![None; x.spec.method.len()]);
    }
    let f = fit(&tools);
    cal.concurrency = f.concurrency;
    cal.tools = serde_json::to_value(&f.tools).unwrap_or_default();
    let w = match calibrated(&x.workload, &f, routes) {
        Ok(w) => w,
        Err(e) => {
            cal.note = Some(format!("the calibrated workload does not load: {e}"));
            return (cal, vec![None; x.spec.method.len()]);
        }
    };
    let preds = x
        .spec
        .method
        .iter()
        .map(|st| {
            let share = st.sessions.fraction()?;
            let (doc, mut plan) = x.stage_plan(share).ok()?;
            plan.seed = x.plan.seed;
            let stage_s = st.duration.get().as_secs_f64();
            let n = (tasks_per_s * stage_s).round().max(1.0) as u64;
            let opts = |tasks: u64, gates: bool| SimOptions {
                tasks: Some(tasks),
                seed: Some(x.plan.seed),
                keep_series: false,
                gates: if gates { x.gates.clone() } else { Vec::new() },
                stop_at_breach: false,
                sessions: Some(u64::from(x.spec.load.sessions.unwrap_or(16))),
                budget: Default::default(),
            };
            // The stage's SLIs: the stage alone.
            let r = simulate(&w, plan, &opts(n, false));
            // Its gates: as live, the windows start full of the fault-free calls before the
            // stage (a baseline's worth), not empty (a few calls would make a noisy window).
            let lead_s = baseline_s.max(gate_span_s(x));
            let (_, gated) = warmed(&doc, &x.file, lead_s)?;
            let mut gated = gated;
            gated.seed = x.plan.seed;
            let lead = (tasks_per_s * lead_s).round() as u64;
            let g = simulate(&w, gated, &opts(n + lead, true));
            let errors = r
                .calls
                .saturating_sub((r.availability * r.calls as f64).round() as u64);
            let gates: Vec<PredictedGate> = g
                .gates
                .iter()
                .map(|g| PredictedGate {
                    gate: g.gate.clone(),
                    breached: g.breached,
                    worst: g.worst,
                })
                .collect();
            Some(Prediction {
                slis: Slis {
                    calls: r.calls,
                    errors,
                    error_rate: 1.0 - r.availability,
                    p50_ms: Some(r.latency_ms.p50),
                    p95_ms: Some(r.latency_ms.p95),
                    p99_ms: Some(r.latency_ms.p99),
                },
                verdict: if gates.iter().any(|g| g.breached) {
                    "breaches"
                } else {
                    "holds"
                }
                .into(),
                gates,
                robustness: g.robustness,
                error: None,
            })
        })
        .collect();
    (cal, preds)
}

/// The longest gate window in seconds (count windows: none).
fn gate_span_s(x: &Loaded) -> f64 {
    x.gates
        .iter()
        .filter_map(|g| match g.window {
            brownout_core::slo::Window::Time { ms } => Some(ms / 1000.0),
            _ => None,
        })
        .fold(0.0, f64::max)
}

/// The stage's plan with its faults starting after `lead_s` seconds of fault-free calls
/// (faults with a `window` of their own keep it).
fn warmed(
    doc: &serde_json::Value,
    file: &str,
    lead_s: f64,
) -> Option<(serde_json::Value, brownout_core::Plan)> {
    let mut doc = doc.clone();
    for f in doc.get_mut("faults")?.as_array_mut()?.iter_mut() {
        if let Some(o) = f.as_object_mut() {
            o.entry("window").or_insert_with(
                || serde_json::json!({"start": format!("{}ms", (lead_s * 1000.0).round())}),
            );
        }
    }
    let plan = brownout_core::Plan::from_str_format(
        &doc.to_string(),
        file,
        brownout_core::plan::source::Format::Json,
    )
    .ok()?;
    Some((doc, plan))
}

/// The experiment's workload with its servers replaced by the fitted one — or, with several
/// servers (`routes`), by one fitted server per target server, each with its own tools.
fn calibrated(
    w: &Workload,
    f: &Fit,
    routes: &BTreeMap<String, String>,
) -> Result<Workload, String> {
    let mut v = serde_json::to_value(w).map_err(|e| e.to_string())?;
    let one = servers_json(f, "calibrated");
    v["servers"] = if routes.is_empty() {
        one
    } else {
        split_by_server(&one, routes)
    };
    serde_json::from_value(v).map_err(|e| e.to_string())
}

/// The one fitted server's tools dealt out to the servers that have them (a tool no route
/// names stays on a server of its own, `calibrated`).
fn split_by_server(
    one: &serde_json::Value,
    routes: &BTreeMap<String, String>,
) -> serde_json::Value {
    let fitted = &one[0];
    let mut by: BTreeMap<&str, serde_json::Map<String, serde_json::Value>> = BTreeMap::new();
    for (tool, model) in fitted["tools"].as_object().into_iter().flatten() {
        let server = routes.get(tool).map_or("calibrated", String::as_str);
        by.entry(server)
            .or_default()
            .insert(tool.clone(), model.clone());
    }
    serde_json::Value::Array(
        by.into_iter()
            .map(|(name, tools)| {
                serde_json::json!({"name": name, "concurrency": fitted["concurrency"], "tools": tools})
            })
            .collect(),
    )
}

/// After a stage ran: its record carries the prediction with its error.
pub fn attach(record: &mut StageRecord, p: Option<Prediction>) {
    let Some(mut p) = p else {
        return;
    };
    let d = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a - b);
    let actual = &record.slis;
    let breached = record
        .gate_changes
        .iter()
        .any(|g| g.status == brownout_core::slo::GateStatus::Breached);
    p.error = Some(PredictionError {
        error_rate: actual.error_rate - p.slis.error_rate,
        p50_ms: d(actual.p50_ms, p.slis.p50_ms),
        p95_ms: d(actual.p95_ms, p.slis.p95_ms),
        p99_ms: d(actual.p99_ms, p.slis.p99_ms),
        verdict_right: (p.verdict == "breaches") == breached,
        error_rate_right: rates_agree(p.slis.error_rate, actual.error_rate),
    });
    record.prediction = Some(p);
}

#[cfg(test)]
mod tests {
    use super::rates_agree;

    #[test]
    fn a_prediction_far_from_the_actual_rate_is_not_right() {
        assert!(!rates_agree(0.9954, 0.0777));
        assert!(!rates_agree(0.9201, 0.0427));
        assert!(rates_agree(0.10, 0.12));
        assert!(rates_agree(0.0, 0.01));
        assert!(!rates_agree(0.0, 0.05));
    }
}
