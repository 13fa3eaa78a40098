//! `start_gameday` and `get_gameday`: a GameDay (docs/gameday.md) started through MCP under
//! `--allow-run`, with the rules of `start_experiment` — the arguments checked, every
//! experiment validated and put through the guardrails (the blast-radius ladder of the
//! second and later experiments is checked when each comes, after the earlier ones are in
//! the store), a person's approval of the whole resolved GameDay (its text and every file
//! its experiments name, by content), the guardrails again, then one `brownout gameday`
//! child holding a lease like a run. Through MCP every experiment is written inline: a
//! `path:` step is refused.

use super::audit::Entry;
use super::binding::Resolved;
use super::server::{client_name, result, McpServer};
use super::start::Pending;
use brownout_experiment::gameday::spec::GameDay;
use rmcp::model::{CallToolRequestParams, CallToolResponse};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{json, Value};

impl McpServer {
    /// `start_gameday`: validate, guardrails, a person's approval, then the GameDay.
    pub(super) async fn start_gameday(
        &self,
        request: &CallToolRequestParams,
        args: &Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let ctx = &self.ctx;
        let session = super::server::session_of(context, &self.guard.id);
        let mut entry = Entry {
            session: session.clone(),
            client: client_name(context),
            tool: "start_gameday".into(),
            ..Entry::default()
        };
        let decide = |entry: &mut Entry, decision: &str, rule: Option<&str>, detail: String| {
            super::intake::decide(ctx, entry, decision, rule, detail)
        };
        let text = match super::intake::text_of(
            ctx,
            &mut entry,
            "start_gameday",
            args,
            "gameday",
            "GameDay",
        ) {
            Ok(t) => t,
            Err(answer) => return *answer,
        };
        let file = if text.trim_start().starts_with('{') {
            "gameday.json"
        } else {
            "gameday.yaml"
        };
        let policy = serde_json::to_string(&ctx.cfg.policy).unwrap_or_default();
        let resolved = match capture(text, file, &ctx.cfg.workdir, &policy) {
            Ok(Some(r)) => r,
            Ok(None) => {
                // Not a GameDay the loader accepts: say why, as the loader does.
                let e = match brownout_experiment::gameday::spec::load_text_at(
                    text,
                    file,
                    &ctx.cfg.workdir,
                ) {
                    Err(e) => e,
                    Ok(_) => return decide(&mut entry, "invalid", None, "not a GameDay".into()),
                };
                return invalid(ctx, entry, &e, "");
            }
            Err(r) => return decide(&mut entry, "refused", Some(&r.rule), r.detail),
        };
        let copy = tempfile::Builder::new()
            .prefix("resolved-gameday-")
            .tempdir_in(ctx.cfg.scratch())
            .and_then(|d| resolved.write_files(d.path()).map(|()| d));
        let copy = match copy {
            Ok(d) => d,
            Err(e) => {
                return decide(
                    &mut entry,
                    "refused",
                    Some("start"),
                    format!("cannot keep the GameDay's files: {e}"),
                )
            }
        };
        let g = match brownout_experiment::gameday::spec::load_text_at(text, file, copy.path()) {
            Ok(g) => g,
            Err(e) => {
                let at = format!("{}/", copy.path().display());
                return invalid(ctx, entry, &e, &at);
            }
        };
        entry.experiment = Some(format!("GameDay: {}", g.spec.title));
        if let Err(r) = self.gameday_guardrails(&g).await {
            return decide(&mut entry, "refused", Some(&r.rule), r.detail);
        }
        if let Err(r) = super::guard::capacity(&ctx.cfg, ctx.runs.active()) {
            return decide(&mut entry, "refused", Some(&r.rule), r.detail);
        }
        let digest = entry.digest.clone().unwrap_or_default();
        let shown = shown(&g, &resolved);
        let (approver, approved) = match self
            .approval(request, args, context, &resolved, &shown, &digest)
            .await
        {
            Ok(ok) => ok,
            Err(Pending::Refused(rule, detail)) => {
                return decide(&mut entry, "refused", Some(rule), detail)
            }
            Err(Pending::Asked(detail)) => {
                return decide(
                    &mut entry,
                    "approval_required",
                    Some("approval"),
                    detail.replace("start_experiment", "start_gameday"),
                )
            }
            Err(Pending::Input(r)) => {
                entry.decision = "approval_required".into();
                entry.rule = Some("approval".into());
                entry.detail = "asked the client's user through an input request".into();
                ctx.audit.write(entry);
                return Ok(CallToolResponse::InputRequired(r));
            }
        };
        entry.approver = Some(approver);
        // Time passed while the person decided: the guardrails and the files again.
        if let Err(r) = self.gameday_guardrails(&g).await {
            return decide(&mut entry, "refused", Some(&r.rule), r.detail);
        }
        let now = match capture(text, file, &ctx.cfg.workdir, &policy) {
            Ok(Some(r)) => r,
            Ok(None) => return decide(&mut entry, "invalid", None, "not a GameDay".into()),
            Err(r) => return decide(&mut entry, "refused", Some(&r.rule), r.detail),
        };
        let changed = now.changed_since(&approved);
        if !changed.is_empty() {
            return decide(
                &mut entry,
                "refused",
                Some("approval"),
                format!(
                    "{} changed since the person approved it: not started; call start_gameday again (without a code) to have what would run now approved",
                    changed.join(", ")
                ),
            );
        }
        let started = ctx.runs.start_gameday(super::runs::Start {
            text: &approved.text,
            files: &approved.files,
            title: &format!("GameDay: {}", g.spec.title),
            session: &session,
            seed: None,
            lease: ctx.cfg.lease,
            cap: ctx.cfg.policy.max_concurrent as usize,
            ladder_skip_approved_by: None,
        });
        match started {
            Ok(h) => {
                entry.run_id = Some(h.run_id.clone());
                entry.decision = "started".into();
                entry.rule = None;
                entry.detail =
                    format!("approved by {}", entry.approver.clone().unwrap_or_default());
                ctx.audit.write(entry);
                Ok(super::intake::started(&h, "GameDay", "get_gameday"))
            }
            Err(e) => super::intake::start_refused(ctx, &mut entry, e, "GameDay"),
        }
    }

