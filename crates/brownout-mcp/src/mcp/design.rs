//! `design_experiments`: the MCP side of experiment design (crate::design does the work).
//! The target is described live (describe.rs, within the operator's policy), the goal's
//! words and any `scenarios` named are mapped to scenario templates, and the designs are
//! checked against the policy in force here (with the MCP server's own rules) and
//! simulated. Nothing is run and nothing is written. Tool names are the target's text:
//! brownout's sentences quote them escaped and cut (untrusted.rs).

use super::read::Out;
use super::Ctx;
use crate::design::{Env, Request, Scenario};
use serde_json::Value;

pub async fn design(ctx: &Ctx, args: &Value, progress: &super::progress::Progress) -> Out {
    let req = request(args)?;
    progress.report(0.0, None, "describing the target");
    let d = super::describe::describe_target(ctx, args).await?;
    let ctx = ctx.clone();
    let args = args.clone();
    let progress = progress.clone();
    tokio::task::spawn_blocking(move || {
        let verdict = |x: &brownout_experiment::experiment::Loaded| ctx.policy_verdict(x);
        let env = Env {
            policy: &ctx.cfg.policy,
            store: ctx.cfg.store.as_deref(),
            workdir: &ctx.cfg.workdir,
            designed_by: "brownout-mcp",
            verdict: &verdict,
        };
        let report = |done: f64, total: Option<f64>, msg: String| progress.report(done, total, msg);
        let mut out = crate::design::design(&env, &req, &args["target"], &d.tools, &report)?;
        out["target"] = d.json;
        if let Some(notes) = out["notes"].as_array_mut() {
            notes.push(crate::target::untrusted::NOTICE.into());
        }
        Ok(out)
    })
    .await
    .map_err(|e| e.to_string())?
}

/// The request from the call's arguments (already checked against the input schema).
fn request(args: &Value) -> Result<Request, String> {
    let mut scenarios = Vec::new();
    for s in args["scenarios"].as_array().into_iter().flatten() {
        let name = s.as_str().unwrap_or_default();
        let x = Scenario::from_name(name).ok_or_else(|| {
            format!(
                "`{}` is not a scenario; known: {}",
                crate::target::untrusted::text(name, 60),
                Scenario::names().join(", ")
            )
        })?;
        if !scenarios.contains(&x) {
            scenarios.push(x);
        }
    }
    Ok(Request {
        goal: args["goal"].as_str().unwrap_or_default().to_string(),
        scenarios,
        max: args["max"]
            .as_u64()
            .map_or(crate::design::MAX_EXPERIMENTS, |m| m as usize),
    })
}
