//! The MCP handler (the official Rust SDK, `rmcp`): lists the catalogue's tools (the run
//! tools only with `--allow-run`), dispatches calls, asks a person to approve live runs, and
//! serves runs, the policy and the fault-kind catalogue as resources. One handler per MCP
//! session; when the session ends (stdio closed, HTTP session deleted or expired) the runs
//! it started are stopped.

use super::audit::Entry;
use super::read::{self, Out};
use super::{catalogue, Ctx};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ElicitRequest, ElicitRequestParams,
    ElicitationSchema, Implementation, InputRequest, InputRequiredResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use std::borrow::Cow;
use std::sync::Arc;

/// Stops a session's runs when the last handle on the session goes.
struct SessionGuard {
    id: String,
    ctx: Ctx,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        for id in self
            .ctx
            .runs
            .stop_all(Some(&self.id), "the MCP session ended")
        {
            self.ctx.audit.write(Entry {
                session: self.id.clone(),
                tool: "session".into(),
                decision: "session_ended".into(),
                rule: Some("session".into()),
                detail: "the MCP session ended: run stopped, faults removed".into(),
                run_id: Some(id),
                ..Entry::default()
            });
        }
    }
}

/// One MCP session's handler.
#[derive(Clone)]
pub struct McpServer {
    ctx: Ctx,
    guard: Arc<SessionGuard>,
}

/// A new session id (for the audit log and for tying runs to their session).
fn session_id() -> String {
    let mut b = [0u8; 6];
    let _ = getrandom::fill(&mut b);
    format!(
        "s-{}",
        b.iter().map(|x| format!("{x:02x}")).collect::<String>()
    )
}

impl McpServer {
    pub fn new(ctx: Ctx) -> McpServer {
        let guard = Arc::new(SessionGuard {
            id: session_id(),
            ctx: ctx.clone(),
        });
        McpServer { ctx, guard }
    }

    fn tools(&self) -> Vec<Tool> {
        catalogue::listed(self.ctx.cfg.allow_run)
            .into_iter()
            .filter_map(|t| serde_json::from_value(t).ok())
            .collect()
    }
}

/// Serve one session over stdio until the client closes it.
pub async fn serve_stdio(ctx: Ctx) -> anyhow::Result<i32> {
    let server = McpServer::new(ctx);
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| anyhow::anyhow!("the MCP session could not start: {e}"))?;
    tokio::select! {
        r = running.waiting() => { let _ = r; }
        _ = super::shutdown_signal() => {}
    }
    Ok(0)
}

/// A result with structured content (and its text, for clients that read only text).
fn result(v: Value, is_error: bool) -> CallToolResult {
    let text = serde_json::to_string_pretty(&v).unwrap_or_default();
    let content = vec![rmcp::model::ContentBlock::text(text)];
    let mut r = if is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    r.structured_content = Some(v);
    r
}

/// A tool error the agent reads (bad arguments, a failed read).
fn error_text(message: String) -> CallToolResult {
    CallToolResult::error(vec![rmcp::model::ContentBlock::text(message)])
}

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

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let caps = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .build();
        ServerConfig::new(caps)
            .with_server_info(
                Implementation::new("brownout", env!("CARGO_PKG_VERSION"))
                    .with_title("brownout — chaos engineering for the MCP tool-call plane"),
            )
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
            .with_instructions(
                "brownout breaks the MCP tool-call plane on purpose and measures the result. \
                 Start with list_fault_kinds and describe_target, then design_experiments; \
                 validate_experiment and simulate before anything live. get_policy shows the \
                 guardrails in force: they are the operator's and cannot be changed here.",
            )
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Owned(vec![
            ProtocolVersion::V_2025_06_18,
            ProtocolVersion::V_2025_11_25,
            ProtocolVersion::V_2026_07_28,
        ])
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let listed = catalogue::listed(self.ctx.cfg.allow_run);
        if !listed.iter().any(|t| t["name"] == name.as_str()) {
            let why = if catalogue::RUN_TOOLS.contains(&name.as_str()) {
                format!("`{name}` is off: the operator started brownout mcp without --allow-run")
            } else {
                format!("no tool `{name}` (tools/list has them all)")
            };
            return Err(McpError::invalid_params(why, None));
        }
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        if name == "start_experiment" {
            return self.start(&request, &args, &context).await;
        }
        let ctx = self.ctx.clone();
        let session = self.guard.id.clone();
        let client = client_name(&context);
        let out: Out = match name.as_str() {
            "describe_target" => super::describe::describe(&ctx, &args).await,
            "design_experiments" => super::design::design(&ctx, &args).await,
            _ => {
                let n = name.clone();
                tokio::task::spawn_blocking(move || sync_tool(&ctx, &n, &args, &session, &client))
                    .await
                    .map_err(|e| McpError::internal_error(e.to_string(), None))?
            }
        };
        Ok(CallToolResponse::Complete(match out {
            Ok(v) => result(v, false),
            Err(m) => error_text(m),
        }))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let ctx = self.ctx.clone();
        let v = tokio::task::spawn_blocking(move || super::resources::list(&ctx))
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        serde_json::from_value(v).map_err(|e| McpError::internal_error(e.to_string(), None))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        serde_json::from_value(super::resources::templates())
            .map_err(|e| McpError::internal_error(e.to_string(), None))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let ctx = self.ctx.clone();
        let uri = request.uri.to_string();
        let v = tokio::task::spawn_blocking(move || super::resources::read(&ctx, &uri))
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), None))?
            .map_err(|m| McpError::resource_not_found(m, None))?;
        let r: ReadResourceResult =
            serde_json::from_value(v).map_err(|e| McpError::internal_error(e.to_string(), None))?;
        Ok(ReadResourceResponse::Complete(r))
    }
}

