//! `start_experiment`: the arguments checked against the tool's schema, the experiment
//! resolved (binding.rs: the files it names read once, the seed) and validated from that
//! copy, the guardrails checked (guard.rs), a person's approval of that resolved experiment
//! obtained — the operator's one-time code, or where the operator trusts the client's form
//! (`--approval`: over stdio by default) an elicitation form, on 2026-07-28 returned as a
//! multi-round-trip input request — the guardrails checked again (time passed while the
//! person decided), the working directory's files compared with what was approved, then
//! the run started from the approved copy (runs.rs). The load and probes may call only
//! tools that cannot write (writes.rs), judged against the target described at start; a
//! target that cannot be described is refused. Every decision is audited.

use super::audit::Entry;
use super::binding::{self, Resolved};
use super::server::{client_name, result, McpServer};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ElicitRequest, ElicitRequestParams, ElicitationSchema,
    InputRequest, InputRequiredResult, ProtocolVersion,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{json, Value};

/// What the approval form asks the person.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct Approval {
    /// Approve this live experiment?
    pub approve: bool,
    /// Your name, for the audit log.
    #[serde(default)]
    pub approver: Option<String>,
}
rmcp::elicit_safe!(Approval);

/// The key under which the approval form is asked in a multi-round-trip result.
const APPROVAL_KEY: &str = "approval";

