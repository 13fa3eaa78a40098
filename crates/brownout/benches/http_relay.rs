//! Benchmark: what the HTTP relay adds to a `tools/call` round trip over streamable HTTP.
//!
//! Run: `cargo bench -p brownout --bench http_relay` (release build). The upstream is a small
//! MCP server inside the bench process (tests/common/upstream.rs: JSON or SSE answers), so
//! the relay's cost is visible; brownout runs as its own process with an empty plan. In the
//! same run and in alternating rounds it measures, direct and through brownout: per-call
//! round trip (p50, p99) with one call in flight, for JSON and for SSE answers; throughput
//! with 64 sessions calling at once; and brownout's RSS with 1,000 idle sessions (each
//! initialized, its keep-alive connection left open). Prints a table and writes
//! `target/bench/http_relay.json`. Medians over rounds; these machines are noisy.

#[path = "../tests/common/upstream.rs"]
mod upstream;

use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ROUNDS: usize = 5;
const LATENCY_CALLS: usize = 2000;
const SESSIONS: usize = 64;
const CALLS_PER_SESSION: usize = 150;
const IDLE_SESSIONS: usize = 1000;

struct Relay {
    child: Child,
    url: String,
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_relay(exe: &str, upstream: &str) -> Relay {
    let mut child = Command::new(exe)
        .args([
            "proxy",
            "http",
            "--quiet",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            upstream,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start brownout");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let url = loop {
        match lines.next() {
            Some(Ok(l)) if l.starts_with("brownout: relaying ") => {
                break l["brownout: relaying ".len()..]
                    .split(" -> ")
                    .next()
                    .unwrap_or_default()
                    .to_string();
            }
            Some(Ok(_)) => continue,
            _ => panic!("brownout did not start"),
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Relay { child, url }
}

async fn init(http: &reqwest::Client, url: &str) -> String {
    let resp = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"}}})
            .to_string(),
        )
        .send()
        .await
        .expect("initialize");
    let sid = resp.headers()["mcp-session-id"]
        .to_str()
        .expect("id")
        .to_string();
    let _ = resp.bytes().await;
    sid
}

async fn call(http: &reqwest::Client, url: &str, sid: &str, id: usize) {
    let resp = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", sid)
        .body(format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"hello"}}}}}}"#
        ))
        .send()
        .await
        .expect("call");
    let body = resp.bytes().await.expect("body");
    assert!(body.len() > 20, "a real answer");
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(2048)
        .build()
        .expect("client")
}

/// p50 and p99 of one-at-a-time calls, in µs.
async fn latency(url: &str) -> (f64, f64) {
    let http = client();
    let sid = init(&http, url).await;
    for i in 0..100 {
        call(&http, url, &sid, i).await;
    }
    let mut t = Vec::with_capacity(LATENCY_CALLS);
    for i in 0..LATENCY_CALLS {
        let s = Instant::now();
        call(&http, url, &sid, i).await;
        t.push(s.elapsed().as_secs_f64() * 1e6);
    }
    t.sort_by(f64::total_cmp);
    (pct(&t, 0.5), pct(&t, 0.99))
}

