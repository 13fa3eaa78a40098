//! Benchmark: what the stdio relay adds to a `tools/call` round trip.
//!
//! Run: `cargo bench -p brownout --bench stdio_relay` (release build). Against the built-in
//! fixture, in the same run and in alternating rounds, it measures the direct path, one bare
//! pipe hop (a process that only copies bytes: the floor for anything in the middle; see
//! `support/pipe_hop.rs`), and the relay with an empty plan and with a plan whose faults
//! never match. For each: the round trip (p50, p99) with one call in flight, back to back;
//! the p50 from a lean blocking client with every process of the path on one CPU (the
//! steadiest figure, `support/lean_client.rs`); the p50 of calls spaced by a 1 ms timer
//! (1–2 ms with tokio's timer; as an agent's calls come: every process on the path is idle
//! when one arrives); throughput with 1 and 16 calls in flight; the relay's peak RSS and
//! CPU per call. It prints a table and writes `target/bench/stdio_relay.json`.
//! Medians over rounds are reported; these machines are noisy.

#[path = "support/lean_client.rs"]
mod lean_client;
#[path = "support/pipe_hop.rs"]
mod pipe_hop;
#[path = "support/proc_stats.rs"]
mod proc_stats;
#[path = "support/stdio_calls.rs"]
mod stdio_calls;

use brownout::client::StdioClient;
use proc_stats::{brownout_exe, cpu_us, median, pct, peak_rss_kib};
use serde_json::json;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use stdio_calls::{latency_sample, throughput, timed_calls, WARM_UP};

const ROUNDS: usize = 5;
const LATENCY_CALLS: usize = 4000;
const THROUGHPUT_CALLS: usize = 8000;
const SPACED_CALLS: usize = 1000;
const GAP: Duration = Duration::from_millis(1);

const NEVER_MATCHES: &str = "seed: 1\nfaults:\n  - {kind: latency, tools: [no_such_tool], added_ms: 100}\n  - {kind: error, methods: [no/such/method]}\n  - {kind: schema_drift, tools: [nothing_*], probability: 0.5}\n  - {kind: drop, arguments: {message: never}}\n";

#[derive(Clone, Copy, PartialEq)]
enum Path {
    Direct,
    PipeHop,
    Empty,
    NoMatch,
}

impl Path {
    fn name(self) -> &'static str {
        match self {
            Path::Direct => "direct",
            Path::PipeHop => "bare pipe hop (floor)",
            Path::Empty => "relay, empty plan",
            Path::NoMatch => "relay, non-matching plan",
        }
    }
}

struct Sample {
    /// CPU time (user + system) the relay process spent per call, over the whole sample.
    cpu_us_per_call: f64,
    p50_us: f64,
    p99_us: f64,
    /// p50 of calls spaced by [`GAP`].
    spaced_p50_us: f64,
    /// p50 of back-to-back calls from the lean client, every process on one CPU
    /// ([`lean_client`]).
    lean_p50_us: f64,
    tput1: f64,
    tput16: f64,
    rss_kib: u64,
}

async fn sample(exe: &str, path: Path, plan: &std::path::Path) -> Sample {
    let hop = std::env::current_exe()
        .expect("the bench's own path")
        .display()
        .to_string();
    let program = if path == Path::PipeHop { &hop } else { exe };
    let args: Vec<String> = match path {
        Path::Direct => vec!["fixture".into()],
        Path::PipeHop => vec![pipe_hop::FLAG.into(), exe.into(), "fixture".into()],
        Path::Empty => vec![
            "proxy".into(),
            "stdio".into(),
            "--quiet".into(),
            "--".into(),
            exe.into(),
            "fixture".into(),
        ],
        Path::NoMatch => vec![
            "proxy".into(),
            "stdio".into(),
            "--quiet".into(),
            "--plan".into(),
            plan.display().to_string(),
            "--".into(),
            exe.into(),
            "fixture".into(),
        ],
    };
    let lean = lean_client::pinned(program, &args, WARM_UP, LATENCY_CALLS);
    let c = StdioClient::spawn(program, &args, Stdio::inherit())
        .await
        .expect("spawn");
    let rtts = latency_sample(&c, LATENCY_CALLS).await;
    let spaced = timed_calls(&c, SPACED_CALLS, GAP).await;
    let pid = c.pid();
    let c = Arc::new(c);
    let tput1 = throughput(Arc::clone(&c), THROUGHPUT_CALLS, 1).await;
    let tput16 = throughput(Arc::clone(&c), THROUGHPUT_CALLS, 16).await;
    let rss_kib = if path == Path::Direct {
        0
    } else {
        pid.map_or(0, peak_rss_kib)
    };
    let calls = (WARM_UP + LATENCY_CALLS + SPACED_CALLS + 2 * THROUGHPUT_CALLS) as f64;
    let cpu_us_per_call = if path == Path::Direct {
        0.0
    } else {
        pid.map_or(0.0, cpu_us) / calls
    };
    if let Ok(c) = Arc::try_unwrap(c) {
        let _ = c.close(Duration::from_secs(5)).await;
    }
    Sample {
        cpu_us_per_call,
        p50_us: pct(&rtts, 0.5),
        p99_us: pct(&rtts, 0.99),
        spaced_p50_us: pct(&spaced, 0.5),
        lean_p50_us: lean,
        tput1,
        tput16,
        rss_kib,
    }
}

