//! The guardrails of `start_experiment`, in the server, before anything reaches a target:
//! the operator's policy (production labels, numeric gate, ladder, caps), the ladder
//! against the store's history (always on through MCP), the programs an agent may have
//! started, and the concurrency cap. Approval by a person comes after these (approval.rs).

use super::Config;
use crate::experiment::load::Loaded;
use crate::experiment::policy::{self, Refusal};
use brownout_core::select::Globs;

fn refusal(rule: &str, detail: String) -> Refusal {
    Refusal {
        rule: rule.into(),
        detail,
    }
}

/// The programs an experiment would run: its target's and its rollbacks'.
fn programs(x: &Loaded) -> Vec<String> {
    let mut out: Vec<String> = x
        .spec
        .target
        .command
        .iter()
        .filter_map(|c| c.first().cloned())
        .collect();
    out.extend(
        x.spec
            .rollbacks
            .iter()
            .filter_map(|r| r.command.first().cloned()),
    );
    out
}

/// Whether the policy lets an MCP client start `program` (its name or its path).
pub fn program_allowed(cfg: &Config, program: &str) -> Result<(), Refusal> {
    let name = std::path::Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(program);
    let ok = Globs::new(&cfg.policy.mcp_commands)
        .map(|g| g.is_match(program) || g.is_match(name))
        .unwrap_or(false);
    if ok {
        Ok(())
    } else {
        Err(refusal(
            "mcp_commands",
            format!(
                "`{program}` is not a program the policy lets an MCP client start (allowed: {})",
                if cfg.policy.mcp_commands.is_empty() {
                    "none".to_string()
                } else {
                    cfg.policy.mcp_commands.join(", ")
                }
            ),
        ))
    }
}

/// Every rule but the concurrency cap (also what `validate_experiment` reports).
pub fn check(cfg: &Config, x: &Loaded) -> Result<(), Refusal> {
    policy::check(x, &cfg.policy)?;
    for p in programs(x) {
        program_allowed(cfg, &p)?;
    }
    let keep = crate::journal_cmd::KeepArgs {
        store: cfg.store.clone(),
        ..Default::default()
    };
    crate::experiment::history::enforce(x, &cfg.policy, &keep)
}

/// The concurrency cap: `active` runs already going.
pub fn capacity(cfg: &Config, active: usize) -> Result<(), Refusal> {
    let cap = cfg.policy.max_concurrent as usize;
    if active >= cap {
        return Err(refusal(
            "max_concurrent",
            format!("{active} experiment(s) already running; the policy allows {cap} at once (stop one with stop_experiment)"),
        ));
    }
    Ok(())
}
