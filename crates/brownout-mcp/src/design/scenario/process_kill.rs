//! `process_kill`: the stdio server brownout starts is killed with SIGKILL and restarted
//! (`restart: on_failure`, backoff 200 ms) — on the 21st call of a session once, then on
//! every 20th call up to three times, then on every 5th up to ten times. Only a command
//! target has a process brownout may kill; the policy must allow process faults
//! (`allow_process_faults`). Gates: errors under 5 %; recovery within 20 s.

use super::{base, glob, q, Ground, Series};
use crate::design::tools::{aim, Shape};
use crate::design::Step;
use serde_json::json;

/// (after_calls, every_nth, max_injections) per step.
const STEPS: [(u32, u32, u32); 3] = [(20, 1, 1), (10, 20, 3), (5, 5, 10)];

pub fn series(g: &Ground) -> Result<Series, String> {
    if !g.is_command() {
        return Err("a process kill needs a stdio target brownout starts (`target.command`): a URL target's process is not brownout's to kill; see dependency_outage".into());
    }
    let tool = aim(
        &g.load,
        g.goal,
        &[Shape::Plain, Shape::List, Shape::Declared],
    )
    .ok_or("no tool to trigger the kill")?;
    let mut s = base(
        Some(tool),
        json!({"tool": tool.name, "signal": "KILL", "restart": "on_failure", "steps": STEPS.iter().map(|(a, e, m)| json!({"after_calls": a, "every_nth": e, "max_injections": m})).collect::<Vec<_>>()}),
    );
    s.recovery_s = 20;
    for (after, every, max) in STEPS {
        let mut f = json!({"id": "kill-server", "kind": "process", "action": "kill", "signal": "KILL", "restart": "on_failure", "restart_backoff_ms": 200, "tools": [glob(tool)], "after_calls": after, "max_injections": max});
        if every > 1 {
            f["every_nth"] = every.into();
        }
        s.steps.push(Step {
            strength: format!("the server killed (SIGKILL) at most {max} time(s) per session, triggered by calls of {}", q(tool)),
            faults: vec![f],
            gates: vec!["error_rate < 5% over 5s".into()],
            question: "does the client notice a dead server, reconnect to the restarted one and carry on?".into(),
        });
    }
    Ok(s)
}
