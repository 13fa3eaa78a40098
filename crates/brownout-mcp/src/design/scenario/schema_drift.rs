//! `schema_drift`: the results of one tool break their declared shape — the first field
//! its `outputSchema` declares retyped (10 % of answers), dropped (30 %), then any mutation
//! of any field (60 %). A tool with an `outputSchema` is preferred. Gates: correctness at
//! least 99 % (a drifted result fails the schema) and `silent_rate` under 1 %.

use super::{base, glob, q, Ground, Series};
use crate::design::tools::{aim, declared_field, Shape};
use crate::design::Step;
use serde_json::json;

const STEPS: [(&str, f64); 3] = [("retype", 0.1), ("drop", 0.3), ("random", 0.6)];

pub fn series(g: &Ground) -> Result<Series, String> {
    let tool = aim(
        &g.load,
        g.goal,
        &[Shape::Declared, Shape::List, Shape::Plain],
    )
    .ok_or("no tool to drift")?;
    let path = declared_field(tool);
    let mut s = base(
        Some(tool),
        json!({"tool": tool.name, "path": path, "mutations": STEPS.iter().map(|x| x.0).collect::<Vec<_>>(), "probability": STEPS.iter().map(|x| x.1).collect::<Vec<_>>()}),
    );
    for (i, (mutation, rate)) in STEPS.iter().enumerate() {
        let p = g.p(*rate);
        let mut f = json!({"id": "drift", "kind": "schema_drift", "tools": [glob(tool)], "mutation": mutation, "probability": p});
        if let (Some(path), true) = (&path, i < 2) {
            f["path"] = path.clone().into();
        }
        s.steps.push(Step {
            strength: format!(
                "{mutation} in {:.0} % of the answers of {}",
                p * 100.0,
                q(tool)
            ),
            faults: vec![f],
            gates: vec![
                "correctness >= 99% over 10s".into(),
                "silent_rate < 1% over 10s".into(),
            ],
            question: "is a drifted result caught by validation rather than acted on?".into(),
        });
    }
    Ok(s)
}
