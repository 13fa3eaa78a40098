//! `registry_stale`: the tool registry lies about one tool — a changed schema served (30 %
//! of lists), the tool hidden from the list though still callable (60 %), then listed while
//! every call fails "not found" (all). Gates: errors under 2 % and `silent_rate` under 1 %.

use super::{base, glob, q, Ground, Series};
use crate::design::tools::{aim, Shape};
use crate::design::Step;
use serde_json::json;

const STEPS: [(&str, f64); 3] = [("stale_schema", 0.3), ("hide", 0.6), ("dangling", 1.0)];

pub fn series(g: &Ground) -> Result<Series, String> {
    let tool = aim(
        &g.load,
        g.goal,
        &[Shape::Declared, Shape::List, Shape::Plain],
    )
    .ok_or("no tool to misreport")?;
    let mut s = base(
        Some(tool),
        json!({"tool": tool.name, "actions": STEPS.iter().map(|x| x.0).collect::<Vec<_>>(), "probability": STEPS.iter().map(|x| x.1).collect::<Vec<_>>()}),
    );
    for (action, rate) in STEPS {
        let p = g.p(rate);
        s.steps.push(Step {
            strength: format!("{action} for {} ({:.0} %)", q(tool), p * 100.0),
            faults: vec![json!({"id": "stale-registry", "kind": "registry", "tools": [glob(tool)], "action": action, "probability": p})],
            gates: vec!["error_rate < 2% over 5s".into(), "silent_rate < 1% over 10s".into()],
            question: "does the agent notice a registry that no longer matches the server?".into(),
        });
    }
    Ok(s)
}
