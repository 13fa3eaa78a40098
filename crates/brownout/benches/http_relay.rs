//! Benchmark: what the HTTP relay adds to a `tools/call` over streamable HTTP.
//!
//! Run: `cargo bench -p brownout --bench http_relay` (release build). The upstream is a
//! minimal MCP streamable-HTTP server defined in this file, on its own tokio runtime, so the
//! relay's cost is visible: two instances, one answering JSON (`application/json`), one SSE
//! (`text/event-stream`, one `event: message` with an `id:`). brownout (`proxy http`) runs
//! as its own process, with no plan and with a plan whose faults never match. For scale, a
//! reference proxy (this bench re-run as a process: axum + reqwest like brownout, forwarding
//! bodies and the MCP headers, no MCP parsing, no engine) is measured the same way: the cost
//! of any process in the middle built on that stack.
//!
//! In the same run and in alternating rounds (the order of the paths rotates each round) it
//! measures, direct and through each proxy: per-call round trip (p50, p99) with one call in
//! flight on one session, for JSON and for SSE answers; throughput with 64 sessions calling
//! at once (each its own client and connection); the proxy's CPU per call. Then, on a fresh
//! relay, brownout's RSS with 1,000 idle sessions, and with half of them also holding a GET
//! SSE stream open. Prints tables and writes `target/bench/http_relay.json`. Medians over
//! rounds; these machines are noisy.

use futures::StreamExt;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

const ROUNDS: usize = 5;
const WARMUP_CALLS: usize = 200;
const LATENCY_CALLS: usize = 3000;
const SESSIONS: usize = 64;
const CALLS_PER_SESSION: usize = 200;
const IDLE_SESSIONS: usize = 1000;
/// Sessions being opened at once in the RSS phase.
const OPENING_AT_ONCE: usize = 32;
/// Any single HTTP request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The whole run; past it the relays are killed and the bench exits.
const WATCHDOG: Duration = Duration::from_secs(600);

/// The stdio bench's plan (message-level faults whose selectors never match), plus two
/// HTTP-level faults that never match either: every selector is evaluated on every message.
const NEVER_MATCHES: &str = "seed: 1\nfaults:\n  - {kind: latency, tools: [no_such_tool], added_ms: 100}\n  - {kind: error, methods: [no/such/method]}\n  - {kind: schema_drift, tools: [nothing_*], probability: 0.5}\n  - {kind: drop, arguments: {message: never}}\n  - {kind: http_status, status: 503, tools: [no_such_tool]}\n  - {kind: slow_stream, gap_ms: 100, tools: [nothing_*]}\n";

const ACCEPT: &str = "application/json, text/event-stream";
const PROTOCOL: &str = "2025-11-25";

#[path = "http_relay/memory.rs"]
mod memory;
#[path = "http_relay/plain.rs"]
mod plain;
#[path = "support/proc_stats.rs"]
mod proc_stats;
#[path = "http_relay/procs.rs"]
mod procs;
#[path = "http_relay/session.rs"]
mod session;
#[path = "http_relay/upstream.rs"]
mod upstream;

use memory::*;
use proc_stats::*;
use procs::*;
use session::*;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Path {
    Direct,
    Plain,
    Empty,
    NoMatch,
}

const PATHS: [Path; 4] = [Path::Direct, Path::Plain, Path::Empty, Path::NoMatch];

impl Path {
    fn name(self) -> &'static str {
        match self {
            Path::Direct => "direct",
            Path::Plain => "reference proxy (no MCP)",
            Path::Empty => "brownout, no plan",
            Path::NoMatch => "brownout, non-matching plan",
        }
    }
}

#[derive(Default, Clone)]
struct Sample {
    p50_us: f64,
    p99_us: f64,
    /// The proxy's user + system CPU per call over the timed latency calls.
    lat_cpu_us: f64,
    calls_per_s: f64,
    /// The proxy's user + system CPU per call over the throughput run.
    tput_cpu_us: f64,
}

