//! `brownout probe`: the command line over [`super::run_once`] and [`super::Monitor`].
//! Exit codes: 0 the last probe passed (every target's, with `--targets`), 1 it failed,
//! 2 bad usage or input.

use super::alert;
use super::metrics::{self, Metrics};
use super::monitor::{Monitor, MonitorEvent, MonitorOptions};
use super::spec::{
    CodeOrTolerance, CommandProbe, Dur, Headers, HttpProbe, McpProbe, ProbeCall, ProbeSpec,
    SliProbe, Transport,
};
use super::{targets, ProbeResult};
use brownout_core::slo::tolerance::Tolerance;
use clap::{Args, ValueEnum};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Probe an MCP server (or an HTTP endpoint, or a command) and say why it fails.
///
/// One probe is a real MCP session: initialize, notifications/initialized, tools/list,
/// optionally tools/call (--call), then a clean close (DELETE the session; close stdin and
/// reap the server). It passes, or fails with a reason from a fixed taxonomy
/// (connection_refused, dns, tls, timeout(PHASE), http_status(CODE), protocol_error,
/// initialize_failed, tool_missing, tool_error, jsonrpc_error(CODE), schema_invalid,
/// unexpected_content, process_exited(STATUS), …: docs/probes.md), with each phase's time.
///
/// With --interval it keeps probing (monitor mode): rolling P50/P95/P99, an alert to
/// --webhook when --alert-after probes in a row fail or the P95 breaks --p95, one recovery
/// notice when probes pass again, Prometheus metrics on --metrics.
///
/// Header values (--header) are sent and never printed.
///
/// Exit codes: 0 the last probe passed (with --targets, every target's last probe),
/// 1 it failed, 2 bad usage or input.
///
/// Examples:
///   brownout probe http://127.0.0.1:8900/mcp
///   brownout probe --call echo --arguments '{"message":"hi"}' --expect '$.content[0].text=hi' -- brownout fixture
///   brownout probe http://127.0.0.1:8900/mcp --header 'Authorization: Bearer $TOKEN' --json --count 3
///   brownout probe http://127.0.0.1:8900/mcp --interval 10s --alert-after 2 --p95 '< 500ms' --webhook https://hooks.slack.com/…
///   brownout probe --kind http http://127.0.0.1:8080/health --status 200 --expect '$.status == "ok"'
///   brownout probe --kind sli http://127.0.0.1:9901 --expect 'error_rate < 1%'
///   brownout probe --targets targets.yaml --interval 1s --metrics 127.0.0.1:9464
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct ProbeArgs {
    /// The MCP server's URL (or the endpoint's, with --kind http).
    #[arg(value_name = "URL", conflicts_with = "targets")]
    pub url: Option<String>,
    /// A stdio MCP server to start for each probe (or the command of --kind command).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
    /// What to probe: an MCP server, a plain HTTP endpoint, a command's result, or a
    /// running relay's live SLIs (URL: its admin API; --expect: `SLI TOLERANCE`).
    #[arg(long, value_enum, default_value_t = Kind::Mcp)]
    pub kind: Kind,
    /// MCP over HTTP: streamable HTTP, legacy HTTP+SSE, or auto (streamable; legacy when
    /// the server refuses the POST with 404/405 or the URL ends in /sse).
    #[arg(long, value_enum, default_value_t = TransportArg::Auto)]
    pub transport: TransportArg,
    /// A header for every HTTP request, `Name: value` (repeatable). Never printed.
    #[arg(long, short = 'H', value_name = "HEADER")]
    pub header: Vec<String>,
    /// Call this tool after tools/list (it must be listed: else tool_missing).
    #[arg(long, value_name = "TOOL")]
    pub call: Option<String>,
    /// The call's arguments, a JSON object.
    #[arg(long, value_name = "JSON", requires = "call", default_value = "{}")]
    pub arguments: String,
    /// What the result (or with --kind http, the body; --kind command, stdout) must hold,
    /// repeatable: `JSONPATH=VALUE` (`$.content[0].text=hello`) or any tolerance
    /// (`$.structuredContent.count >= 1`, `~ /ok/`). --kind sli: one `SLI TOLERANCE`
    /// (`error_rate < 1%`, `p95 < 500ms`).
    #[arg(long, value_name = "EXPECT")]
    pub expect: Vec<String>,
    /// --kind http: the status expected, a code or a tolerance (default 200..299).
    /// --kind command: the exit code expected (default 0).
    #[arg(long, value_name = "TOLERANCE")]
    pub status: Option<String>,
    /// Probes to run (default 1; with --interval, forever).
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
    /// Time between probes, jittered ±10 % (reproducibly, from --seed). Turns on monitor
    /// mode.
    #[arg(long, value_name = "DURATION")]
    pub interval: Option<Dur>,
    /// Seed of the jitter.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Time budget of one probe, all phases together.
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    pub timeout: Dur,
    /// Print one JSON line per probe (and per alert or recovery) on stdout.
    #[arg(long)]
    pub json: bool,
    /// Failing probes in a row that raise an alert.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub alert_after: u32,
    /// Limit of the rolling P95 of probe time, e.g. '< 500ms'.
    #[arg(long, value_name = "TOLERANCE")]
    pub p95: Option<Tolerance>,
    /// Probes in the rolling window of P50/P95/P99.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub window: usize,
    /// POST alerts and recovery notices here (JSON with a Slack-compatible `text`).
    #[arg(
        long,
        value_name = "URL",
        env = "BROWNOUT_WEBHOOK",
        hide_env_values = true
    )]
    pub webhook: Option<String>,
    /// Serve Prometheus metrics at http://ADDR/metrics (loopback unless --metrics-token).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<std::net::SocketAddr>,
    /// Bearer token --metrics requires (needed beyond loopback).
    #[arg(long, env = "BROWNOUT_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<String>,
    /// Watch every target of this YAML list (each a probe with its own options; see
    /// docs/probes.md).
    #[arg(long, value_name = "FILE")]
    pub targets: Option<PathBuf>,
    /// Print the JSON Schema of --targets files and exit.
    #[arg(long)]
    pub schema: bool,
    #[command(flatten)]
    pub otlp: crate::otlp_args::OtlpArgs,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Kind {
    Mcp,
    Http,
    Command,
    Sli,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum TransportArg {
    Auto,
    Streamable,
    Sse,
}

/// `--expect JSONPATH=VALUE` or a tolerance.
pub fn parse_expect(text: &str) -> Result<Tolerance, String> {
    if let Ok(t) = Tolerance::parse(text) {
        return Ok(t);
    }
    let (path, value) = text.split_once('=').ok_or_else(|| {
        format!("`{text}` is neither JSONPATH=VALUE nor a tolerance (docs/probes.md)")
    })?;
    let value = value.trim();
    let literal = match serde_json::from_str::<serde_json::Value>(value) {
        Ok(
            v @ (serde_json::Value::Number(_)
            | serde_json::Value::Bool(_)
            | serde_json::Value::Null
            | serde_json::Value::String(_)),
        ) => v.to_string(),
        _ => serde_json::Value::String(value.to_string()).to_string(),
    };
    Tolerance::parse(&format!("{} == {literal}", path.trim()))
        .map_err(|e| format!("--expect `{text}`: {e}"))
}

fn single(a: &ProbeArgs) -> anyhow::Result<ProbeSpec> {
    let mut headers = Headers::default();
    for h in &a.header {
        headers
            .add(h)
            .map_err(|e| anyhow::anyhow!("--header: {e}"))?;
    }
    if let Kind::Sli = a.kind {
        let [check] = a.expect.as_slice() else {
            anyhow::bail!("--kind sli takes one --expect, e.g. 'error_rate < 1%'");
        };
        return Ok(ProbeSpec::Sli(SliProbe {
            admin: a
                .url
                .clone()
                .ok_or_else(|| anyhow::anyhow!("--kind sli needs the relay's admin URL"))?,
            token_env: std::env::var_os("BROWNOUT_ADMIN_TOKEN")
                .is_some()
                .then(|| "BROWNOUT_ADMIN_TOKEN".to_string()),
            check: check
                .parse()
                .map_err(|e| anyhow::anyhow!("--expect `{check}`: {e}"))?,
            timeout: Some(a.timeout),
        }));
    }
    let expect = a
        .expect
        .iter()
        .map(|e| parse_expect(e))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow::anyhow!(e))?;
    let status = match &a.status {
        None => None,
        Some(s) => Some(match s.trim().parse::<i64>() {
            Ok(c) => CodeOrTolerance::Code(c),
            Err(_) => CodeOrTolerance::Tolerance(
                Tolerance::parse(s).map_err(|e| anyhow::anyhow!("--status `{s}`: {e}"))?,
            ),
        }),
    };
    let timeout = Some(a.timeout);
    Ok(match a.kind {
        Kind::Mcp | Kind::Sli => {
            if a.url.is_some() != a.command.is_empty() {
                anyhow::bail!("give the server's URL, or its command after --, not both");
            }
            let call = match &a.call {
                None => None,
                Some(tool) => Some(ProbeCall {
                    tool: tool.clone(),
                    arguments: serde_json::from_str(&a.arguments)
                        .map_err(|e| anyhow::anyhow!("--arguments is not a JSON object: {e}"))?,
                }),
            };
            ProbeSpec::Mcp(McpProbe {
                url: a.url.clone(),
                command: a.command.clone(),
                transport: match a.transport {
                    TransportArg::Auto => Transport::Auto,
                    TransportArg::Streamable => Transport::Streamable,
                    TransportArg::Sse => Transport::Sse,
                },
                headers,
                call,
                expect,
                timeout,
                ..McpProbe::default()
            })
        }
        Kind::Http => ProbeSpec::Http(HttpProbe {
            url: a
                .url
                .clone()
                .ok_or_else(|| anyhow::anyhow!("--kind http needs a URL"))?,
            headers,
            status,
            expect,
            timeout,
            ..HttpProbe::default()
        }),
        Kind::Command => {
            if a.command.is_empty() {
                anyhow::bail!("--kind command needs a command after --");
            }
            if expect.len() > 1 {
                anyhow::bail!("--kind command takes one --expect (over stdout)");
            }
            ProbeSpec::Command(CommandProbe {
                command: a.command.clone(),
                exit: status,
                stdout: expect.into_iter().next(),
                timeout,
            })
        }
    })
}