    /// Every experiment through the guardrails of `start_experiment`; the ladder against
    /// history only for the first (the runner checks the others when they come).
    async fn gameday_guardrails(
        &self,
        g: &brownout_experiment::gameday::spec::LoadedGameDay,
    ) -> Result<(), brownout_experiment::experiment::Refusal> {
        for (i, x) in g.experiments.iter().enumerate() {
            let id = &g.spec.experiments[i].id;
            let named = |r: brownout_experiment::experiment::Refusal| {
                brownout_experiment::experiment::Refusal {
                    rule: r.rule,
                    detail: format!("experiment `{id}`: {}", r.detail),
                }
            };
            match self.ctx.policy_verdict(x) {
                Err(r) if !(i > 0 && r.rule == "ladder_from_history") => return Err(named(r)),
                _ => {}
            }
            super::describe::check_target(&self.ctx, x)
                .await
                .map_err(named)?;
        }
        Ok(())
    }
}

/// The GameDay resolved for approval: its text and every file its inline experiments name
/// (read once, confined to the working directory). `Ok(None)`: not a GameDay document
/// (the loader says why). A `path:` step is refused.
fn capture(
    text: &str,
    file: &str,
    workdir: &std::path::Path,
    policy: &str,
) -> Result<Option<Resolved>, brownout_experiment::experiment::Refusal> {
    let Ok(g) = brownout_core::plan::load_document::<GameDay>(text, file) else {
        return Ok(None);
    };
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for s in &g.experiments {
        if s.path.is_some() {
            return Err(brownout_experiment::experiment::Refusal {
                rule: "paths".into(),
                detail: format!(
                    "experiment `{}` is a `path`: through MCP write every experiment inline (`experiment: {{…}}`)",
                    super::audit::clean_n(&s.id, 64)
                ),
            });
        }
        let Some(m) = &s.experiment else {
            continue;
        };
        let doc = serde_json::to_string(m).unwrap_or_default();
        super::guard::paths_confined(&doc, "experiment.json", workdir)?;
        let r = super::binding::capture(&doc, "experiment.json", workdir, None, policy)?;
        for (p, b) in r.files {
            if !files.iter().any(|(q, _)| *q == p) {
                files.push((p, b));
            }
        }
    }
    Ok(Some(Resolved {
        text: text.to_string(),
        seed: None,
        files,
        policy: policy.to_string(),
    }))
}

