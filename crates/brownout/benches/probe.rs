//! Benchmark: the probe's own cost, and how many targets one process monitors.
//!
//! Run: `cargo bench -p brownout --bench probe` (release build). It measures
//! 1. one `mcp` probe's wall time (initialize, tools/list, close) against `brownout
//!    fixture` over stdio (a process started per probe) and over streamable HTTP (`brownout
//!    proxy http -- brownout fixture`, one fixture process per session), p50 and p95;
//! 2. monitor mode at a 1 s interval over N HTTP MCP targets (default 1,000; set
//!    `BROWNOUT_BENCH_TARGETS`) for `BROWNOUT_BENCH_SECONDS` (default 10): probes run per
//!    second against the N expected, failures, and the p50/p99 probe time. The targets are
//!    paths of one small in-process MCP server (JSON answers), which shares this process's
//!    CPU: the figure is a floor.
//!
//! It prints a table and writes `target/bench/probe.json`.

use brownout::probe::{run_once, Monitor, MonitorEvent, MonitorOptions, ProbeSpec};
use serde_json::{json, Value};
use std::io::BufRead;
use std::time::{Duration, Instant};

const SAMPLES: usize = 30;

fn pct(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let rank = (q * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn wall_times(spec: &ProbeSpec) -> (Vec<f64>, usize) {
    let mut times = Vec::new();
    let mut failed = 0;
    for _ in 0..SAMPLES {
        let r = run_once(spec).await;
        if !r.ok {
            failed += 1;
        }
        times.push(r.total_ms);
    }
    (times, failed)
}

/// `brownout proxy http -- brownout fixture`: the child and its URL.
fn relay_over_fixture(bin: &str) -> (std::process::Child, String) {
    let mut child = std::process::Command::new(bin)
        .args([
            "proxy",
            "http",
            "--quiet",
            "--listen",
            "127.0.0.1:0",
            "--",
            bin,
            "fixture",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start the relay: {e}"));
    let stderr = child.stderr.take().unwrap_or_else(|| panic!("no stderr"));
    let mut lines = std::io::BufReader::new(stderr).lines();
    let url = loop {
        match lines.next() {
            Some(Ok(l)) if l.starts_with("brownout: relaying ") => {
                let rest = l.trim_start_matches("brownout: relaying ");
                break rest.split(" -> ").next().unwrap_or_default().to_string();
            }
            Some(_) => continue,
            None => panic!("the relay did not start"),
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (child, url)
}

/// A minimal streamable-HTTP MCP server answering every path: JSON answers, no sessions.
async fn mock_server() -> String {
    use axum::{body::Bytes, http::StatusCode, response::IntoResponse, Router};
    async fn handle(body: Bytes) -> axum::response::Response {
        let Ok(msg) = serde_json::from_slice::<Value>(&body) else {
            return StatusCode::BAD_REQUEST.into_response();
        };
        let Some(id) = msg.get("id").cloned() else {
            return StatusCode::ACCEPTED.into_response();
        };
        let result = match msg["method"].as_str() {
            Some("initialize") => {
                json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "mock", "version": "1"}})
            }
            Some("tools/list") => {
                json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]})
            }
            _ => json!({}),
        };
        axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
    }
    let app = Router::new().fallback(axum::routing::post(handle));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}")
}

fn main() {
    let bin = env!("CARGO_BIN_EXE_brownout");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    let stdio: ProbeSpec =
        serde_json::from_value(json!({"probe": "mcp", "command": [bin, "fixture"]}))
            .unwrap_or_else(|e| panic!("{e}"));
    let (mut t_stdio, f_stdio) = rt.block_on(wall_times(&stdio));
    let (mut relay, url) = relay_over_fixture(bin);
    let http: ProbeSpec = serde_json::from_value(json!({"probe": "mcp", "url": url}))
        .unwrap_or_else(|e| panic!("{e}"));
    let (mut t_http, f_http) = rt.block_on(wall_times(&http));
    let _ = relay.kill();
    let _ = relay.wait();

    let n = env_or("BROWNOUT_BENCH_TARGETS", 1000) as usize;
    let secs = env_or("BROWNOUT_BENCH_SECONDS", 10);
    let (probes, failed, mut times, elapsed) = rt.block_on(async {
        let base = mock_server().await;
        let targets = (0..n)
            .map(|i| {
                let spec: ProbeSpec = serde_json::from_value(
                    json!({"probe": "mcp", "url": format!("{base}/mcp/{i}")}),
                )
                .unwrap_or_else(|e| panic!("{e}"));
                let opts = MonitorOptions {
                    interval: Duration::from_secs(1),
                    stagger: true,
                    seed: 1,
                    ..MonitorOptions::default()
                };
                (spec, opts)
            })
            .collect();
        let mut m = Monitor::start(targets);
        // The first second staggers the start; measure the seconds after it.
        tokio::time::sleep(Duration::from_secs(1)).await;
        // Drop what the first second produced (it waits in the channel).
        while let Ok(Some(_)) = tokio::time::timeout(Duration::ZERO, m.next()).await {}
        let start = Instant::now();
        let end = start + Duration::from_secs(secs);
        let (mut probes, mut failed, mut times) = (0u64, 0u64, Vec::new());
        while let Ok(Some(ev)) = tokio::time::timeout_at(end.into(), m.next()).await {
            if let MonitorEvent::Probe { result, .. } = ev {
                probes += 1;
                failed += u64::from(!result.ok);
                times.push(result.total_ms);
            }
        }
        (probes, failed, times, start.elapsed().as_secs_f64())
    });
    let rate = probes as f64 / elapsed;
    let report = json!({
        "stdio_fixture": {"p50_ms": pct(&mut t_stdio, 0.5), "p95_ms": pct(&mut t_stdio, 0.95), "failed": f_stdio, "samples": SAMPLES},
        "http_fixture": {"p50_ms": pct(&mut t_http, 0.5), "p95_ms": pct(&mut t_http, 0.95), "failed": f_http, "samples": SAMPLES},
        "monitor": {"targets": n, "interval_s": 1, "seconds": elapsed, "probes_per_s": rate,
                    "expected_per_s": n, "failed": failed,
                    "p50_ms": pct(&mut times, 0.5), "p99_ms": pct(&mut times, 0.99)},
    });
    println!("probe wall time (initialize + tools/list + close), {SAMPLES} probes each");
    println!(
        "  stdio, brownout fixture      p50 {:7.2} ms  p95 {:7.2} ms  failed {f_stdio}",
        report["stdio_fixture"]["p50_ms"].as_f64().unwrap_or(0.0),
        report["stdio_fixture"]["p95_ms"].as_f64().unwrap_or(0.0)
    );
    println!(
        "  http, proxy http -- fixture  p50 {:7.2} ms  p95 {:7.2} ms  failed {f_http}",
        report["http_fixture"]["p50_ms"].as_f64().unwrap_or(0.0),
        report["http_fixture"]["p95_ms"].as_f64().unwrap_or(0.0)
    );
    println!(
        "monitor: {n} HTTP MCP targets at 1 s: {rate:.0} probes/s (expected {n}), {failed} failed, probe p50 {:.2} ms p99 {:.2} ms",
        report["monitor"]["p50_ms"].as_f64().unwrap_or(0.0),
        report["monitor"]["p99_ms"].as_f64().unwrap_or(0.0)
    );
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
    let _ = std::fs::create_dir_all(&out);
    let _ = std::fs::write(out.join("probe.json"), format!("{report:#}\n"));
}