/// Run the command; the exit code.
pub fn run(a: ProbeArgs) -> anyhow::Result<i32> {
    if a.schema {
        println!("{}", serde_json::to_string_pretty(&targets::schema())?);
        return Ok(0);
    }
    let base = MonitorOptions {
        interval: a
            .interval
            .map_or(std::time::Duration::from_secs(10), |d| d.0),
        alert_after: a.alert_after.max(1),
        p95: a.p95.clone(),
        window: a.window.max(1),
        count: match (a.count, a.interval) {
            (Some(n), _) => Some(n.max(1)),
            (None, Some(_)) => None,
            (None, None) => Some(1),
        },
        seed: a.seed,
        stagger: false,
    };
    let mut list = Vec::new();
    let mut hooks = Vec::new();
    match &a.targets {
        Some(path) => {
            let entries = targets::load(path)?;
            let many = entries.len() > 1;
            for e in entries {
                let mut o = base.clone();
                o.stagger = many;
                if let Some(i) = e.watch.interval {
                    o.interval = i.0;
                }
                if let Some(n) = e.watch.alert_after {
                    o.alert_after = n.max(1);
                }
                if e.watch.p95.is_some() {
                    o.p95 = e.watch.p95.clone();
                }
                hooks.push(e.watch.webhook.clone().or_else(|| a.webhook.clone()));
                list.push((e.probe, o));
            }
        }
        None => {
            list.push((single(&a)?, base));
            hooks.push(a.webhook.clone());
        }
    }
    if let Some(addr) = &a.metrics {
        metrics::check_bind(addr, a.metrics_token.as_deref())?;
    }
    let otlp = a.otlp.start("probe")?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let code = rt.block_on(watch(list, hooks, &a, otlp.as_ref()));
    if let Some(otlp) = otlp {
        otlp.close();
    }
    code
}