fn main() {
    pipe_hop::run_if_asked();
    lean_client::run_if_asked();
    let exe = &brownout_exe();
    eprintln!("bench: brownout = {exe}");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = std::env::temp_dir().join(format!("brownout-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let plan = dir.join("never.yaml");
    std::fs::write(&plan, NEVER_MATCHES).expect("plan");
    let paths = [Path::Direct, Path::PipeHop, Path::Empty, Path::NoMatch];

    let mut samples: Vec<Vec<Sample>> = paths.iter().map(|_| Vec::new()).collect();
    for round in 0..ROUNDS {
        for (i, p) in paths.iter().enumerate() {
            let s = rt.block_on(sample(exe, *p, &plan));
            eprintln!("round {}/{ROUNDS} {:<26} p50 {:>7.1}µs p99 {:>7.1}µs spaced p50 {:>7.1}µs lean p50 {:>7.1}µs  1 in flight {:>7.0}/s  16 in flight {:>7.0}/s", round + 1, p.name(), s.p50_us, s.p99_us, s.spaced_p50_us, s.lean_p50_us, s.tput1, s.tput16);
            samples[i].push(s);
        }
    }
    let med = |i: usize, f: fn(&Sample) -> f64| median(samples[i].iter().map(f).collect());
    // Added latency: the per-round difference to the direct path, then the median of rounds.
    let added = |i: usize, f: fn(&Sample) -> f64| {
        median(
            samples[i]
                .iter()
                .zip(&samples[0])
                .map(|(r, d)| f(r) - f(d))
                .collect(),
        )
    };
    println!("\nstdio relay vs direct, {ROUNDS} rounds, medians ({LATENCY_CALLS} back-to-back calls per round for latency, {SPACED_CALLS} spaced by {GAP:?}, {LATENCY_CALLS} back to back from the lean client on one CPU, {THROUGHPUT_CALLS} for throughput)");
    println!(
        "{:<26} {:>9} {:>9} {:>11} {:>11} {:>12} {:>10} {:>13} {:>13} {:>9} {:>12}",
        "path",
        "p50 µs",
        "p99 µs",
        "+p50 µs",
        "+p99 µs",
        "+spaced µs",
        "+lean µs",
        "tput 1/s",
        "tput 16/s",
        "RSS MiB",
        "CPU µs/call"
    );
    let mut json_rows = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        let (p50, p99, t1, t16) = (
            med(i, |s| s.p50_us),
            med(i, |s| s.p99_us),
            med(i, |s| s.tput1),
            med(i, |s| s.tput16),
        );
        let (a50, a99, sp, lean) = if i == 0 {
            (0.0, 0.0, 0.0, 0.0)
        } else {
            (
                added(i, |s| s.p50_us),
                added(i, |s| s.p99_us),
                added(i, |s| s.spaced_p50_us),
                added(i, |s| s.lean_p50_us),
            )
        };
        let rss = med(i, |s| s.rss_kib as f64) / 1024.0;
        let cpu = med(i, |s| s.cpu_us_per_call);
        let r1 = t1 / med(0, |s| s.tput1) * 100.0;
        let r16 = t16 / med(0, |s| s.tput16) * 100.0;
        println!("{:<26} {p50:>9.1} {p99:>9.1} {a50:>11.1} {a99:>11.1} {sp:>12.1} {lean:>10.1} {t1:>8.0} {r1:>3.0}% {t16:>8.0} {r16:>3.0}% {rss:>9.1} {cpu:>12.1}", p.name());
        json_rows.push(json!({"path": p.name(), "p50_us": p50, "p99_us": p99, "added_p50_us": a50, "added_p99_us": a99, "added_spaced_p50_us": sp, "added_lean_p50_us": lean, "throughput_1": t1, "throughput_16": t16, "throughput_1_pct_of_direct": r1, "throughput_16_pct_of_direct": r16, "peak_rss_mib": rss, "relay_cpu_us_per_call": cpu}));
    }
    // What the relay costs beyond the floor: per round, relay minus bare hop, then the median.
    let above_hop = |i: usize, f: fn(&Sample) -> f64| {
        median(
            samples[i]
                .iter()
                .zip(&samples[1])
                .map(|(r, h)| f(r) - f(h))
                .collect(),
        )
    };
    for (i, p) in paths.iter().enumerate().skip(2) {
        let (a50, a99, sp, lean, cpu) = (
            above_hop(i, |s| s.p50_us),
            above_hop(i, |s| s.p99_us),
            above_hop(i, |s| s.spaced_p50_us),
            above_hop(i, |s| s.lean_p50_us),
            above_hop(i, |s| s.cpu_us_per_call),
        );
        println!(
            "{:<26} above the bare pipe hop: p50 {a50:+.1} µs, p99 {a99:+.1} µs, spaced p50 {sp:+.1} µs, lean p50 {lean:+.1} µs, CPU {cpu:+.1} µs/call",
            p.name()
        );
        json_rows.push(json!({"path": p.name(), "above_pipe_hop_p50_us": a50, "above_pipe_hop_p99_us": a99, "above_pipe_hop_spaced_p50_us": sp, "above_pipe_hop_lean_p50_us": lean, "above_pipe_hop_cpu_us_per_call": cpu}));
    }
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
    let _ = std::fs::create_dir_all(&out);
    let _ = std::fs::write(
        out.join("stdio_relay.json"),
        serde_json::to_string_pretty(&json_rows).unwrap_or_default(),
    );
    let _ = std::fs::remove_dir_all(&dir);
}
