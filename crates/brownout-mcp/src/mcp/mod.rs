//! `brownout mcp`: brownout as an MCP server, so an agent can design, simulate and run
//! experiments inside guardrails that brownout — not the agent — enforces (docs/mcp.md).
//!
//! - [`server`]: the MCP handler (rmcp): tools and resources; [`start`]: `start_experiment`
//!   (guardrails, a person's approval, the run);
//! - [`catalogue`]: every tool's schemas and annotations; [`args`]: every call's arguments
//!   checked against its tool's input schema;
//! - [`read`], [`describe`], [`design`] (with [`history`]: what the store knows of a
//!   target), [`recommend`]: the read-only tools;
//! - [`runs`]: experiments started through MCP (child `brownout run`s, leases);
//!   [`gameday`]: `start_gameday`/`get_gameday` (a child `brownout gameday`, same rules);
//! - [`guard`], [`approval`], [`binding`], [`audit`]: the guardrails, a person's approval
//!   (bound to the resolved experiment: its files, the seed), the audit log;
//! - [`compact`]: a journal summarised for an agent's context; [`http`]: the HTTP listener.

pub mod approval;
pub mod args;
pub mod audit;
pub mod binding;
pub mod catalogue;
pub mod compact;
pub mod describe;
pub mod design;
pub mod gameday;
pub mod guard;
pub mod http;
pub mod http_limits;
pub mod intake;
pub mod ladder_skip;
pub mod progress;
pub mod read;
pub mod recommend;
pub mod resources;
pub mod runs;
pub mod server;
pub mod start;
pub mod work_bounds;

use brownout_experiment::experiment::policy::Policy;
use clap::Args;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Serve brownout as an MCP server (stdio by default, or streamable HTTP).
///
/// An agent connected to it can list fault kinds, validate plans and experiments, simulate,
/// search for the barely-violating fault, read past runs, describe a target server and have
/// experiments designed for it — all read-only. With --allow-run it can also start, watch
/// and stop live experiments, inside guardrails it cannot change: the operator's policy
/// (production labels refused, a numeric gate, the blast-radius ladder against the store's
/// history, caps), at most N runs at once, a person's approval for every run (a one-time
/// code printed here on stderr; over stdio an elicitation form in the client instead),
/// bound to the whole resolved experiment (its files, the seed), a lease the client renews,
/// and every run stops when the MCP session ends. Every mutating call is audited.
///
/// Examples:
///   brownout mcp                                   read-only, over stdio (a desktop agent)
///   brownout mcp --allow-run --policy policy.yaml  live runs too, within that policy
///   brownout mcp --http 127.0.0.1:8920             streamable HTTP at http://127.0.0.1:8920/mcp
///
/// Exit codes: 0 the client went away (stdio) or a signal stopped it, every run stopped
/// first; 2 bad usage or input (an unreadable policy, a listener that cannot bind, an
/// address beyond loopback without --allow-remote, an empty --token). The tools, the guardrails and a desktop
/// agent's configuration: docs/mcp.md.
#[derive(Args, Debug, Clone)]
#[command(verbatim_doc_comment)]
pub struct McpArgs {
    /// Serve streamable HTTP on this address (path /mcp) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// Offer the tools that start and stop live experiments (otherwise not even listed).
    #[arg(long)]
    pub allow_run: bool,
    /// The guardrail policy (read once, now; no MCP call can change it). Default: the
    /// built-in policy (see docs/experiments.md#guardrails).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// The journal store read and written: a SQLite file or a postgres:// URL (default as
    /// `brownout journal`).
    #[arg(long, value_name = "PATH|URL", value_parser = brownout_store::store::location::parse_arg)]
    pub store: Option<PathBuf>,
    /// The audit log (JSON lines; default: mcp-audit.jsonl beside the store).
    #[arg(long, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    /// How a person approves a live run. `auto`: over stdio (the local app that started
    /// brownout) an elicitation form in the client where it supports one, else the
    /// operator's one-time code; over HTTP always the one-time code. `code`: always the
    /// one-time code (shown only on this terminal and in --approvals FILE). `elicitation`:
    /// the client's form over HTTP too — any HTTP client that declares elicitation can then
    /// approve its own runs (warned at start; docs/mcp.md#threat-model).
    #[arg(long, value_enum, default_value = "auto")]
    pub approval: ApprovalMode,
    /// Also append approval codes to this file (they are always printed on stderr).
    #[arg(long, value_name = "FILE")]
    pub approvals: Option<PathBuf>,
    /// A run's lease: a run not renewed for this long is stopped.
    #[arg(long, default_value = "60s", value_parser = brownout_core::duration::parse_flag)]
    pub lease: Duration,
    /// Where experiments' relative paths (workloads, plans) are read from (default: here).
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    /// Listen beyond loopback (needs --token).
    #[arg(long, requires = "token")]
    pub allow_remote: bool,
    /// The bearer token HTTP clients must send (or BROWNOUT_MCP_TOKEN); an empty one is
    /// refused at start.
    #[arg(long, env = "BROWNOUT_MCP_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// A browser Origin allowed besides loopback (repeatable).
    #[arg(long, value_name = "ORIGIN")]
    pub allow_origin: Vec<String>,
    /// A Host allowed besides loopback (repeatable).
    #[arg(long, value_name = "HOST")]
    pub allow_host: Vec<String>,
    /// Sessions, connections and timeouts of the HTTP listener; a simulation's time
    /// (docs/mcp.md#resource-bounds).
    #[command(flatten)]
    pub bounds: http_limits::Bounds,
}