async fn watch(
    list: Vec<(ProbeSpec, MonitorOptions)>,
    hooks: Vec<Option<String>>,
    a: &ProbeArgs,
    otlp: Option<&brownout_relay::otlp::Otlp>,
) -> anyhow::Result<i32> {
    let names: Vec<String> = list.iter().map(|(s, _)| s.target()).collect();
    let n = list.len();
    let metrics = Arc::new(Metrics::default());
    if let Some(addr) = a.metrics {
        let bound = metrics::serve(Arc::clone(&metrics), addr, a.metrics_token.clone()).await?;
        eprintln!("brownout: probe metrics on http://{bound}/metrics");
    }
    // One delivery task: notices reach the webhook in the order they happened.
    let (deliver, mut queue) = tokio::sync::mpsc::channel::<(String, super::monitor::Notice)>(1024);
    let sender = tokio::spawn(async move {
        while let Some((hook, notice)) = queue.recv().await {
            alert::send(super::client(), &hook, &notice).await;
        }
    });
    let mut monitor = Monitor::start(list);
    let mut last: HashMap<usize, bool> = HashMap::new();
    let mut done = 0;
    let stop = crate::probe::cli::stop_signal();
    tokio::pin!(stop);
    while done < n {
        let ev = tokio::select! {
            ev = monitor.next() => ev,
            _ = &mut stop => break,
        };
        let Some(ev) = ev else { break };
        let index = match &ev {
            MonitorEvent::Probe { index, .. } | MonitorEvent::Done { index } => *index,
            MonitorEvent::Alert(n) | MonitorEvent::Recovery(n) => n.index,
        };
        let name = names.get(index).map_or("", String::as_str);
        metrics.record(&ev, name);
        match ev {
            MonitorEvent::Probe {
                result,
                percentiles,
                ..
            } => {
                last.insert(index, result.ok);
                if let Some(o) = otlp {
                    super::otel::export(o, &result);
                }
                print_result(&result, percentiles, a.json);
            }
            MonitorEvent::Alert(notice) | MonitorEvent::Recovery(notice) => {
                let body = alert::body(&notice);
                if a.json {
                    println!("{body}");
                } else {
                    eprintln!("brownout: {}", body["text"].as_str().unwrap_or(""));
                }
                if let Some(Some(hook)) = hooks.get(index) {
                    let _ = deliver.send((hook.clone(), notice)).await;
                }
            }
            MonitorEvent::Done { .. } => done += 1,
        }
    }
    // Let the notices still queued reach the webhook (bounded: a dead webhook does not
    // hold the exit for long).
    drop(deliver);
    drop(monitor);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(15), sender).await;
    let all_ok = !last.is_empty() && last.len() == n && last.values().all(|ok| *ok);
    Ok(if all_ok { 0 } else { 1 })
}

fn print_result(r: &ProbeResult, p: Option<super::rolling::Percentiles>, json: bool) {
    if json {
        let mut v = serde_json::to_value(r).unwrap_or_default();
        if let (Some(m), Some(p)) = (v.as_object_mut(), p) {
            m.insert(
                "rolling".into(),
                serde_json::to_value(p).unwrap_or_default(),
            );
        }
        println!("{v}");
        return;
    }
    let phases: Vec<String> = r
        .phases
        .iter()
        .map(|p| format!("{} {:.1}ms", p.phase, p.ms))
        .collect();
    let head = match &r.failure {
        None => "ok  ".to_string(),
        Some(f) => format!("FAIL {f}"),
    };
    println!(
        "{head} {} in {:.1}ms [{}] {}",
        r.target,
        r.total_ms,
        phases.join(", "),
        r.detail
    );
}

/// Resolves on the first SIGTERM or SIGINT.
pub async fn stop_signal() {
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
}