/// One session, one call at a time: p50, p99 (µs), brownout's CPU per call.
async fn latency(url: &str, pid: Option<u32>, sse: bool) -> (f64, f64, f64) {
    let http = client();
    let sid = open_session(&http, url).await;
    for i in 0..WARMUP_CALLS {
        assert_eq!(call(&http, url, &sid, i).await, sse, "answer type");
    }
    let mut t = Vec::with_capacity(LATENCY_CALLS);
    let cpu0 = pid.map_or(0.0, cpu_us);
    for i in 0..LATENCY_CALLS {
        let s = Instant::now();
        call(&http, url, &sid, i).await;
        t.push(s.elapsed().as_secs_f64() * 1e6);
    }
    let cpu = (pid.map_or(0.0, cpu_us) - cpu0) / LATENCY_CALLS as f64;
    t.sort_by(f64::total_cmp);
    (pct(&t, 0.5), pct(&t, 0.99), cpu)
}

/// `SESSIONS` sessions, each its own client (own connection), each calling
/// `CALLS_PER_SESSION` times one after another, all at once: calls/s, brownout's CPU per call.
async fn throughput(url: &str, pid: Option<u32>) -> (f64, f64) {
    let opened = futures::future::join_all((0..SESSIONS).map(|_| async {
        let http = client();
        let sid = open_session(&http, url).await;
        for i in 0..10 {
            call(&http, url, &sid, i).await; // warm the connection
        }
        (http, sid)
    }))
    .await;
    let cpu0 = pid.map_or(0.0, cpu_us);
    let start = Instant::now();
    let tasks: Vec<_> = opened
        .into_iter()
        .map(|(http, sid)| {
            let url = url.to_string();
            tokio::spawn(async move {
                for i in 0..CALLS_PER_SESSION {
                    call(&http, &url, &sid, i).await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("a session failed");
    }
    let secs = start.elapsed().as_secs_f64();
    let calls = (SESSIONS * CALLS_PER_SESSION) as f64;
    (calls / secs, (pid.map_or(0.0, cpu_us) - cpu0) / calls)
}

fn main() {
    if let Ok(upstream) = std::env::var(PLAIN_PROXY_ENV) {
        plain::main(upstream);
    }
    let exe = &brownout_exe();
    eprintln!("bench: brownout = {exe}");
    assert!(
        std::path::Path::new(exe).exists(),
        "{exe} is missing: build it with `cargo build --release -p brownout`"
    );
    std::thread::spawn(|| {
        std::thread::sleep(WATCHDOG);
        eprintln!("http_relay bench: over {WATCHDOG:?}, giving up");
        for pid in PIDS.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(*pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        std::process::exit(3);
    });
    let wall = Instant::now();
    // The upstream's runtime and the load generator's are separate (two threads each).
    let up_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("upstream")
        .enable_all()
        .build()
        .expect("upstream runtime");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("client")
        .enable_all()
        .build()
        .expect("client runtime");
    let ups = [
        upstream::start(&up_rt, false),
        upstream::start(&up_rt, true),
    ];
    let dir = std::env::temp_dir().join(format!("brownout-http-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let plan = dir.join("never.yaml");
    std::fs::write(&plan, NEVER_MATCHES).expect("plan");

    // One sanity pass per upstream and path: tools/list and the answer's content type.
    for (m, up) in ups.iter().enumerate() {
        for p in [None, Some(plan.as_path())] {
            let relay = start_relay(exe, &up.url, p);
            rt.block_on(async {
                for url in [&up.url, &relay.url] {
                    let http = client();
                    let sid = open_session(&http, url).await;
                    let resp = http
                        .post(url)
                        .header("content-type", "application/json")
                        .header("accept", ACCEPT)
                        .header("mcp-session-id", &sid)
                        .header("mcp-protocol-version", PROTOCOL)
                        .timeout(REQUEST_TIMEOUT)
                        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
                        .send()
                        .await
                        .expect("tools/list");
                    let body = resp.text().await.expect("tools/list body");
                    assert!(body.contains(r#""name":"echo""#), "tools/list: {body}");
                    assert_eq!(call(&http, url, &sid, 2).await, m == 1, "content type");
                }
            });
        }
    }

    // samples[answer][path], one per round; answer 0 is JSON, 1 SSE.
    let mut samples: Vec<Vec<Vec<Sample>>> = vec![vec![Vec::new(); PATHS.len()]; 2];
    for round in 0..ROUNDS {
        for (m, up) in ups.iter().enumerate() {
            // A fresh relay per path, answer type and round.
            let relays: Vec<Option<Relay>> = PATHS
                .iter()
                .map(|p| match p {
                    Path::Direct => None,
                    Path::Plain => Some(start_plain_proxy(&up.url)),
                    Path::Empty => Some(start_relay(exe, &up.url, None)),
                    Path::NoMatch => Some(start_relay(exe, &up.url, Some(&plan))),
                })
                .collect();
            let target = |i: usize| {
                relays[i]
                    .as_ref()
                    .map_or((up.url.clone(), None), |r| (r.url.clone(), Some(r.pid())))
            };
            let mut s = vec![Sample::default(); PATHS.len()];
            // Alternating: latency of every path, then throughput of every path; the order
            // of the paths rotates each round.
            let order: Vec<usize> = (0..PATHS.len())
                .map(|k| (k + round) % PATHS.len())
                .collect();
            for &i in &order {
                let (url, pid) = target(i);
                let (p50, p99, cpu) = rt.block_on(latency(&url, pid, m == 1));
                (s[i].p50_us, s[i].p99_us, s[i].lat_cpu_us) = (p50, p99, cpu);
            }
            for &i in &order {
                let (url, pid) = target(i);
                let (cps, cpu) = rt.block_on(throughput(&url, pid));
                (s[i].calls_per_s, s[i].tput_cpu_us) = (cps, cpu);
            }
            eprintln!(
                "round {}/{ROUNDS} {}: p50 {:.0}/{:.0}/{:.0}/{:.0} µs, p99 {:.0}/{:.0}/{:.0}/{:.0} µs, {SESSIONS} sessions {:.0}/{:.0}/{:.0}/{:.0} calls/s (direct/reference/no plan/non-matching)",
                round + 1,
                if m == 0 { "JSON" } else { "SSE " },
                s[0].p50_us, s[1].p50_us, s[2].p50_us, s[3].p50_us,
                s[0].p99_us, s[1].p99_us, s[2].p99_us, s[3].p99_us,
                s[0].calls_per_s, s[1].calls_per_s, s[2].calls_per_s, s[3].calls_per_s,
            );
            for (i, x) in s.into_iter().enumerate() {
                samples[m][i].push(x);
            }
        }
    }

    // brownout, and the reference proxy for scale, both fresh, to the SSE upstream.
    let idle = idle_sessions(&rt, start_relay(exe, &ups[1].url, None), &ups[1]);
    let idle_ref = idle_sessions(&rt, start_plain_proxy(&ups[1].url), &ups[1]);

    let med =
        |m: usize, i: usize, f: fn(&Sample) -> f64| median(samples[m][i].iter().map(f).collect());
    // Added: the per-round difference to the direct path of the same round, then the median.
    let added = |m: usize, i: usize, f: fn(&Sample) -> f64| {
        median(
            samples[m][i]
                .iter()
                .zip(&samples[m][0])
                .map(|(r, d)| f(r) - f(d))
                .collect(),
        )
    };
    let ratio = |m: usize, i: usize| {
        median(
            samples[m][i]
                .iter()
                .zip(&samples[m][0])
                .map(|(r, d)| r.calls_per_s / d.calls_per_s)
                .collect(),
        )
    };
    println!(
        "\nHTTP relay vs direct, {ROUNDS} rounds, medians ({LATENCY_CALLS} sequential calls on one session per round for latency; {SESSIONS} sessions × {CALLS_PER_SESSION} calls for throughput)"
    );
    println!("| answer | path | p50 µs | p99 µs | added p50 µs | added p99 µs | calls/s, {SESSIONS} sessions | % of direct | proxy CPU µs/call (1 / {SESSIONS} sessions) |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut rows = Vec::new();
    for (m, per_path) in samples.iter().enumerate() {
        let mode = if m == 0 { "JSON" } else { "SSE" };
        for (i, p) in PATHS.iter().enumerate() {
            let (p50, p99, cps) = (
                med(m, i, |s| s.p50_us),
                med(m, i, |s| s.p99_us),
                med(m, i, |s| s.calls_per_s),
            );
            let (a50, a99, r, c1, c64) = (
                added(m, i, |s| s.p50_us),
                added(m, i, |s| s.p99_us),
                ratio(m, i) * 100.0,
                med(m, i, |s| s.lat_cpu_us),
                med(m, i, |s| s.tput_cpu_us),
            );
            if i == 0 {
                println!(
                    "| {mode} | {} | {p50:.0} | {p99:.0} | — | — | {cps:.0} | 100 % | — |",
                    p.name()
                );
            } else {
                println!("| {mode} | {} | {p50:.0} | {p99:.0} | **{a50:.0}** | **{a99:.0}** | {cps:.0} | **{r:.0} %** | {c1:.0} / {c64:.0} |", p.name());
            }
            rows.push(json!({
                "answer": mode, "path": p.name(), "p50_us": p50, "p99_us": p99,
                "added_p50_us": a50, "added_p99_us": a99,
                "calls_per_s_64_sessions": cps, "pct_of_direct": r,
                "proxy_cpu_us_per_call_sequential": c1,
                "proxy_cpu_us_per_call_64_sessions": c64,
                "rounds": per_path[i].iter().map(|s| json!({
                    "p50_us": s.p50_us, "p99_us": s.p99_us, "calls_per_s": s.calls_per_s})).collect::<Vec<_>>(),
            }));
        }
    }
    let mib = |k: u64| k as f64 / 1024.0;
    println!(
        "\n{} idle sessions through a fresh proxy (SSE upstream; brownout with no plan), each its own client; opened at {:.0}/s",
        idle.sessions,
        idle.sessions as f64 / idle.secs_to_open
    );
    println!("| proxy | state | VmRSS | VmHWM | open fds | threads |");
    println!("|---|---|---:|---:|---:|---:|");
    for (who, i) in [("brownout", &idle), ("reference proxy", &idle_ref)] {
        for (what, m) in [
            ("at start".to_string(), &i.start),
            (format!("{} idle sessions", i.sessions), &i.sessions_only),
            (
                format!(
                    "… and {} of them holding a GET SSE stream ({} open at the upstream)",
                    i.streams, i.upstream_streams
                ),
                &i.with_streams,
            ),
        ] {
            println!(
                "| {who} | {what} | **{:.1} MiB** | {:.1} MiB | {} | {} |",
                mib(m.rss_kib),
                mib(m.hwm_kib),
                m.fds,
                m.threads
            );
        }
        println!(
            "{who}: a call afterwards {}",
            if i.call_after_ok {
                "answered"
            } else {
                "TIMED OUT"
            }
        );
    }
    println!("whole run {:.0} s", wall.elapsed().as_secs_f64());

    let out = json!({
        "rounds": ROUNDS,
        "latency_calls": LATENCY_CALLS,
        "sessions": SESSIONS,
        "calls_per_session": CALLS_PER_SESSION,
        "rows": rows,
        "idle_brownout": idle_json(&idle),
        "idle_reference_proxy": idle_json(&idle_ref),
    });
    let dir_out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
    let _ = std::fs::create_dir_all(&dir_out);
    let _ = std::fs::write(dir_out.join("http_relay.json"), format!("{out:#}\n"));
    let _ = std::fs::remove_dir_all(&dir);
    drop(rt);
    drop(up_rt);
}
