//! A dry run's expectation of one experiment: each stage simulated on the experiment's own
//! workload (its declared server model), with the stage's faults and the gates, nothing
//! sent to the target. The expected value follows docs/gameday.md#score with the one factor
//! the simulator predicts, the margin (ρ); a breach expects 0.

use super::record::Expected;
use super::score::QUALITY_SHARE;
use crate::experiment::Loaded;
use brownout_sim::{simulate, SimOptions};

/// The most tasks one simulated stage runs (the workload's own count when smaller).
const MAX_TASKS: u64 = 5000;

/// The simulator's expectation of `x`.
pub fn expect(x: &Loaded) -> Expected {
    let mut rho: Option<f64> = None;
    let mut breached = Vec::new();
    for st in &x.spec.method {
        let Some(share) = st.sessions.fraction() else {
            continue;
        };
        let Ok((_, mut plan)) = x.stage_plan(share) else {
            return unknown("a stage's plan did not compile");
        };
        plan.seed = x.plan.seed;
        let opts = SimOptions {
            tasks: Some(x.workload.tasks.unwrap_or(1000).clamp(1, MAX_TASKS)),
            seed: Some(x.plan.seed),
            keep_series: false,
            gates: x.gates.clone(),
            stop_at_breach: false,
            sessions: Some(u64::from(x.spec.load.sessions.unwrap_or(16))),
            budget: Default::default(),
        };
        let r = simulate(&x.workload, plan, &opts);
        if r.gates.iter().any(|g| g.breached) {
            breached.push(st.stage.clone());
        }
        if let Some(p) = r.robustness {
            rho = Some(rho.map_or(p, |q: f64| q.min(p)));
        }
    }
    if !breached.is_empty() {
        return Expected {
            verdict: "breaches".into(),
            robustness: rho,
            value: 0.0,
            note: format!("a gate breaches in stage(s) {}", breached.join(", ")),
        };
    }
    let (q, note) = match rho {
        Some(p) => (p.clamp(0.0, 1.0), format!("margin ρ {p:.3}")),
        None => (
            1.0,
            "no gate window filled: margin not predicted".to_string(),
        ),
    };
    Expected {
        verdict: "holds".into(),
        robustness: rho,
        value: (1.0 - QUALITY_SHARE) + QUALITY_SHARE * q,
        note,
    }
}

fn unknown(why: &str) -> Expected {
    Expected {
        verdict: "unknown".into(),
        robustness: None,
        value: 0.0,
        note: why.into(),
    }
}
