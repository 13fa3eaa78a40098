//! `brownout load`: play a workload against a live MCP server and report what happened.

use super::stats::{Histogram, LoadSummary};
use super::{LoadEvent, LoadOptions, LoadTarget};
use anyhow::Context;
use brownout_sim::Workload;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Exit code: the load ran (its calls may have failed: read the summary).
pub const EXIT_OK: i32 = 0;
/// Exit code: bad usage or an invalid workload file.
pub const EXIT_BAD_INPUT: i32 = 2;
/// Exit code: the target could not be started or did not initialize.
pub const EXIT_TARGET: i32 = 4;
/// Exit code: stopped by SIGINT or SIGTERM (the summary covers what ran).
pub const EXIT_INTERRUPTED: i32 = 130;

/// Play a workload against a live MCP server with brownout's own MCP clients
///
/// The workload is the simulator's format (docs/simulator.md) — tasks of steps of parallel
/// tool calls, open- or closed-loop arrivals, think time, deadlines, the client's timeout,
/// retries, breaker and rate limiter — with each call's `arguments`. An argument
/// `{from: TOOL, path: /POINTER}` takes a value from an earlier step's result, and
/// `client.agent.policy` (trust, validate, verify) says how the agent checks such results
/// (docs/load.md). The same file runs in `brownout sim`. Every session is a real MCP session (initialize, then calls): over stdio
/// each is a process started from the command after `--`; over HTTP each is its own
/// Mcp-Session-Id at --url. Latency is measured from each call's intended start, so a
/// stalled server shows as latency, not as fewer calls.
///
/// Progress: a line per second on a terminal (calls/s, errors, p99). Summary at the end,
/// or JSON with --json. Exit codes: 0 the load ran (calls may have failed); 2 bad usage or
/// workload; 4 the target could not be started or initialized; 130 interrupted.
///
/// Examples:
///   brownout load examples/workloads/incident-agent.yaml --duration 10s -- brownout fixture
///   brownout load w.yaml --sessions 8 -- brownout proxy stdio --plan plan.yaml -- python server.py
///   brownout load w.yaml --url http://127.0.0.1:8900/mcp --sessions 64 --duration 30s --json
#[derive(clap::Args, Debug)]
#[command(
    verbatim_doc_comment,
    override_usage = "brownout load [OPTIONS] WORKLOAD -- <CMD> [ARGS]...\n       brownout load [OPTIONS] WORKLOAD --url <URL>"
)]
pub struct LoadArgs {
    /// The workload file (YAML, JSON or TOML; see docs/load.md).
    pub workload: PathBuf,
    /// A streamable-HTTP MCP endpoint to load instead of a command.
    #[arg(
        long,
        value_name = "URL",
        conflicts_with = "command",
        required_unless_present = "command"
    )]
    pub url: Option<String>,
    /// An HTTP header for every request, `NAME: VALUE` (repeatable), e.g. an Authorization.
    #[arg(long = "header", value_name = "NAME: VALUE", requires = "url")]
    pub headers: Vec<String>,
    /// Sessions at once: processes over stdio, MCP sessions over HTTP. Tasks are spread
    /// over them round robin.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub sessions: usize,
    /// Run this long (e.g. 30s, 2m), whatever the workload's `tasks`.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Run this many tasks instead of the workload's `tasks` (without --duration).
    #[arg(long, value_name = "N", conflicts_with = "duration")]
    pub tasks: Option<u64>,
    /// Seed for arrivals and retry jitter instead of the workload's `seed`.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Print the summary as JSON on stdout, and no progress.
    #[arg(long)]
    pub json: bool,
    /// The stdio server command (started once per session) and its arguments, after `--`.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
    #[command(flatten)]
    pub otlp: crate::otlp_args::OtlpArgs,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    brownout_core::duration::parse_flag(s)
}

/// Read a workload for live load (`servers` optional).
pub fn load_workload(path: &Path) -> anyhow::Result<Workload> {
    let text = brownout_relay::input::read_document(path).context("cannot read the workload")?;
    Workload::from_str_live(&text, &path.display().to_string()).map_err(|e| anyhow::anyhow!("{e}"))
}

pub fn target(a: &LoadArgs) -> anyhow::Result<LoadTarget> {
    match &a.url {
        Some(url) => {
            let mut headers = Vec::new();
            for h in &a.headers {
                let (k, v) = h.split_once(':').with_context(|| {
                    format!("--header `{h}` is not `NAME: VALUE` (e.g. `Authorization: Bearer x`)")
                })?;
                headers.push((k.trim().to_string(), v.trim().to_string()));
            }
            Ok(LoadTarget::Http {
                url: url.clone(),
                headers,
            })
        }
        None if a.command.is_empty() => {
            anyhow::bail!("give a server command after -- or --url URL")
        }
        None => Ok(LoadTarget::Stdio {
            command: a.command.clone(),
        }),
    }
}

