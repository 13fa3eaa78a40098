//! `brownout proxy stdio|http`: the relay commands' arguments and their set-up — the plan,
//! the engine, the event log, reloads, the admin API — and the relays they start.

use brownout::control::{self, admin, Control};
use brownout::relay::child::ChildSpec;
use brownout::relay::framing::DEFAULT_MAX_MESSAGE;
use brownout::relay::{self, Relay, RelayOptions};
use brownout::{events, plan_cmd};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Subcommand)]
pub(crate) enum Proxy {
    /// Speak MCP on stdin/stdout and run the server as a child process.
    ///
    /// A client starts `brownout proxy stdio --plan P -- CMD ARGS` where it would start
    /// `CMD ARGS`. Unmodified messages pass byte for byte and in order; the server's stderr
    /// passes through; brownout exits with the server's status.
    ///
    /// The plan file is reread on SIGHUP, and with --watch whenever it changes; a broken
    /// edit keeps the running plan and says why.
    ///
    /// Example:
    ///   brownout proxy stdio --plan examples/demo-plan.yaml --events run.jsonl -- brownout fixture
    ///   brownout proxy stdio --plan plan.yaml --watch -- python my_server.py
    ///   brownout proxy stdio --plan plan.yaml --upstream https://tools.example/mcp
    #[command(
        verbatim_doc_comment,
        override_usage = "brownout proxy stdio [OPTIONS] -- <CMD> [ARGS]...\n       brownout proxy stdio [OPTIONS] --upstream <URL>"
    )]
    Stdio(Box<StdioArgs>),
    /// Serve MCP over streamable HTTP (and legacy HTTP+SSE), relaying to a server at a URL
    /// or to a stdio server started per session.
    ///
    /// Clients connect to --listen (loopback by default) at the same path as the server's
    /// URL. Every JSON-RPC message, in a body or in an SSE event, passes the plan's faults;
    /// HTTP-level faults (http_status, connection, slow_stream, bandwidth, session_expiry,
    /// rate_limit as 429) act on the HTTP exchange. Session ids, event ids, auth headers and
    /// status codes pass untouched. SIGTERM stops accepting and lets streams in flight finish
    /// (--grace).
    ///
    /// Examples:
    ///   brownout proxy http --plan plan.yaml --upstream http://127.0.0.1:3001/mcp --listen 127.0.0.1:8900
    ///   brownout proxy http --plan plan.yaml --listen 127.0.0.1:8900 -- python my_stdio_server.py
    #[command(verbatim_doc_comment)]
    Http(Box<HttpArgs>),
}

#[derive(Args)]
pub(crate) struct HttpArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// The MCP server's URL (streamable HTTP endpoint, or a legacy server's /sse URL).
    #[arg(
        long,
        value_name = "URL",
        conflicts_with = "command",
        required_unless_present = "command"
    )]
    upstream: Option<String>,
    /// Where clients connect. Loopback unless --allow-remote.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8900")]
    listen: std::net::SocketAddr,
    /// Allow --listen beyond loopback (e.g. 0.0.0.0:8900). Anyone who can reach the port can
    /// then use the relay; prefer loopback.
    #[arg(long)]
    allow_remote: bool,
    /// Also accept requests with this Origin (besides loopback origins); `*` for any.
    #[arg(long, value_name = "ORIGIN")]
    allow_origin: Vec<String>,
    /// Also accept requests with this Host (besides loopback names); `*` for any.
    #[arg(long, value_name = "HOST")]
    allow_host: Vec<String>,
    /// Largest request body accepted (413 beyond) and largest server answer relayed.
    #[arg(long, default_value_t = DEFAULT_MAX_MESSAGE)]
    max_body_bytes: usize,
    /// Largest request header section accepted (431 beyond).
    #[arg(long, default_value_t = 64 * 1024)]
    max_header_bytes: usize,
    /// Most concurrent SSE streams (503 beyond).
    #[arg(long, default_value_t = 4096)]
    max_streams: usize,
    /// Most open client connections. At the cap, a new connection closes the one with no
    /// request in flight that has been quiet longest (idle, or still sending its head); when every one has a
    /// request in flight, the new one is closed at once. But a client address holding at
    /// least two connections more than the newcomer's gives up one of its own, even a busy
    /// one: clients flooding or hoarding connections cannot lock others out.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    max_connections: usize,
    /// Worker threads of the relay. One thread (the default) costs the least CPU per call
    /// and answers fastest (BENCHMARKS.md); give more for heavy traffic on a many-core host.
    #[arg(long, env = "BROWNOUT_THREADS", value_name = "N", default_value_t = 1)]
    threads: usize,
    /// Seconds streams in flight get to finish on SIGTERM/SIGINT.
    #[arg(long, default_value_t = 10)]
    grace: u64,
    /// Seconds a client has to send a request's headers once it starts (slow clients are
    /// disconnected).
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    header_timeout: u64,
    /// Seconds a client has to send a request's body (408 beyond).
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    body_timeout: u64,
    /// Seconds a kept-alive connection may sit with no request before it is closed.
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    idle_timeout: u64,
    /// Most sessions at once (503 beyond): with a stdio server (-- CMD) each is a server
    /// process (default 64; DELETE ends one); with --upstream each is the state brownout
    /// keeps per Mcp-Session-Id (default 10000; a session the server refuses keeps none).
    #[arg(long, value_name = "N")]
    max_sessions: Option<usize>,
    /// Seconds after which an idle session is forgotten (no request, no call in flight, no
    /// open GET stream). With a stdio server (-- CMD) its process is stopped too (SIGTERM,
    /// then SIGKILL), so sessions abandoned without DELETE do not pile up.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    session_idle: u64,
    /// A stdio server to start per session instead of --upstream, and its arguments.
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
}