impl McpServer {
    /// `start_experiment`: validate, guardrails, a person's approval, then the run.
    pub(super) async fn start(
        &self,
        request: &CallToolRequestParams,
        args: &Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let ctx = &self.ctx;
        // Stateless requests (2026-07-28) have no session to end: their runs hold the lease.
        let session = super::server::session_of(context, &self.guard.id);
        let client = client_name(context);
        let mut entry = Entry {
            session: session.clone(),
            client: client.clone(),
            tool: "start_experiment".into(),
            ..Entry::default()
        };
        let decide = |entry: &mut Entry, decision: &str, rule: Option<&str>, detail: String| {
            super::intake::decide(ctx, entry, decision, rule, detail)
        };
        let text = match super::intake::text_of(
            ctx,
            &mut entry,
            "start_experiment",
            args,
            "experiment",
            "experiment",
        ) {
            Ok(t) => t,
            Err(answer) => return *answer,
        };
        if let Err(r) = super::guard::paths_confined(text, "experiment.yaml", &ctx.cfg.workdir) {
            return decide(&mut entry, "refused", Some(&r.rule), r.detail);
        }
        let file = if text.trim_start().starts_with('{') {
            "experiment.json"
        } else {
            "experiment.yaml"
        };
        // The files it names, read once: checked, shown, approved and run from this copy.
        let policy = serde_json::to_string(&ctx.cfg.policy).unwrap_or_default();
        let seed = args["seed"].as_u64();
        let resolved = match binding::capture(text, file, &ctx.cfg.workdir, seed, &policy) {
            Ok(r) => r,
            Err(r) => return decide(&mut entry, "refused", Some(&r.rule), r.detail),
        };
        let copy = tempfile::Builder::new()
            .prefix("resolved-")
            .tempdir_in(ctx.cfg.scratch())
            .and_then(|d| resolved.write_files(d.path()).map(|()| d));
        let copy = match copy {
            Ok(d) => d,
            Err(e) => {
                return decide(
                    &mut entry,
                    "refused",
                    Some("start"),
                    format!("cannot keep the experiment's files: {e}"),
                )
            }
        };
        let x = match brownout_experiment::experiment::load::load_text(text, file, copy.path()) {
            Ok(x) => x,
            Err(e) => {
                entry.decision = "invalid".into();
                entry.detail = format!("{} error(s)", e.errors.len());
                ctx.audit.write(entry);
                let at = format!("{}/", copy.path().display());
                let v = json!({"decision": "invalid", "rule": null, "detail": e.to_string().replace(&at, ""), "errors": crate::verdicts::errors_json(&e)});
                return Ok(CallToolResponse::Complete(result(v, true)));
            }
        };
        entry.experiment = Some(x.spec.title.clone());
        // A rung above the store's history only with a person's approval, asked for.
        let skip_asked = args["skip_ladder"] == Value::Bool(true);
        let checked = super::ladder_skip::verdict(ctx, &x, skip_asked)
            .and_then(|skip| super::guard::capacity(&ctx.cfg, ctx.runs.active()).map(|()| skip));
        let skip = match checked {
            Ok(skip) => skip,
            Err(r) => return decide(&mut entry, "refused", Some(&r.rule), r.detail),
        };
        // No real call to a tool that may write: judged against the target's own list.
        if let Err(r) = super::describe::check_target(ctx, &x).await {
            return decide(&mut entry, "refused", Some(&r.rule), r.detail);
        }
        // A person approves: the code the operator read, a form in the client, or a form
        // returned as a multi-round-trip input request (2026-07-28).
        let digest = entry.digest.clone().unwrap_or_default();
        let shown = super::ladder_skip::shown(skip.as_deref(), what(&x, &resolved));
        let (approver, approved) = match self
            .approval(request, args, context, &resolved, &shown, &digest)
            .await
        {
            Ok(ok) => ok,
            Err(Pending::Refused(rule, detail)) => {
                return decide(&mut entry, "refused", Some(rule), detail)
            }
            Err(Pending::Asked(detail)) => {
                return decide(&mut entry, "approval_required", Some("approval"), detail)
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
        // The guardrails again: time passed while the person decided (the cap is checked
        // as the run is registered).
        let skip = match super::ladder_skip::verdict(ctx, &x, skip_asked) {
            Ok(skip) => skip,
            Err(r) => return decide(&mut entry, "refused", Some(&r.rule), r.detail),
        };
        // What was approved is what runs: the working directory must still hold it (the
        // run starts from the approved copy either way).
        let now = match binding::capture(text, file, &ctx.cfg.workdir, seed, &policy) {
            Ok(r) => r,
            Err(r) => return decide(&mut entry, "refused", Some(&r.rule), r.detail),
        };
        let changed = now.changed_since(&approved);
        if !changed.is_empty() {
            return decide(
                &mut entry,
                "refused",
                Some("approval"),
                format!(
                    "{} changed since the person approved it: not started; call start_experiment again (without a code) to have what would run now approved",
                    changed.join(", ")
                ),
            );
        }
        let started = ctx.runs.start(super::runs::Start {
            text: &approved.text,
            files: &approved.files,
            title: &x.spec.title,
            session: &session,
            seed: approved.seed,
            lease: ctx.cfg.lease,
            cap: ctx.cfg.policy.max_concurrent as usize,
            ladder_skip_approved_by: skip.as_ref().and(entry.approver.as_deref()),
        });
        match started {
            Ok(h) => {
                entry.run_id = Some(h.run_id.clone());
                entry.decision = "started".into();
                entry.rule = None;
                entry.detail = format!(
                    "approved by {}{}",
                    entry.approver.clone().unwrap_or_default(),
                    skip.as_ref()
                        .map_or(String::new(), |d| format!("; a ladder rung skipped: {d}"))
                );
                ctx.audit.write(entry);
                let tasks = context
                    .client_capabilities()
                    .is_some_and(|c| c.supports_tasks());
                if tasks {
                    return Ok(CallToolResponse::Task(rmcp::model::CreateTaskResult::new(
                        self.as_task(&h.run_id),
                    )));
                }
                Ok(super::intake::started(&h, "run", "get_experiment"))
            }
            Err(e) => super::intake::start_refused(ctx, &mut entry, e, "run"),
        }
    }

    /// The run as a task (the tasks extension): it completes when the run ends, with the
    /// run's summary; cancelling it stops the run; polling it renews the run's lease.
    fn as_task(&self, run_id: &str) -> rmcp::model::Task {
        use rmcp::task_manager::{TaskExit, TaskOptions};
        let runs = self.ctx.runs.clone();
        let audit = self.ctx.audit.clone();
        let session = self.guard.id.clone();
        let id = run_id.to_string();
        let opts = TaskOptions::new()
            .with_poll_interval_ms(1000)
            .with_ttl_ms(Some(3_600_000))
            .with_status_message(format!("run {run_id} started"));
        let task = self.ctx.tasks.spawn(opts, move |tctx| {
            Box::pin(async move {
                loop {
                    tokio::select! {
                        _ = tctx.cancelled() => {
                            runs.stop(&id, "the task was cancelled");
                            audit.write(Entry {
                                session,
                                tool: "tasks/cancel".into(),
                                decision: "stopped".into(),
                                detail: "the task was cancelled: run stopped, faults removed".into(),
                                run_id: Some(id),
                                ..Entry::default()
                            });
                            return Err(TaskExit::Cancelled);
                        }
                        _ = tokio::time::sleep(std::time::Duration::from_millis(250)) => {}
                    }
                    if let Some(v) = runs.get(&id) {
                        if let Some(stage) = v.pointer("/live/phase").and_then(Value::as_str) {
                            tctx.set_status_message(format!("run {id}: {stage}"));
                        }
                    }
                    if runs.ended(&id) {
                        let v = runs.get(&id).unwrap_or_default();
                        let out = json!({
                            "decision": "started",
                            "detail": format!("the run ended: {}: {}", v["status"].as_str().unwrap_or("?"), v["reason"].as_str().unwrap_or("")),
                            "run_id": id,
                            "state": "ended",
                            "summary": v["summary"],
                        });
                        return Ok(result(out, false));
                    }
                }
            })
        });
        if let Ok(mut m) = self.ctx.task_runs.lock() {
            m.insert(task.task_id.clone(), run_id.to_string());
        }
        task
    }

    /// Get a person's approval of `x`; `Ok((approver, what was approved))` or why not yet.
    pub(super) async fn approval(
        &self,
        request: &CallToolRequestParams,
        args: &Value,
        context: &RequestContext<RoleServer>,
        x: &Resolved,
        what: &str,
        digest: &str,
    ) -> Result<(String, Resolved), Pending> {
        let ctx = &self.ctx;
        if let Some(code) = args["approval_code"].as_str() {
            use super::approval::Check;
            return match ctx.approvals.check(x, code) {
                Check::Approved => Ok(("operator (one-time code)".into(), x.clone())),
                Check::Wrong => Err(Pending::Refused("approval", "the approval code is wrong (after 3 wrong codes it is withdrawn)".into())),
                Check::Changed(what) => Err(Pending::Refused("approval", format!("{} changed since the code was issued: the code is withdrawn, nothing started; call start_experiment without a code to have what would run now approved", what.join(", ")))),
                Check::NonePending => Err(Pending::Refused("approval", "no approval code is pending for this experiment (codes are single-use, expire after 10 minutes and are bound to the exact text, the seed and the files it names): call start_experiment without a code to ask for one".into())),
            };
        }
        let message = format!(
            "brownout: an agent asks to run a live experiment ({digest}): {what}. Approve it?"
        );
        let stateless = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        let caps = context.client_capabilities();
        let form = ctx.cfg.client_form_approves
            && caps
                .as_ref()
                .and_then(|c| c.elicitation.as_ref())
                .is_some_and(|e| e.form.is_some() || e.url.is_none());
        if stateless && form {
            // A multi-round-trip result: the client asks its user and retries with the answer.
            if let Some(answers) = &request.input_responses {
                let asked = request
                    .request_state
                    .as_deref()
                    .and_then(|n| ctx.approvals.answered(n, x));
                let accepted = answers.get(APPROVAL_KEY).is_some_and(|a| {
                    a["action"] == "accept" && a["content"]["approve"] == Value::Bool(true)
                });
                if let (Some(approved), true) = (asked, accepted) {
                    let who = answers[APPROVAL_KEY]["content"]["approver"]
                        .as_str()
                        .unwrap_or("the client's user");
                    let who = super::audit::clean_n(who, 100);
                    return Ok((
                        format!("elicitation, approver as the client reported it: {who}"),
                        approved,
                    ));
                }
                return Err(Pending::Refused(
                    "approval",
                    "the person declined (or the answer did not match this experiment)".into(),
                ));
            }
            let schema = ElicitationSchema::from_type::<Approval>().map_err(|e| {
                Pending::Refused("approval", format!("cannot build the approval form: {e}"))
            })?;
            let req = ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
                meta: None,
                message,
                requested_schema: schema,
            });
            let mut asks = rmcp::model::InputRequests::new();
            asks.insert(APPROVAL_KEY.into(), InputRequest::Elicitation(req));
            let nonce = ctx
                .approvals
                .ask(x)
                .map_err(|e| Pending::Refused("approval", e))?;
            return Err(Pending::Input(InputRequiredResult::new(
                Some(asks),
                Some(nonce),
            )));
        }
        if !stateless && form {
            return match context
                .peer
                .elicit_with_timeout::<Approval>(message, Some(std::time::Duration::from_secs(300)))
                .await
            {
                Ok(Some(a)) if a.approve => Ok((
                    format!(
                        "elicitation, approver as the client reported it: {}",
                        super::audit::clean_n(
                            &a.approver.unwrap_or_else(|| "(no name)".into()),
                            100
                        )
                    ),
                    x.clone(),
                )),
                Ok(_) => Err(Pending::Refused(
                    "approval",
                    "the person did not approve".into(),
                )),
                Err(rmcp::service::ElicitationError::UserDeclined) => {
                    Err(Pending::Refused("approval", "the person declined".into()))
                }
                Err(rmcp::service::ElicitationError::UserCancelled) => {
                    Err(Pending::Refused("approval", "the person cancelled".into()))
                }
                Err(e) => Err(Pending::Refused(
                    "approval",
                    format!("the approval form failed: {e}"),
                )),
            };
        }
        let session = &self.guard.id;
        let issued = ctx
            .approvals
            .issue(x, digest, what, session)
            .map_err(|e| Pending::Refused("approval", e))?;
        let already = if issued == super::approval::Issued::AlreadyPending {
            " (a code for this exact experiment was already printed and is still valid: no new one)"
        } else {
            ""
        };
        Err(Pending::Asked(format!(
            "a person must approve this live run: a one-time code was printed on the operator's terminal (brownout's stderr){already}. Ask the operator for it and call start_experiment again with the same experiment text and `approval_code`"
        )))
    }
}