/// Calls per second with `SESSIONS` sessions calling at once.
async fn throughput(url: &str) -> f64 {
    let http = client();
    let mut sids = Vec::new();
    for _ in 0..SESSIONS {
        sids.push(init(&http, url).await);
    }
    let start = Instant::now();
    let tasks: Vec<_> = sids
        .into_iter()
        .map(|sid| {
            let (http, url) = (http.clone(), url.to_string());
            tokio::spawn(async move {
                for i in 0..CALLS_PER_SESSION {
                    call(&http, &url, &sid, i).await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("session");
    }
    (SESSIONS * CALLS_PER_SESSION) as f64 / start.elapsed().as_secs_f64()
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn main() {
    let exe = env!("CARGO_BIN_EXE_brownout");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (json_up, _) = rt.block_on(upstream::start(false));
    let (sse_up, _) = rt.block_on(upstream::start(true));
    let json_relay = start_relay(exe, &json_up);
    let sse_relay = start_relay(exe, &sse_up);

    let mut lat: Vec<[(f64, f64); 4]> = Vec::new();
    let mut tput: Vec<(f64, f64)> = Vec::new();
    for round in 0..ROUNDS {
        let r = rt.block_on(async {
            [
                latency(&json_up).await,
                latency(&json_relay.url).await,
                latency(&sse_up).await,
                latency(&sse_relay.url).await,
            ]
        });
        let t = rt.block_on(async {
            (
                throughput(&json_up).await,
                throughput(&json_relay.url).await,
            )
        });
        eprintln!(
            "round {}/{ROUNDS}: JSON p50 {:.0}/{:.0} µs, SSE p50 {:.0}/{:.0} µs (direct/through); 64 sessions {:.0}/{:.0} calls/s",
            round + 1, r[0].0, r[1].0, r[2].0, r[3].0, t.0, t.1
        );
        lat.push(r);
        tput.push(t);
    }
    let m = |i: usize, p99: bool| {
        median(
            lat.iter()
                .map(|r| if p99 { r[i].1 } else { r[i].0 })
                .collect(),
        )
    };
    let added = |d: usize, t: usize, p99: bool| {
        median(
            lat.iter()
                .map(|r| {
                    if p99 {
                        r[t].1 - r[d].1
                    } else {
                        r[t].0 - r[d].0
                    }
                })
                .collect(),
        )
    };
    let tput_direct = median(tput.iter().map(|t| t.0).collect());
    let tput_through = median(tput.iter().map(|t| t.1).collect());
    let ratio = median(tput.iter().map(|t| t.1 / t.0).collect());

    // RSS with 1,000 idle sessions: a fresh relay, sessions initialized, connections kept.
    let idle_relay = start_relay(exe, &json_up);
    let pid = idle_relay.child.id();
    let rss_start = status_kib(pid, "VmRSS:");
    let http = client();
    let sids: Vec<String> = rt.block_on(async {
        let tasks: Vec<_> = (0..IDLE_SESSIONS)
            .map(|_| {
                let (http, url) = (http.clone(), idle_relay.url.clone());
                tokio::spawn(async move { init(&http, &url).await })
            })
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.expect("init"));
        }
        out
    });
    std::thread::sleep(Duration::from_millis(500));
    let rss_idle = status_kib(pid, "VmRSS:");
    let hwm = status_kib(pid, "VmHWM:");
    let conns = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0);

    println!("\nHTTP relay vs direct, {ROUNDS} rounds, medians ({LATENCY_CALLS} sequential calls per round for latency)");
    println!(
        "| answer | direct p50 | through p50 | added p50 | direct p99 | through p99 | added p99 |"
    );
    println!("|---|---|---|---|---|---|---|");
    println!(
        "| JSON | {:.0} µs | {:.0} µs | **{:.0} µs** | {:.0} µs | {:.0} µs | {:.0} µs |",
        m(0, false),
        m(1, false),
        added(0, 1, false),
        m(0, true),
        m(1, true),
        added(0, 1, true)
    );
    println!(
        "| SSE | {:.0} µs | {:.0} µs | **{:.0} µs** | {:.0} µs | {:.0} µs | {:.0} µs |",
        m(2, false),
        m(3, false),
        added(2, 3, false),
        m(2, true),
        m(3, true),
        added(2, 3, true)
    );
    println!("\nthroughput, {SESSIONS} sessions × {CALLS_PER_SESSION} calls: direct {tput_direct:.0} calls/s, through {tput_through:.0} calls/s, ratio **{:.0} %**", ratio * 100.0);
    println!("RSS: {:.1} MiB at start, **{:.1} MiB with {} idle sessions** ({} open fds), peak {:.1} MiB", rss_start as f64 / 1024.0, rss_idle as f64 / 1024.0, sids.len(), conns, hwm as f64 / 1024.0);

    let out = json!({
        "rounds": ROUNDS,
        "json": {"direct_p50_us": m(0, false), "through_p50_us": m(1, false), "added_p50_us": added(0, 1, false),
                 "direct_p99_us": m(0, true), "through_p99_us": m(1, true), "added_p99_us": added(0, 1, true)},
        "sse": {"direct_p50_us": m(2, false), "through_p50_us": m(3, false), "added_p50_us": added(2, 3, false),
                "direct_p99_us": m(2, true), "through_p99_us": m(3, true), "added_p99_us": added(2, 3, true)},
        "throughput_64": {"direct": tput_direct, "through": tput_through, "ratio": ratio},
        "idle_sessions": {"sessions": sids.len(), "rss_kib": rss_idle, "rss_start_kib": rss_start, "peak_kib": hwm, "fds": conns},
    });
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join("http_relay.json"), format!("{out:#}\n"));
    drop(http);
}