/// Options every relay command shares.
#[derive(Args)]
pub(crate) struct CommonArgs {
    /// The fault plan (YAML, JSON or TOML). Without one, traffic passes untouched.
    #[arg(long)]
    plan: Option<PathBuf>,
    /// Write one JSON line per fault decision and per completed call (see docs/events.md).
    #[arg(long)]
    events: Option<PathBuf>,
    /// Fail closed: if brownout errs on a message, drop it instead of passing it on.
    #[arg(long)]
    strict: bool,
    /// Bound on requests awaiting an answer (oldest are given up first).
    #[arg(long, default_value_t = 10_000)]
    max_pending: usize,
    /// Reload the plan file whenever it changes (it is always reloaded on SIGHUP). An
    /// invalid edit keeps the running plan and says why on stderr.
    #[arg(long, requires = "plan")]
    watch: bool,
    /// Serve the admin API here (live fault control: see docs/admin.md), e.g. 127.0.0.1:9901.
    /// Port 0 picks a free port; the address is printed on stderr.
    #[arg(long, value_name = "ADDR")]
    admin: Option<std::net::SocketAddr>,
    /// Bearer token the admin API requires (needed when --admin is beyond loopback).
    #[arg(long, env = "BROWNOUT_ADMIN_TOKEN", hide_env_values = true)]
    admin_token: Option<String>,
    /// Do not print the summary on exit.
    #[arg(long, short)]
    quiet: bool,
    /// Print the exit summary as one line of JSON on stderr (see docs/events.md).
    #[arg(long, conflicts_with = "quiet")]
    json: bool,
    /// Run the plan with this seed instead of its own (reloads keep it).
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// A label of the environment the relay runs in (repeatable), e.g. `--label env=staging`.
    /// Labels that mark production (as the experiment guardrails define them), or
    /// BROWNOUT_ENV=production, refuse to start without --i-know-this-is-production.
    #[arg(long, value_name = "KEY=VALUE")]
    label: Vec<String>,
    /// Start although the environment is marked production (BROWNOUT_ENV or --label).
    #[arg(long)]
    i_know_this_is_production: bool,
    #[command(flatten)]
    otlp: brownout::otlp_args::OtlpArgs,
}

#[derive(Args)]
pub(crate) struct StdioArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Largest message accepted, in bytes; a larger one is answered with an error.
    #[arg(long, default_value_t = DEFAULT_MAX_MESSAGE)]
    max_message_bytes: usize,
    /// Reach a server at this URL (streamable HTTP) instead of starting one: a stdio client
    /// (a desktop agent) talks to a remote server through the faults.
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    upstream: Option<String>,
    /// With --upstream: most requests (POSTs) in flight to the server at once; beyond it
    /// brownout reads no more from stdin until one is answered.
    #[arg(long, value_name = "N", default_value_t = 64, requires = "upstream")]
    max_in_flight: usize,
    /// The server command and its arguments, after `--` (e.g. `-- python server.py`);
    /// brownout starts it and relays to its stdin/stdout. Or give --upstream instead.
    #[arg(last = true, required_unless_present = "upstream", value_name = "CMD")]
    command: Vec<String>,
}

/// What every relay command sets up before it starts: the plan, the engine, the event
/// log, plan reloads and the admin API.
struct Setup {
    relay: Arc<Relay>,
}