fn client_name(context: &RequestContext<RoleServer>) -> String {
    context
        .client_info()
        .map(|i| format!("{} {}", i.name, i.version))
        .unwrap_or_else(|| "unknown".into())
}

/// The tools that only compute or read (run on a blocking thread).
fn sync_tool(ctx: &Ctx, name: &str, args: &Value, session: &str, client: &str) -> Out {
    let audit = |decision: &str, detail: String, run_id: Option<String>| {
        ctx.audit.write(Entry {
            session: session.to_string(),
            client: client.to_string(),
            tool: name.to_string(),
            decision: decision.to_string(),
            detail,
            run_id,
            ..Entry::default()
        })
    };
    match name {
        "list_fault_kinds" => read::list_fault_kinds(),
        "validate_plan" => read::validate_plan(args),
        "validate_experiment" => read::validate_experiment(ctx, args),
        "simulate" => read::simulate(args),
        "find_boundary" => read::find_boundary(ctx, args),
        "get_policy" => read::get_policy(ctx),
        "list_runs" => read::list_runs(ctx, args),
        "get_run" => read::get_run(ctx, args),
        "query_runs" => read::query_runs(ctx, args),
        "trend" => read::trend(ctx, args),
        "recommend" => super::recommend::recommend(ctx, args),
        "get_experiment" => {
            let id = read::str_arg(args, "run_id")?;
            ctx.runs
                .get(id)
                .ok_or_else(|| format!("no run {id} was started by this server"))
        }
        "renew_lease" => {
            let id = read::str_arg(args, "run_id")?;
            let r = ctx.runs.renew(id, session);
            match &r {
                Ok(_) => audit("renewed", "lease renewed".into(), Some(id.into())),
                Err(e) => audit("refused", e.clone(), Some(id.into())),
            }
            r.and_then(|h| serde_json::to_value(h).map_err(|e| e.to_string()))
        }
        "stop_experiment" => {
            let id = read::str_arg(args, "run_id")?;
            let st = ctx
                .runs
                .stop(id, "stop_experiment")
                .ok_or_else(|| format!("no run {id} was started by this server"))?;
            let state = match st {
                super::runs::State::Running => "running",
                super::runs::State::Stopping { .. } => "stopping",
                super::runs::State::Ended { .. } => "ended",
            };
            audit(
                "stopped",
                format!("stop_experiment: the run is {state}"),
                Some(id.into()),
            );
            Ok(
                json!({"run_id": id, "state": state, "detail": "faults are removed at once, then the rollbacks run; get_experiment shows the end"}),
            )
        }
        "stop_all" => {
            let stopped = ctx.runs.stop_all(None, "stop_all");
            audit(
                "stopped",
                format!("stop_all: {} run(s)", stopped.len()),
                None,
            );
            Ok(json!({ "stopped": stopped }))
        }
        other => Err(format!("no tool `{other}`")),
    }
}

/// The key under which the approval form is asked in a multi-round-trip result.
const APPROVAL_KEY: &str = "approval";

