//! `slow_dependency`: one tool — the dependency — slows toward the client's timeout (30 %,
//! 60 %, 90 % of it, jitter a tenth of it) on every call of the sessions in the blast
//! radius: "one pod slowed". The tool is the one the goal names, else the slowest past runs
//! measured, else a list-like one. Gates: p95 under 90 % of the timeout, errors under 5 %.

use super::{base, glob, q, Ground, Series};
use crate::design::tools::{aim, Shape};
use crate::design::Step;
use serde_json::json;

const SHARES: [f64; 3] = [0.3, 0.6, 0.9];

pub fn series(g: &Ground) -> Result<Series, String> {
    let measured = g
        .load
        .iter()
        .filter(|t| g.p50_ms.contains_key(&*t.name))
        .max_by(|a, b| g.served_ms(&a.name).total_cmp(&g.served_ms(&b.name)))
        .copied();
    let named = g
        .load
        .iter()
        .find(|t| crate::design::tools::named_in(g.goal, &t.name))
        .copied();
    let tool = named
        .or(measured)
        .or_else(|| {
            aim(
                &g.load,
                g.goal,
                &[Shape::List, Shape::Plain, Shape::Declared],
            )
        })
        .ok_or("no tool to slow")?;
    let added: Vec<(u64, u64)> = SHARES.iter().map(|s| g.latency(*s)).collect();
    let p = g.p(1.0);
    let mut s = base(
        Some(tool),
        json!({"tool": tool.name, "added_ms": added.iter().map(|a| a.0).collect::<Vec<_>>(), "jitter_ms": added[0].1, "probability": p, "timeout_ms": g.timeout_ms}),
    );
    let p95 = g.timeout_ms * 9 / 10;
    for (ms, jitter) in added {
        s.steps.push(Step {
            strength: format!("{ms} ms ± {jitter} ms added to {:.0} % of the calls of {}", p * 100.0, q(tool)),
            faults: vec![json!({"id": "slow-dependency", "kind": "latency", "tools": [glob(tool)], "added_ms": ms, "jitter_ms": jitter, "probability": p})],
            gates: vec![format!("p95 < {p95}ms over 5s"), "error_rate < 5% over 5s".into()],
            question: format!("does the p95 stay under 90 % of the client's {} ms timeout, or do timeouts and retries pile up?", g.timeout_ms),
        });
    }
    Ok(s)
}
