//! Benchmark: the load generator's throughput (`brownout::load`), with the relay in the path.
//!
//! Run: `cargo bench -p brownout --bench load` (release build; about a minute). Against the
//! built-in fixture:
//! - stdio: one session, `brownout proxy stdio -- brownout fixture`, a closed loop of 16
//!   agents each making one `tools/call echo` per task (16 calls in flight);
//! - HTTP: `brownout proxy http -- brownout fixture` (one fixture process per session), 64
//!   sessions, one agent each (64 calls in flight).
//!
//! Per round and target it reports calls/s (all answered ok, or the round fails), p50/p99
//! latency from the load's own histogram, and the generator's CPU per call (this process's
//! user + system time over the calls). Targets (issue 9): ≥ 20,000 calls/s over stdio with 16
//! in flight, ≥ 10,000 calls/s over HTTP at 64 sessions. Medians of rounds are printed and
//! written to `target/bench/load.json`. Set `BROWNOUT_BENCH_QUICK=1` for one short round.

#[path = "support/proc_stats.rs"]
mod proc_stats;

use brownout::load::{self, LoadOptions, LoadSummary, LoadTarget};
use brownout_sim::Workload;
use proc_stats::{cpu_us, median};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

const STDIO_TASKS: u64 = 200_000;
const HTTP_TASKS: u64 = 100_000;

fn workload(agents: u32, tasks: u64) -> Workload {
    let text = format!(
        "tasks: {tasks}\narrival: {{mode: closed, concurrency: {agents}}}\nsteps:\n  - calls: [{{tool: echo, arguments: {{message: bench}}}}]\nclient: {{timeout_ms: 10000}}\n"
    );
    Workload::from_str_live(&text, "bench.yaml").unwrap_or_else(|e| panic!("{e}"))
}

struct Sample {
    calls_per_s: f64,
    p50_ms: f64,
    p99_ms: f64,
    cpu_us_per_call: f64,
}

fn sample(
    rt: &tokio::runtime::Runtime,
    w: &Workload,
    target: LoadTarget,
    sessions: usize,
) -> Sample {
    let me = std::process::id();
    let cpu0 = cpu_us(me);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    drop(rx);
    let s: LoadSummary = rt
        .block_on(load::run(
            w,
            target,
            LoadOptions {
                sessions,
                ..LoadOptions::default()
            },
            tx,
        ))
        .unwrap_or_else(|e| panic!("load: {e}"));
    let cpu = cpu_us(me) - cpu0;
    assert_eq!(
        s.outcomes.get("ok").copied(),
        Some(s.calls),
        "every call ok: {s:?}"
    );
    Sample {
        calls_per_s: s.calls_per_s,
        p50_ms: s.latency_ms.p50,
        p99_ms: s.latency_ms.p99,
        cpu_us_per_call: cpu / s.calls.max(1) as f64,
    }
}

/// `brownout proxy http -- brownout fixture` on a free port; its URL. The caller kills and
/// waits for it; a panic here ends the bench (and the relay with its stdin gone).
#[allow(clippy::zombie_processes)]
fn http_relay(exe: &str) -> (Child, String) {
    let mut child = Command::new(exe)
        .args([
            "proxy",
            "http",
            "--quiet",
            "--listen",
            "127.0.0.1:0",
            "--max-sessions",
            "128",
            "--",
            exe,
            "fixture",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the HTTP relay");
    let mut err = BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    loop {
        line.clear();
        if err.read_line(&mut line).unwrap_or(0) == 0 {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the relay exited before listening");
        }
        if let Some(rest) = line.strip_prefix("brownout: relaying ") {
            let url = rest
                .split(" -> ")
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
            // Keep draining stderr so the relay never blocks on it.
            std::thread::spawn(move || for _ in err.lines() {});
            return (child, url);
        }
    }
}

fn main() {
    let exe = env!("CARGO_BIN_EXE_brownout");
    let quick = std::env::var_os("BROWNOUT_BENCH_QUICK").is_some();
    let (rounds, div) = if quick { (1, 10) } else { (3, 1) };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let stdio_cmd: Vec<String> = ["proxy", "stdio", "--quiet", "--", exe, "fixture"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut cmd = vec![exe.to_string()];
    cmd.extend(stdio_cmd);
    let ws = workload(16, STDIO_TASKS / div);
    let wh = workload(64, HTTP_TASKS / div);
    let (mut stdio, mut http) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        let s = sample(
            &rt,
            &ws,
            LoadTarget::Stdio {
                command: cmd.clone(),
            },
            1,
        );
        eprintln!("round {round}/{rounds} stdio, 16 in flight: {:>8.0} calls/s  p50 {:.3} ms  p99 {:.3} ms  generator {:.1} µs CPU/call", s.calls_per_s, s.p50_ms, s.p99_ms, s.cpu_us_per_call);
        stdio.push(s);
        let (mut relay, url) = http_relay(exe);
        let s = sample(
            &rt,
            &wh,
            LoadTarget::Http {
                url,
                headers: vec![],
            },
            64,
        );
        let _ = relay.kill();
        let _ = relay.wait();
        eprintln!("round {round}/{rounds} HTTP, 64 sessions:   {:>8.0} calls/s  p50 {:.3} ms  p99 {:.3} ms  generator {:.1} µs CPU/call", s.calls_per_s, s.p50_ms, s.p99_ms, s.cpu_us_per_call);
        http.push(s);
    }
    let row = |name: &str, target: f64, v: &[Sample]| {
        let m = |f: fn(&Sample) -> f64| median(v.iter().map(f).collect());
        let tput = m(|s| s.calls_per_s);
        println!(
            "{name:<28} {tput:>10.0} {:>10} {:>9.3} {:>9.3} {:>12.1}",
            if tput >= target { "met" } else { "NOT met" },
            m(|s| s.p50_ms),
            m(|s| s.p99_ms),
            m(|s| s.cpu_us_per_call)
        );
        json!({"path": name, "calls_per_s": tput, "target_calls_per_s": target, "met": tput >= target, "p50_ms": m(|s| s.p50_ms), "p99_ms": m(|s| s.p99_ms), "generator_cpu_us_per_call": m(|s| s.cpu_us_per_call)})
    };
    println!("\nload generator through the relay, {rounds} round(s), medians");
    println!(
        "{:<28} {:>10} {:>10} {:>9} {:>9} {:>12}",
        "target", "calls/s", "target", "p50 ms", "p99 ms", "gen µs/call"
    );
    let rows = vec![
        row("stdio, 16 in flight", 20_000.0, &stdio),
        row("HTTP, 64 sessions", 10_000.0, &http),
    ];
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
    let _ = std::fs::create_dir_all(&out);
    let _ = std::fs::write(
        out.join("load.json"),
        serde_json::to_string_pretty(&rows).unwrap_or_default(),
    );
}