impl McpServer {
    /// `start_experiment`: validate, guardrails, a person's approval, then the run.
    async fn start(
        &self,
        request: &CallToolRequestParams,
        args: &Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let ctx = &self.ctx;
        // Stateless requests (2026-07-28) have no session to end: their runs hold the lease.
        let legacy = !context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        let session = if legacy {
            self.guard.id.clone()
        } else {
            "stateless".into()
        };
        let client = client_name(context);
        let mut entry = Entry {
            session: session.clone(),
            client: client.clone(),
            tool: "start_experiment".into(),
            ..Entry::default()
        };
        let decide = |entry: &mut Entry, decision: &str, rule: Option<&str>, detail: String| {
            entry.decision = decision.into();
            entry.rule = rule.map(String::from);
            entry.detail = detail.clone();
            ctx.audit.write(entry.clone());
            let v = json!({"decision": decision, "rule": rule, "detail": detail});
            Ok(CallToolResponse::Complete(result(
                v,
                decision != "started" && decision != "approval_required",
            )))
        };
        for forbidden in ["policy", "policy_file", "allow_run", "approved", "confirm"] {
            if args.get(forbidden).is_some() {
                return decide(
                    &mut entry,
                    "refused",
                    Some("policy_fixed"),
                    format!("`{forbidden}` cannot be set through MCP: the policy and approvals are the operator's (get_policy shows them)"),
                );
            }
        }
        let Some(text) = args["experiment"].as_str() else {
            return decide(
                &mut entry,
                "invalid",
                None,
                "`experiment` (the experiment's text) is required".into(),
            );
        };
        entry.digest = Some(super::audit::digest(text));
        let file = if text.trim_start().starts_with('{') {
            "experiment.json"
        } else {
            "experiment.yaml"
        };
        let x = match crate::experiment::load::load_text(text, file, &ctx.cfg.workdir) {
            Ok(x) => x,
            Err(e) => {
                entry.decision = "invalid".into();
                entry.detail = format!("{} error(s)", e.errors.len());
                ctx.audit.write(entry);
                let v = json!({"decision": "invalid", "rule": null, "detail": e.to_string(), "errors": read::errors_json(&e)});
                return Ok(CallToolResponse::Complete(result(v, true)));
            }
        };
        entry.experiment = Some(x.spec.title.clone());
        let checked = ctx
            .policy_verdict(&x)
            .and_then(|()| super::guard::capacity(&ctx.cfg, ctx.runs.active()));
        if let Err(r) = checked {
            return decide(&mut entry, "refused", Some(&r.rule), r.detail);
        }
        // A person approves: the code the operator read, a form in the client, or a form
        // returned as a multi-round-trip input request (2026-07-28).
        let digest = entry.digest.clone().unwrap_or_default();
        let approver = match self
            .approval(request, args, context, &x.spec.title, &digest)
            .await
        {
            Ok(who) => who,
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
        // The guardrails again: time passed while the person decided.
        if let Err(r) = ctx
            .policy_verdict(&x)
            .and_then(|()| super::guard::capacity(&ctx.cfg, ctx.runs.active()))
        {
            return decide(&mut entry, "refused", Some(&r.rule), r.detail);
        }
        let started = ctx.runs.start(super::runs::Start {
            text,
            title: &x.spec.title,
            session: &session,
            seed: args["seed"].as_u64(),
            lease: ctx.cfg.lease,
        });
        match started {
            Ok(h) => {
                entry.run_id = Some(h.run_id.clone());
                entry.decision = "started".into();
                entry.rule = None;
                entry.detail =
                    format!("approved by {}", entry.approver.clone().unwrap_or_default());
                ctx.audit.write(entry);
                let mut v = serde_json::to_value(&h).unwrap_or_default();
                v["decision"] = "started".into();
                v["detail"] = format!(
                    "running; renew the lease (renew_lease) within {:.0}s or the run stops; get_experiment shows it live",
                    h.lease_seconds
                )
                .into();
                Ok(CallToolResponse::Complete(result(v, false)))
            }
            Err(e) => decide(
                &mut entry,
                "refused",
                Some("start"),
                format!("the run could not start: {e}"),
            ),
        }
    }

    /// Get a person's approval; `Ok(approver)` or why not yet.
    async fn approval(
        &self,
        request: &CallToolRequestParams,
        args: &Value,
        context: &RequestContext<RoleServer>,
        title: &str,
        digest: &str,
    ) -> Result<String, Pending> {
        let ctx = &self.ctx;
        if let Some(code) = args["approval_code"].as_str() {
            return match ctx.approvals.check(digest, code) {
                super::approval::Check::Approved => Ok("operator (one-time code)".into()),
                super::approval::Check::Wrong => Err(Pending::Refused("approval", "the approval code is wrong (after 3 wrong codes it is withdrawn)".into())),
                super::approval::Check::NonePending => Err(Pending::Refused("approval", "no approval code is pending for this experiment's text (codes are single-use, expire after 10 minutes and are bound to the exact text): call start_experiment without a code to ask for one".into())),
            };
        }
        let message = format!(
            "brownout: an agent asks to run the live experiment \"{title}\" ({digest}). Approve it?"
        );
        let stateless = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        let caps = context.client_capabilities();
        let form = !ctx.cfg.approval_code_only
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
                    .is_some_and(|n| ctx.approvals.answered(n, digest));
                let ok = asked
                    && answers.get(APPROVAL_KEY).is_some_and(|a| {
                        a["action"] == "accept" && a["content"]["approve"] == Value::Bool(true)
                    });
                if ok {
                    let who = answers[APPROVAL_KEY]["content"]["approver"]
                        .as_str()
                        .unwrap_or("the client's user");
                    return Ok(format!("{who} (elicitation)"));
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
                .ask(digest)
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
                Ok(Some(a)) if a.approve => Ok(format!(
                    "{} (elicitation)",
                    a.approver.unwrap_or_else(|| "the client's user".into())
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
        ctx.approvals
            .issue(digest, title, session)
            .map_err(|e| Pending::Refused("approval", e))?;
        Err(Pending::Asked(
            "a person must approve this live run: a one-time code was printed on the operator's terminal (brownout's stderr). Ask the operator for it and call start_experiment again with the same experiment and `approval_code`".into(),
        ))
    }
}

/// Why a start waits or stops at approval.
enum Pending {
    Refused(&'static str, String),
    Asked(String),
    Input(InputRequiredResult),
}
