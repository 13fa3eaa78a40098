//! Benchmark: what `--otlp` costs a relayed call — with a dead collector (a closed port) and
//! with a live one — against the same relay without it, in the same run.
//!
//! Run: `nice -n 5 cargo bench -p brownout --bench otlp` (release build). brownout's own
//! client calls `tools/call echo` on the built-in fixture through `brownout proxy stdio`
//! (empty plan) three ways, in alternating rounds: without `--otlp`; with `--otlp` to a
//! port nothing listens on; with `--otlp` to a collector that takes every export (a small
//! in-bench HTTP server answering 200). Per round and path: 200 warm-up calls, 4,000
//! sequential calls (round trip p50, p99), then 8,000 calls with 16 in flight; the relay
//! process's CPU time (user + system, every thread: the exporter's too) per call. Medians
//! over rounds; the added cost is the per-round difference to the relay without `--otlp`.
//! Writes `target/bench/otlp.json`.

#[path = "support/proc_stats.rs"]
mod proc_stats;
#[path = "support/stdio_calls.rs"]
mod stdio_calls;

use brownout::client::StdioClient;
use proc_stats::{brownout_exe, cpu_us, median, pct};
use serde_json::json;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use stdio_calls::{latency_sample, throughput, WARM_UP};

const ROUNDS: usize = 5;
const LATENCY_CALLS: usize = 4000;
const THROUGHPUT_CALLS: usize = 8000;
const IN_FLIGHT: usize = 16;

#[derive(Clone, Copy, PartialEq)]
enum Path {
    Plain,
    Dead,
    Live,
}

impl Path {
    fn name(self) -> &'static str {
        match self {
            Path::Plain => "relay, no --otlp",
            Path::Dead => "--otlp, dead collector",
            Path::Live => "--otlp, live collector",
        }
    }
}

struct Sample {
    p50_us: f64,
    p99_us: f64,
    tput: f64,
    cpu_us_per_call: f64,
}

async fn sample(exe: &str, path: Path, dead: &str, live: &str) -> Sample {
    let mut args: Vec<String> = vec!["proxy".into(), "stdio".into(), "--quiet".into()];
    match path {
        Path::Plain => {}
        Path::Dead => args.extend(["--otlp".into(), dead.to_string()]),
        Path::Live => args.extend(["--otlp".into(), live.to_string()]),
    }
    args.extend(["--".into(), exe.into(), "fixture".into()]);
    let c = StdioClient::spawn(exe, &args, Stdio::null())
        .await
        .expect("spawn");
    let rtts = latency_sample(&c, LATENCY_CALLS).await;
    let c = Arc::new(c);
    let tput = throughput(Arc::clone(&c), THROUGHPUT_CALLS, IN_FLIGHT).await;
    let calls = (WARM_UP + 1 + LATENCY_CALLS + THROUGHPUT_CALLS) as f64;
    let cpu = c.pid().map_or(0.0, cpu_us) / calls;
    if let Ok(c) = Arc::try_unwrap(c) {
        let _ = c.close(Duration::from_secs(10)).await;
    }
    Sample {
        p50_us: pct(&rtts, 0.5),
        p99_us: pct(&rtts, 0.99),
        tput,
        cpu_us_per_call: cpu,
    }
}

/// A collector that takes every export: reads each request whole (HTTP/1.1 with a
/// Content-Length, kept alive), answers 200. By hand: a bench needs no HTTP server crate.
async fn collector(received: Arc<AtomicU64>) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let received = Arc::clone(&received);
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = vec![0u8; 64 * 1024];
                loop {
                    // One request: headers, then Content-Length bytes of body.
                    let head_end = loop {
                        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                        match stream.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    while buf.len() < head_end + len {
                        match stream.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    received.fetch_add(len as u64, Ordering::Relaxed);
                    buf.drain(..head_end + len);
                    let ok = b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if stream.write_all(ok).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

fn main() {
    let exe = &brownout_exe();
    eprintln!("bench: brownout = {exe}");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let received = Arc::new(AtomicU64::new(0));
    let live = rt.block_on(collector(Arc::clone(&received)));
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
        format!("http://{}", l.local_addr().expect("addr"))
    };
    let paths = [Path::Plain, Path::Dead, Path::Live];
    let mut samples: Vec<Vec<Sample>> = paths.iter().map(|_| Vec::new()).collect();
    for round in 0..ROUNDS {
        for (i, p) in paths.iter().enumerate() {
            let s = rt.block_on(sample(exe, *p, &dead, &live));
            eprintln!(
                "round {}/{ROUNDS} {:<24} p50 {:>7.1}µs p99 {:>7.1}µs  {IN_FLIGHT} in flight {:>7.0}/s  CPU {:>5.2}µs/call",
                round + 1,
                p.name(),
                s.p50_us,
                s.p99_us,
                s.tput,
                s.cpu_us_per_call
            );
            samples[i].push(s);
        }
    }
    let med = |i: usize, f: fn(&Sample) -> f64| median(samples[i].iter().map(f).collect());
    let added = |i: usize, f: fn(&Sample) -> f64| {
        median(
            samples[i]
                .iter()
                .zip(&samples[0])
                .map(|(r, d)| f(r) - f(d))
                .collect(),
        )
    };
    println!("\n--otlp vs none, {ROUNDS} rounds, medians ({LATENCY_CALLS} sequential calls, {THROUGHPUT_CALLS} with {IN_FLIGHT} in flight per round)");
    println!(
        "{:<24} {:>8} {:>8} {:>9} {:>9} {:>14} {:>10} {:>10}",
        "path", "p50 µs", "p99 µs", "+p50 µs", "+p99 µs", "calls/s", "CPU µs", "+CPU µs"
    );
    let mut rows = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        let (p50, p99, t, cpu) = (
            med(i, |s| s.p50_us),
            med(i, |s| s.p99_us),
            med(i, |s| s.tput),
            med(i, |s| s.cpu_us_per_call),
        );
        let (a50, a99, acpu) = if i == 0 {
            (0.0, 0.0, 0.0)
        } else {
            (
                added(i, |s| s.p50_us),
                added(i, |s| s.p99_us),
                added(i, |s| s.cpu_us_per_call),
            )
        };
        let ratio = t / med(0, |s| s.tput) * 100.0;
        println!(
            "{:<24} {p50:>8.1} {p99:>8.1} {a50:>9.1} {a99:>9.1} {t:>8.0} {ratio:>4.0}% {cpu:>10.2} {acpu:>10.2}",
            p.name()
        );
        rows.push(json!({"path": p.name(), "p50_us": p50, "p99_us": p99, "added_p50_us": a50, "added_p99_us": a99, "calls_per_s": t, "pct_of_plain": ratio, "relay_cpu_us_per_call": cpu, "added_cpu_us_per_call": acpu}));
    }
    println!(
        "live collector received {:.1} MiB of OTLP protobuf",
        received.load(Ordering::Relaxed) as f64 / 1048576.0
    );
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
    let _ = std::fs::create_dir_all(&out);
    let _ = std::fs::write(
        out.join("otlp.json"),
        serde_json::to_string_pretty(&rows).unwrap_or_default(),
    );
}
