//! `describe_target`: describe a target MCP server (target/connect.rs) that the operator's
//! policy lets MCP clients reach: a command target must be a program in `mcp_commands`, a
//! URL one in `mcp_urls`. And the check that an experiment started through `brownout mcp`
//! calls no tool of the target that may write (target/writes.rs says which may).

use super::read::Out;
use super::Ctx;
use crate::target::connect::{connect, Described};
use crate::target::writes::{called, check_load};
use brownout_experiment::experiment::load::Loaded;
use brownout_experiment::experiment::policy::Refusal;
use serde_json::Value;
use std::time::Duration;

pub async fn describe(ctx: &Ctx, args: &Value) -> Out {
    describe_target(ctx, args).await.map(|d| d.json)
}

pub async fn describe_target(ctx: &Ctx, args: &Value) -> Result<Described, String> {
    let target = &args["target"];
    let timeout = Duration::from_millis(
        args["timeout_ms"]
            .as_u64()
            .unwrap_or(15_000)
            .clamp(100, 60_000),
    );
    // Only what the operator's policy lets an MCP client reach.
    match (target["command"].as_array(), target["url"].as_str()) {
        (Some(cmd), None) => {
            let cmd: Vec<String> = cmd
                .iter()
                .filter_map(|c| c.as_str().map(String::from))
                .collect();
            if !cmd.is_empty() {
                super::guard::command_allowed(&ctx.cfg, &cmd).map_err(|r| r.to_string())?;
            }
        }
        (None, Some(url)) if url.starts_with("http://") || url.starts_with("https://") => {
            super::guard::url_allowed(&ctx.cfg, url).map_err(|r| r.to_string())?;
        }
        _ => {}
    }
    connect(target, timeout, &ctx.cfg.workdir).await
}

/// [`check_load`] against the target as it describes itself now (`describe_target`); a
/// target that cannot be described is refused, unless every tool called is in `load_tools`.
pub async fn check_target(ctx: &Ctx, x: &Loaded) -> Result<(), Refusal> {
    let policy = &ctx.cfg.policy;
    if called(x).iter().all(|t| policy.load_tools.contains(t)) {
        return Ok(());
    }
    let t = &x.spec.target;
    let target = match (&t.command, &t.url) {
        (Some(c), _) => serde_json::json!({"command": c}),
        (None, Some(u)) => serde_json::json!({"url": u}),
        _ => serde_json::json!({}),
    };
    let d = describe_target(ctx, &serde_json::json!({"target": target}))
        .await
        .map_err(|e| Refusal {
            rule: "load_tools".into(),
            detail: format!("the target could not be described, so nothing says the tools its load calls are read-only: {e}"),
        })?;
    check_load(x, &d.tools, policy)
}