/// Run the command; the exit code follows the constants above.
pub fn run(a: LoadArgs) -> anyhow::Result<i32> {
    let mut workload = match load_workload(&a.workload) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("brownout: {e:#}");
            return Ok(EXIT_BAD_INPUT);
        }
    };
    if let Some(n) = a.tasks {
        workload.tasks = Some(n.max(1));
    }
    let target = target(&a)?;
    let otlp = a.otlp.start("load")?;
    let spans = otlp
        .clone()
        .map(|o| super::otel::LoadSpans::start(o, a.sessions.max(1)));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let cancel = CancellationToken::new();
        let interrupted = spawn_signals(cancel.clone());
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let show = !a.json && std::io::stderr().is_terminal();
        let trace = spans.as_ref().map(super::otel::LoadSpans::tracer);
        let progress = tokio::spawn(progress(rx, show, spans));
        let opts = LoadOptions {
            sessions: a.sessions.max(1),
            duration: a.duration,
            seed: a.seed,
            cancel,
            trace,
        };
        let result = super::run(&workload, target, opts, tx).await;
        let _ = progress.await;
        if let Some(otlp) = &otlp {
            let otlp = otlp.clone();
            let _ = tokio::task::spawn_blocking(move || otlp.close()).await;
        }
        let summary = match result {
            Ok(s) => s,
            Err(e) => {
                eprintln!("brownout: {e}");
                return Ok(EXIT_TARGET);
            }
        };
        if a.json {
            println!("{}", serde_json::to_string_pretty(&summary)?);
        } else {
            print!("{}", table(&summary));
        }
        Ok(if interrupted.is_cancelled() {
            EXIT_INTERRUPTED
        } else {
            EXIT_OK
        })
    })
}

/// The first SIGINT or SIGTERM stops the load; the returned token says whether one came.
fn spawn_signals(cancel: CancellationToken) -> CancellationToken {
    use tokio::signal::unix::{signal, SignalKind};
    let seen = CancellationToken::new();
    let flag = seen.clone();
    tokio::spawn(async move {
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
            _ = cancel.cancelled() => return,
        }
        flag.cancel();
        cancel.cancel();
    });
    seen
}

/// Drain the events; on a terminal, print a line per second.
/// With `--otlp`, the load's root span ends with its totals.
async fn progress(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<LoadEvent>,
    show: bool,
    spans: Option<super::otel::LoadSpans>,
) {
    let (mut total, mut failed) = (0u64, 0u64);
    let started = tokio::time::Instant::now();
    let mut tick =
        tokio::time::interval_at(started + Duration::from_secs(1), Duration::from_secs(1));
    let (mut calls, mut errors, mut hist) = (0u64, 0u64, Histogram::default());
    loop {
        tokio::select! {
            e = rx.recv() => match e {
                Some(LoadEvent::Call(c)) => {
                    calls += 1;
                    total += 1;
                    if !c.outcome.is_success() {
                        errors += 1;
                        failed += 1;
                    }
                    if show {
                        hist.record(c.latency_ms);
                    }
                }
                Some(LoadEvent::Task(_)) => {}
                None => {
                    if let Some(s) = spans {
                        s.finish(total, failed);
                    }
                    break;
                }
            },
            _ = tick.tick() => {
                if show {
                    let pct = if calls == 0 { 0.0 } else { errors as f64 * 100.0 / calls as f64 };
                    eprintln!(
                        "{:>5.0}s  {calls:>7} calls/s  errors {pct:>5.1}%  p99 {:>8.1} ms",
                        started.elapsed().as_secs_f64(),
                        hist.quantile(0.99)
                    );
                }
                (calls, errors, hist) = (0, 0, Histogram::default());
            }
        }
    }
}

/// The human summary.
pub fn table(s: &LoadSummary) -> String {
    let mut t = counts(s);
    if s.rereads > 0 || s.gave_up > 0 || s.missing_values > 0 || s.policy != "trust" {
        t.push_str(&format!(
            "agent        policy {}: {} extra reads, {} tasks given up (no result to act on), {} tasks missing a chained value\n",
            s.policy, s.rereads, s.gave_up, s.missing_values
        ));
    }
    t
}

fn counts(s: &LoadSummary) -> String {
    let outcomes: Vec<String> = s.outcomes.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let l = &s.latency_ms;
    format!(
        "brownout load: {:.1}s, {} session(s), seed {}\n\
         tasks        {} ({} ok, {} failed)\n\
         calls        {} ({:.0}/s): {}\n\
         error rate   {:.2}%  (timeouts {})\n\
         attempts     {} ({:.0}/s, {:.2} per call; limiter rejected {}, breaker rejected {})\n\
         latency ms   p50 {:.2}  p90 {:.2}  p95 {:.2}  p99 {:.2}  max {:.2}  (from intended start)\n\
         start lag    {:.1} ms at worst (how far the generator fell behind its schedule)\n",
        s.duration_s,
        s.sessions,
        s.seed,
        s.tasks,
        s.tasks_ok,
        s.tasks_failed,
        s.calls,
        s.calls_per_s,
        if outcomes.is_empty() { "none".to_string() } else { outcomes.join(", ") },
        s.error_rate * 100.0,
        s.timeouts,
        s.attempts,
        s.attempts_per_s,
        s.attempt_amplification,
        s.limiter_rejections,
        s.breaker_rejections,
        l.p50,
        l.p90,
        l.p95,
        l.p99,
        l.max,
        s.max_start_lag_ms,
    )
}
