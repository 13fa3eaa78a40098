//! Skipping a rung of the ladder through MCP: a run above the rung the store's history
//! allows (the policy's `ladder_from_history`) is refused, as every other guardrail, unless
//! the agent asks for the skip (`skip_ladder: true`) — then the skip goes to the person who
//! approves the run (the one-time code or the elicitation form), said first in what they
//! are shown, and the run's journal records who approved it (`ladder_skip`). No argument
//! approves by itself: without the person's approval nothing starts. Every other rule
//! still refuses outright.

use super::Ctx;
use brownout_experiment::experiment::policy::Refusal;
use brownout_experiment::experiment::Loaded;

/// The policy's verdict, with a ladder refusal turned into a skip to approve when asked
/// for: `Ok(Some(what the ladder said))` is a run that needs the person to approve the skip.
pub fn verdict(ctx: &Ctx, x: &Loaded, asked: bool) -> Result<Option<String>, Refusal> {
    match ctx.policy_verdict(x) {
        Ok(()) => Ok(None),
        Err(r) if r.rule == "ladder_from_history" && asked => Ok(Some(r.detail)),
        Err(mut r) if r.rule == "ladder_from_history" => {
            r.detail.push_str(
                "; to go above it anyway, call start_experiment with `skip_ladder: true`: a person must approve the skip, and the journal records who did",
            );
            Err(r)
        }
        Err(r) => Err(r),
    }
}

/// What the person is shown: the skip first, where there is one.
pub fn shown(skip: Option<&str>, what: String) -> String {
    match skip {
        Some(d) => format!(
            "SKIPS A RUNG OF THE LADDER (approve only if you mean to: {}) · {what}",
            super::audit::clean_n(d, 300)
        ),
        None => what,
    }
}
