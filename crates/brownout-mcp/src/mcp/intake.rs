//! What every tool that starts something (`start_experiment`, `start_gameday`) does first:
//! refuse keys only the operator sets, check the arguments, take the text within its bound —
//! and answer each decision the same way, written to the audit log before it is sent.

use super::audit::Entry;
use super::runs::{Handle, StartError};
use super::server::result;
use super::Ctx;
use rmcp::model::CallToolResponse;
use rmcp::ErrorData as McpError;
use serde_json::{json, Value};

/// The answer to a start tool's call: `decision` (with the guardrail `rule` that made it and
/// its `detail`), kept in the audit log first.
pub(super) fn decide(
    ctx: &Ctx,
    entry: &mut Entry,
    decision: &str,
    rule: Option<&str>,
    detail: String,
) -> Result<CallToolResponse, McpError> {
    entry.decision = decision.into();
    entry.rule = rule.map(String::from);
    entry.detail = detail.clone();
    ctx.audit.write(entry.clone());
    let v = json!({"decision": decision, "rule": rule, "detail": detail});
    Ok(CallToolResponse::Complete(result(
        v,
        decision != "started" && decision != "approval_required",
    )))
}

/// A start tool's answer, boxed: it is large beside the text it stands in for.
pub(super) type Answer = Box<Result<CallToolResponse, McpError>>;

/// The text a start tool was given under `key` (the `noun`'s), once no key only the operator
/// sets is present, the arguments are well-formed and the text is within
/// [`super::MAX_TEXT`]; otherwise the answer to give.
pub(super) fn text_of<'a>(
    ctx: &Ctx,
    entry: &mut Entry,
    tool: &str,
    args: &'a Value,
    key: &str,
    noun: &str,
) -> Result<&'a str, Answer> {
    for forbidden in ["policy", "policy_file", "allow_run", "approved", "confirm"] {
        if args.get(forbidden).is_some() {
            return Err(Box::new(decide(
                ctx,
                entry,
                "refused",
                Some("policy_fixed"),
                format!("`{forbidden}` cannot be set through MCP: the policy and approvals are the operator's (get_policy shows them)"),
            )));
        }
    }
    if let Err(e) = super::args::check(tool, args) {
        entry.decision = "invalid".into();
        entry.detail = e.message.to_string();
        ctx.audit.write(entry.clone());
        return Err(Box::new(Err(e)));
    }
    let Some(text) = args[key].as_str() else {
        return Err(Box::new(decide(
            ctx,
            entry,
            "invalid",
            None,
            format!("`{key}` (the {noun}'s text) is required"),
        )));
    };
    entry.digest = Some(super::audit::digest(text));
    if text.len() > super::MAX_TEXT {
        return Err(Box::new(decide(
            ctx,
            entry,
            "invalid",
            None,
            format!(
                "the {noun} is {} bytes; at most {} through MCP",
                text.len(),
                super::MAX_TEXT
            ),
        )));
    }
    Ok(text)
}

/// The answer to a start the runs table took: the run's handle, `started`, and how to keep
/// it going (`what`: `run` or `GameDay`; `get`: the tool that shows it live).
pub(super) fn started(h: &Handle, what: &str, get: &str) -> CallToolResponse {
    let mut v = serde_json::to_value(h).unwrap_or_default();
    v["decision"] = "started".into();
    v["detail"] = format!(
        "running; renew the lease (renew_lease) within {:.0}s or the {what} stops; {get} shows it live",
        h.lease_seconds
    )
    .into();
    CallToolResponse::Complete(result(v, false))
}

/// The answer to a start the runs table refused: the concurrency cap (`max_concurrent`), or
/// the `what` (`run`, `GameDay`) could not start; audited like every decision.
pub(super) fn start_refused(
    ctx: &Ctx,
    entry: &mut Entry,
    e: StartError,
    what: &str,
) -> Result<CallToolResponse, McpError> {
    match e {
        StartError::Full(n) => {
            let r = super::guard::capacity(&ctx.cfg, n)
                .err()
                .map_or_else(|| format!("{n} run(s) going"), |r| r.detail);
            decide(ctx, entry, "refused", Some("max_concurrent"), r)
        }
        StartError::Io(e) => decide(
            ctx,
            entry,
            "refused",
            Some("start"),
            format!("the {what} could not start: {e}"),
        ),
    }
}