/// How a person approves a live run.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalMode {
    Auto,
    Code,
    Elicitation,
}

impl ApprovalMode {
    /// Whether the client's own elicitation form may approve a run, for this transport:
    /// `auto` trusts it only over stdio, where the client is the app that started brownout.
    pub fn client_form_trusted(self, http: bool) -> bool {
        match self {
            ApprovalMode::Auto => !http,
            ApprovalMode::Code => false,
            ApprovalMode::Elicitation => true,
        }
    }
}

/// The longest experiment, plan or workload text a call may carry (bytes).
pub const MAX_TEXT: usize = 256 * 1024;

/// What the server was started with: fixed for its life.
pub struct Config {
    /// Whether the client's elicitation form may approve a run (`--approval` and the
    /// transport: never over HTTP unless `--approval elicitation`); else only the
    /// operator's one-time code.
    pub client_form_approves: bool,
    pub policy: Policy,
    pub policy_file: Option<PathBuf>,
    pub allow_run: bool,
    pub store: Option<PathBuf>,
    pub lease: Duration,
    pub workdir: PathBuf,
    /// This server's own files (runs, the policy in force, scratch).
    pub dir: tempfile::TempDir,
}

impl Config {
    pub fn scratch(&self) -> &Path {
        self.dir.path()
    }
}

/// What every call can reach.
#[derive(Clone)]
pub struct Ctx {
    pub cfg: Arc<Config>,
    /// The tools listed (built once from the catalogue: `--allow-run` decides which).
    pub tools: Arc<Vec<rmcp::model::Tool>>,
    pub runs: Arc<runs::Runs>,
    pub audit: Arc<audit::Audit>,
    pub approvals: Arc<approval::Approvals>,
    /// Runs offered as tasks (the client declared the tasks extension): task id → run id.
    pub tasks: rmcp::task_manager::TaskManager,
    pub task_runs: Arc<std::sync::Mutex<std::collections::HashMap<String, String>>>,
}

impl Ctx {
    /// Would the guardrails (all but concurrency and approval) let this experiment run?
    pub fn policy_verdict(
        &self,
        x: &brownout_experiment::experiment::Loaded,
    ) -> Result<(), brownout_experiment::experiment::Refusal> {
        guard::check(&self.cfg, x)
    }
}