async fn setup(
    c: &CommonArgs,
    idle_session_ttl: Option<std::time::Duration>,
    driver: relay::Driver,
) -> anyhow::Result<Setup> {
    brownout::experiment::production::refuse_unless_overridden(
        &c.label,
        std::env::var("BROWNOUT_ENV").ok().as_deref(),
        c.i_know_this_is_production,
    )?;
    // A plan that does not exist or does not parse stops brownout before anything starts.
    let (plan, plan_text) = match &c.plan {
        Some(p) => (plan_cmd::load(p)?, brownout::input::read_document(p)?),
        None => (brownout_core::Plan::empty(), String::new()),
    };
    if let Some(addr) = &c.admin {
        admin::check_bind(addr, c.admin_token.as_deref())?;
    }
    let events = match &c.events {
        Some(p) => Some(events::EventSink::create(p).await?),
        None => None,
    };
    let opts = RelayOptions {
        strict: c.strict,
        max_pending: Some(c.max_pending),
        idle_session_ttl,
        seed: c.seed,
        driver,
        otlp: c.otlp.start("proxy")?,
    };
    let relay = Arc::new(Relay::new(plan, &opts, events));
    control::otlp_metrics::spawn(&relay);
    if c.plan.is_none() {
        control::reload::spawn_without_plan()?;
    }
    if c.plan.is_some() || c.admin.is_some() {
        let control = Arc::new(match &c.plan {
            Some(p) => Control::new(
                Arc::clone(&relay),
                Some(&plan_text),
                &p.display().to_string(),
            ),
            None => Control::new(Arc::clone(&relay), None, "plan.yaml"),
        }?);
        if let Some(path) = &c.plan {
            control::reload::spawn(Arc::clone(&control), path.clone(), c.watch)?;
        }
        if let Some(addr) = c.admin {
            let bound = admin::serve(control, addr, c.admin_token.clone()).await?;
            eprintln!("brownout: admin API on http://{bound}");
        }
    }
    Ok(Setup { relay })
}

async fn finish(relay: &Relay, c: &CommonArgs) {
    let report = relay.finish().await;
    if let Some(hook) = relay.otlp() {
        // The last figures and spans leave (a few seconds at most), then a line says how
        // many.
        control::otlp_metrics::push_now(relay);
        let otlp = hook.exporter().clone();
        let _ = tokio::task::spawn_blocking(move || otlp.close()).await;
    }
    if c.json {
        match serde_json::to_string(&serde_json::json!({ "summary": report })) {
            Ok(line) => eprintln!("{line}"),
            Err(e) => eprintln!("brownout: cannot write the summary as JSON: {e}"),
        }
    } else if !c.quiet {
        eprint!("brownout summary\n{report}");
    }
}

fn child_spec(command: &[String]) -> anyhow::Result<ChildSpec> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| anyhow::anyhow!("no server command given after --"))?;
    // Found before anything starts: `proxy http -- CMD` starts its servers later, one per
    // session, and would otherwise listen with a server it can never run.
    if relay::child::which(program).is_none() {
        anyhow::bail!(
            "cannot run the server command `{program}`: no such executable (on PATH or as a path)"
        );
    }
    Ok(ChildSpec {
        program: program.clone(),
        args: args.to_vec(),
    })
}

pub(crate) fn proxy_stdio(a: StdioArgs) -> anyhow::Result<i32> {
    let spec = match &a.upstream {
        Some(_) => None,
        None => Some(child_spec(&a.command)?),
    };
    single_thread_runtime()?.block_on(async move {
        use relay::child_back::ChildBack;
        use relay::stdio::driver;
        use relay::url_back::UrlBack;
        let driver = match spec {
            Some(_) => driver::<ChildBack>(),
            None => driver::<UrlBack>(),
        };
        let Setup { relay } = setup(&a.common, None, driver).await?;
        let max = a.max_message_bytes;
        let code = match (spec, &a.upstream) {
            (Some(spec), _) => {
                // One session, so one process; it is never idle while brownout runs.
                let idle = std::time::Duration::from_secs(u32::MAX.into());
                let back = ChildBack::new(spec, Arc::clone(&relay), max, 1, idle);
                relay::stdio::run(Arc::new(back), Arc::clone(&relay), max).await?
            }
            (None, Some(url)) => {
                let upstream = Arc::new(relay::http_back::Upstream::new(url, max)?);
                let back = UrlBack::new(Arc::clone(&relay), upstream, 1)
                    .with_max_in_flight(a.max_in_flight);
                eprintln!("brownout: relaying stdio -> {url}");
                relay::stdio::run(Arc::new(back), Arc::clone(&relay), max).await?
            }
            (None, None) => anyhow::bail!("give a server command after -- or --upstream URL"),
        };
        finish(&relay, &a.common).await;
        Ok(code)
    })
}