/// What the person approves: the GameDay's title and, per experiment, what
/// `start_experiment` would show.
fn shown(g: &brownout_experiment::gameday::spec::LoadedGameDay, r: &Resolved) -> String {
    let steps: Vec<String> = g
        .experiments
        .iter()
        .zip(&g.spec.experiments)
        .enumerate()
        .map(|(i, (x, s))| {
            format!(
                "[{}. {}] {}",
                i + 1,
                super::audit::clean_n(&s.id, 64),
                super::start::what(x, r)
            )
        })
        .collect();
    format!(
        "GameDay \"{}\", {} experiment(s) in order, stopping at the first that does not complete: {}",
        super::audit::clean_n(&g.spec.title, 120),
        g.experiments.len(),
        steps.join(" ")
    )
}

fn invalid(
    ctx: &super::Ctx,
    mut entry: Entry,
    e: &brownout_core::plan::PlanErrors,
    strip: &str,
) -> Result<CallToolResponse, McpError> {
    entry.decision = "invalid".into();
    entry.detail = format!("{} error(s)", e.errors.len());
    ctx.audit.write(entry);
    let detail = if strip.is_empty() {
        e.to_string()
    } else {
        e.to_string().replace(strip, "")
    };
    let v = json!({"decision": "invalid", "rule": null, "detail": detail, "errors": crate::verdicts::errors_json(e)});
    Ok(CallToolResponse::Complete(result(v, true)))
}

/// `get_gameday`: the run's state and lease, and the GameDay's journal so far (each
/// experiment's status and points, the score once it ended).
pub fn get(ctx: &super::Ctx, id: &str) -> Result<Value, String> {
    let mut v = ctx
        .runs
        .get(id)
        .ok_or_else(|| format!("no GameDay {id} was started by this server"))?;
    let read = |name: &str| -> Option<brownout_experiment::gameday::record::Record> {
        let t = std::fs::read(ctx.runs.dir().join(format!("{id}.{name}.json"))).ok()?;
        serde_json::from_slice(&t).ok()
    };
    if let Some(m) = v.as_object_mut() {
        m.remove("live");
        m.remove("summary");
    }
    if let Some(r) = read("journal").or_else(|| read("status")) {
        v["gameday"] = compact(&r);
    }
    Ok(v)
}

/// The GameDay's journal, summarised for an agent's context.
fn compact(r: &brownout_experiment::gameday::record::Record) -> Value {
    let steps: Vec<Value> = r
        .experiments
        .iter()
        .map(|e| {
            json!({"id": e.id, "status": e.status, "run_id": e.run_id, "points": e.points,
                "max_points": e.max_points, "why": e.why, "reason": super::audit::clean_n(&e.reason, 300)})
        })
        .collect();
    json!({
        "gameday_id": r.gameday_id, "title": r.title, "status": r.status, "reason": r.reason,
        "score": r.score, "grade": r.grade, "ladder": r.ladder, "stopped_at": r.stopped_at,
        "experiments": steps,
    })
}