/// Build the server's state from its arguments.
pub fn context(a: &McpArgs) -> anyhow::Result<Ctx> {
    let mut policy = match &a.policy {
        None => Policy::default(),
        Some(p) => {
            let text = brownout_relay::input::read_document(p)
                .map_err(|e| anyhow::anyhow!("cannot read the policy: {e}"))?;
            Policy::from_str_named(&text, &p.display().to_string())
                .map_err(|e| anyhow::anyhow!("{e}"))?
        }
    };
    work_bounds::set_sim_time(a.bounds.max_sim_time);
    // Through MCP the ladder always counts the store's history.
    policy.ladder_from_history = true;
    let dir = tempfile::Builder::new().prefix("brownout-mcp-").tempdir()?;
    let policy_file = dir.path().join("policy-in-force.json");
    std::fs::write(&policy_file, serde_json::to_vec_pretty(&policy)?)?;
    let workdir = match &a.workdir {
        Some(d) => d
            .canonicalize()
            .map_err(|e| anyhow::anyhow!("--workdir {}: {e}", d.display()))?,
        None => std::env::current_dir()?,
    };
    let audit_path = a
        .audit
        .clone()
        .unwrap_or_else(|| audit::default_path(a.store.as_deref()));
    let audit = Arc::new(
        audit::Audit::open(&audit_path)
            .map_err(|e| anyhow::anyhow!("the audit log {}: {e}", audit_path.display()))?,
    );
    let runs_dir = dir.path().join("runs");
    std::fs::create_dir_all(&runs_dir)?;
    let runs = runs::Runs::new(
        runs_dir,
        workdir.clone(),
        policy_file,
        a.store.clone(),
        audit.clone(),
    )?;
    let cfg = Arc::new(Config {
        client_form_approves: a.approval.client_form_trusted(a.http.is_some()),
        policy,
        policy_file: a.policy.clone(),
        allow_run: a.allow_run,
        store: a.store.clone(),
        lease: a.lease,
        workdir,
        dir,
    });
    let tools = catalogue::listed(cfg.allow_run)
        .into_iter()
        .map(serde_json::from_value)
        .collect::<Result<Vec<rmcp::model::Tool>, _>>()?;
    Ok(Ctx {
        tools: Arc::new(tools),
        cfg,
        runs,
        audit,
        approvals: Arc::new(approval::Approvals::new(a.approvals.clone())),
        tasks: rmcp::task_manager::TaskManager::new(),
        task_runs: Arc::default(),
    })
}

/// `brownout mcp`: serve until the client goes away or a signal; every run stopped first.
pub fn run(a: McpArgs) -> anyhow::Result<i32> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let code = rt.block_on(async move {
        let ctx = match context(&a) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("brownout mcp: {e:#}");
                return Ok(2);
            }
        };
        ctx.runs.watch_leases();
        if a.http.is_some() && a.approval == ApprovalMode::Elicitation && a.allow_run {
            eprintln!(
                "brownout mcp: WARNING: --approval elicitation over HTTP: any client that declares elicitation can approve its own live runs; the approver's name is only what the client says (docs/mcp.md#threat-model)"
            );
        }
        eprintln!(
            "brownout mcp: {} tools{}; audit log {}",
            catalogue::listed(ctx.cfg.allow_run).len(),
            if ctx.cfg.allow_run {
                " (live runs allowed, each approved by a person)"
            } else {
                ", read-only"
            },
            ctx.audit.path().display()
        );
        let code = match &a.http {
            Some(addr) => http::serve(ctx.clone(), addr, &a).await?,
            None => server::serve_stdio(ctx.clone()).await?,
        };
        let stopped = ctx.runs.stop_all(None, "brownout mcp is stopping");
        if !stopped.is_empty() {
            eprintln!(
                "brownout mcp: stopping {} run(s): faults out, rollbacks",
                stopped.len()
            );
        }
        ctx.runs.wait_all(Duration::from_secs(60)).await;
        Ok::<i32, anyhow::Error>(code)
    });
    // A simulation still computing on a blocking thread does not hold the exit.
    rt.shutdown_timeout(Duration::from_secs(1));
    code
}

/// SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut t), Ok(mut i)) => {
            tokio::select! {
                _ = t.recv() => {}
                _ = i.recv() => {}
            }
        }
        _ => std::future::pending().await,
    }
}
