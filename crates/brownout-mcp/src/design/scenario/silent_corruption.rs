//! `silent_corruption`: well-formed, wrong results (`corrupt`): a value perturbed (10 % of
//! answers), swapped with another of the same result (30 %), then stale — one this tool
//! returned earlier (60 %). Valid against the schema, so only gates that follow what the
//! agent does with them see it: `silent_rate` under 1 % (docs/silent.md) and correctness
//! at least 99 %.

use super::{base, glob, q, Ground, Series};
use crate::design::tools::{aim, Shape};
use crate::design::Step;
use serde_json::json;

const STEPS: [(&str, f64); 3] = [("perturb", 0.1), ("swap", 0.3), ("stale", 0.6)];

pub fn series(g: &Ground) -> Result<Series, String> {
    let tool = aim(
        &g.load,
        g.goal,
        &[Shape::Declared, Shape::Plain, Shape::List],
    )
    .ok_or("no tool to corrupt")?;
    let mut s = base(
        Some(tool),
        json!({"tool": tool.name, "modes": STEPS.iter().map(|x| x.0).collect::<Vec<_>>(), "probability": STEPS.iter().map(|x| x.1).collect::<Vec<_>>()}),
    );
    for (mode, rate) in STEPS {
        let p = g.p(rate);
        s.steps.push(Step {
            strength: format!("{mode} one value in {:.0} % of the answers of {}", p * 100.0, q(tool)),
            faults: vec![json!({"id": "wrong-value", "kind": "corrupt", "tools": [glob(tool)], "mode": mode, "probability": p})],
            gates: vec!["silent_rate < 1% over 10s".into(), "correctness >= 99% over 10s".into()],
            question: "does the agent cross-check a plausible wrong value before it acts on it?".into(),
        });
    }
    Ok(s)
}