/// Why a start waits or stops at approval.
pub(super) enum Pending {
    Refused(&'static str, String),
    Asked(String),
    Input(InputRequiredResult),
}

/// What a person is asked to approve: where the load and the faults go, which calls the
/// load makes, every fault (as resolved from its file) with its tools, probability and
/// phase, the seed, the files read, the stages, the gates, the
/// probes' webhooks, the rollbacks — and the title the agent wrote last, cut to 120
/// characters, so a long title cannot push the rest out of sight. Cleaned for a terminal,
/// URLs without credentials.
pub fn what(x: &brownout_experiment::experiment::Loaded, r: &Resolved) -> String {
    let t = &x.spec.target;
    let mut parts = vec![match (&t.command, &t.url) {
        _ if t.fleet.is_some() => format!(
            "target: {} ({})",
            brownout_experiment::experiment::describe_target(t),
            brownout_experiment::experiment::fleet::urls_to_allow(t.fleet.as_ref()).join(", ")
        ),
        (Some(c), _) => format!("target: command `{}`", c.join(" ")),
        (None, Some(u)) => format!("target: {u}"),
        _ => "target: none".into(),
    }];
    if let Some(a) = &t.admin {
        parts.push(format!("faults through the admin API {a}"));
    }
    if let Some(v) = &t.admin_token_env {
        parts.push(format!("admin token from ${v}"));
    }
    let calls: Vec<String> = x
        .workload
        .steps
        .iter()
        .flat_map(|s| &s.calls)
        .map(|c| {
            let args = c
                .arguments
                .as_ref()
                .map(|a| serde_json::to_string(a).unwrap_or_default())
                .unwrap_or_default();
            super::audit::clean_n(&format!("{} {args}", c.tool), 80)
        })
        .collect();
    parts.push(format!(
        "load: {} session(s) calling {}",
        x.spec.load.sessions.unwrap_or(16),
        calls.join(", ")
    ));
    let faults: Vec<String> = x.plan_doc["faults"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            let mut d = f.clone();
            if let Some(m) = d.as_object_mut() {
                m.remove("id");
            }
            super::audit::clean_n(&d.to_string(), 160)
        })
        .collect();
    parts.push(format!("faults: {}", faults.join("; ")));
    let seed = r.seed.or_else(|| x.plan_doc["seed"].as_u64()).unwrap_or(0);
    parts.push(format!(
        "seed: {seed}{}",
        if r.seed.is_some() {
            " (the call's)"
        } else {
            ""
        }
    ));
    if !r.files.is_empty() {
        parts.push(format!("files read: {}", r.files_text()));
    }
    let stages: Vec<String> = x
        .spec
        .method
        .iter()
        .map(|s| format!("{} for {}", s.sessions.0, s.duration.0))
        .collect();
    parts.push(format!("stages: {}", stages.join(" → ")));
    parts.push(format!("gates: {}", x.gates_text()));
    for p in x
        .spec
        .steady_state
        .iter()
        .filter_map(|p| p.webhook.as_ref())
    {
        parts.push(format!("probe alerts to {p}"));
    }
    if !x.spec.rollbacks.is_empty() {
        let r: Vec<String> = x
            .spec
            .rollbacks
            .iter()
            .map(|r| r.command.join(" "))
            .collect();
        parts.push(format!("rollbacks: {}", r.join(" | ")));
    }
    parts.push(format!(
        "title: \"{}\"",
        super::audit::clean_n(&x.spec.title, 120)
    ));
    parts
        .iter()
        .map(|p| super::audit::redact(p))
        .collect::<Vec<_>>()
        .join(" · ")
}
