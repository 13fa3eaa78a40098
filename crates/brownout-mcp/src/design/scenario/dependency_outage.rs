//! `dependency_outage`: the dependency behind one tool goes down — 25 %, 60 %, then every
//! call of it refused as `upstream dependency unavailable` in the server's place, against a
//! client with bounded retries. Works for every target (a URL one too). Gate: errors under
//! 5 %: does the agent degrade around a dead dependency?

use super::{base, bounded_retries, glob, q, Ground, Series};
use crate::design::tools::{aim, Shape};
use crate::design::Step;
use serde_json::json;

const DOWN: [f64; 3] = [0.25, 0.6, 1.0];

pub fn series(g: &Ground) -> Result<Series, String> {
    let tool = aim(
        &g.load,
        g.goal,
        &[Shape::List, Shape::Plain, Shape::Declared],
    )
    .ok_or("no dependency to take down")?;
    let mut s = base(
        Some(tool),
        json!({"tool": tool.name, "refused": DOWN, "retries": bounded_retries()}),
    );
    s.client = json!({"retries": bounded_retries()});
    for d in DOWN {
        let p = g.p(d);
        s.steps.push(Step {
            strength: format!("{:.0} % of the calls of {} refused as unavailable", p * 100.0, q(tool)),
            faults: vec![json!({"id": "dependency-down", "kind": "error", "tools": [glob(tool)], "phase": "request", "code": -32000, "message": "upstream dependency unavailable", "probability": p})],
            gates: vec!["error_rate < 5% over 5s".into()],
            question: "does the agent degrade around a dead dependency, or does every task fail with it?".into(),
        });
    }
    Ok(s)
}