pub(crate) fn proxy_http(a: HttpArgs) -> anyhow::Result<i32> {
    use relay::child_back::ChildBack;
    use relay::http_front::driver;
    use relay::url_back::UrlBack;
    if !a.listen.ip().is_loopback() && !a.allow_remote {
        anyhow::bail!(
            "--listen {} is beyond loopback: anyone who can reach it could use the relay; add --allow-remote if that is what you want",
            a.listen
        );
    }
    let spec = if a.upstream.is_none() {
        Some(child_spec(&a.command)?)
    } else {
        None
    };
    let rt = match a.threads {
        0 | 1 => single_thread_runtime()?,
        n => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n)
            .enable_all()
            .build()?,
    };
    rt.block_on(async move {
        // HTTP clients come and go: a session idle for a while is forgotten.
        let idle = std::time::Duration::from_secs(a.session_idle.max(1));
        match (&a.upstream, spec) {
            (Some(url), _) => {
                let Setup { relay } = setup(&a.common, Some(idle), driver::<UrlBack>()).await?;
                let upstream = Arc::new(relay::http_back::Upstream::new(url, a.max_body_bytes)?);
                relay::http_back::warn_if_unreachable(&upstream);
                let back = UrlBack::new(
                    Arc::clone(&relay),
                    upstream,
                    a.max_sessions.unwrap_or(10_000),
                )
                .with_idle(idle);
                let path = back.path().to_string();
                serve_http(&a, relay, Arc::new(back), &path, url).await
            }
            (None, Some(spec)) => {
                let Setup { relay } = setup(&a.common, Some(idle), driver::<ChildBack>()).await?;
                let back = ChildBack::new(
                    spec,
                    Arc::clone(&relay),
                    a.max_body_bytes,
                    a.max_sessions.unwrap_or(64),
                    idle,
                );
                let to = format!("`{}` (one process per session)", a.command.join(" "));
                serve_http(&a, relay, Arc::new(back), "/mcp", &to).await
            }
            (None, None) => anyhow::bail!("give --upstream URL or a server command after --"),
        }
    })
}

/// Serve the HTTP front before `back` until SIGTERM or SIGINT, then print the summary.
/// `path` and `to` say where clients reach brownout and where it relays.
async fn serve_http<B: relay::layers::Back>(
    a: &HttpArgs,
    relay: Arc<Relay>,
    back: Arc<B>,
    path: &str,
    to: &str,
) -> anyhow::Result<i32> {
    use relay::http_front::{Front, FrontOptions};
    let opts = FrontOptions {
        max_body: a.max_body_bytes,
        max_header_bytes: a.max_header_bytes,
        max_streams: a.max_streams,
        max_connections: a.max_connections.max(1),
        allowed_origins: a.allow_origin.clone(),
        allowed_hosts: a.allow_host.clone(),
        grace: std::time::Duration::from_secs(a.grace),
        timeouts: relay::http_serve::Timeouts {
            header: std::time::Duration::from_secs(a.header_timeout.max(1)),
            body: std::time::Duration::from_secs(a.body_timeout.max(1)),
            idle: std::time::Duration::from_secs(a.idle_timeout.max(1)),
        },
    };
    if !a.listen.ip().is_loopback() {
        eprintln!(
            "brownout: warning: listening on {}, beyond loopback (--allow-remote)",
            a.listen
        );
    }
    let front = Arc::new(Front::new(Arc::clone(&relay), back, opts, &a.listen));
    let (bound_tx, bound_rx) = tokio::sync::oneshot::channel();
    // The front stops its back (the servers it started) when it stops.
    let server = tokio::spawn(relay::http_front::serve(
        front,
        a.listen,
        bound_tx,
        shutdown_signal(),
    ));
    match bound_rx.await {
        Ok(addr) => eprintln!("brownout: relaying http://{addr}{path} -> {to}"),
        Err(_) => return server.await?.map(|_| 2),
    }
    server.await??;
    finish(&relay, &a.common).await;
    Ok(0)
}

/// Resolves on the first SIGTERM or SIGINT.
async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    eprintln!("brownout: stopping: no new connections; streams in flight may finish");
}

/// One thread is plenty for moving lines between two pipes, and it saves a cross-thread
/// wake-up on every hand-off.
pub fn single_thread_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}
