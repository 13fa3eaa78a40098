//! Benchmark: reading a JSON-RPC message, the first thing the engine does with every message
//! a relay hands it — the one-pass reader (`jsonrpc::classify`) against serde_json's reading
//! (`jsonrpc::reference::classify`, how brownout read messages before), in the same run.
//!
//! Run: `cargo bench -p brownout-core --bench classify`. Five messages: the stdio bench's
//! `tools/call` request and its answer, a request and an answer with structured content (the
//! taint bench's), and a 16 KiB text result. Alternating rounds, median ns per message.
//!
//! For noise-free instruction counts, one reader and message under callgrind at two sizes
//! (`CLASSIFY_BENCH_ONLY=one|serde`, `CLASSIFY_BENCH_MESSAGE=0..4`, `CLASSIFY_BENCH_CALLS`,
//! `CLASSIFY_BENCH_ROUNDS=1`): the difference over the extra calls is the count per message.

use brownout_core::jsonrpc::{classify, reference, Message};
use std::time::Instant;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn messages() -> Vec<(&'static str, Vec<u8>)> {
    let text =
        "All systems nominal; the last deploy was at 09:12 and rolled back at 09:40. ".repeat(220);
    vec![
        ("stdio bench request", br#"{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":{"message":"m17"}}}"#.to_vec()),
        ("stdio bench answer", br#"{"jsonrpc":"2.0","id":17,"result":{"content":[{"type":"text","text":"m17"}]}}"#.to_vec()),
        ("structured request", br#"{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"get_incident","arguments":{"id":"INC-17","service":"checkout","note":"look at the logs first"}}}"#.to_vec()),
        ("structured answer", br#"{"jsonrpc":"2.0","id":17,"result":{"content":[{"type":"text","text":"{\"id\":\"INC-17\",\"service\":\"payments-api\"}"}],"structuredContent":{"id":"INC-17","service":"payments-api","owner":"team-billing"}}}"#.to_vec()),
        ("16 KiB text answer", format!(r#"{{"jsonrpc":"2.0","id":17,"result":{{"content":[{{"type":"text","text":"{text}"}}],"isError":false}}}}"#).into_bytes()),
    ]
}

/// ns per message over `calls` reads of `msg`.
fn run(read: fn(&[u8]) -> Message<'_>, msg: &[u8], calls: u64) -> f64 {
    let t0 = Instant::now();
    for _ in 0..calls {
        let m = read(std::hint::black_box(msg));
        assert!(matches!(m, Message::Single(_)), "not read as a message");
        std::hint::black_box(m);
    }
    t0.elapsed().as_nanos() as f64 / calls.max(1) as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() {
    let rounds = env_or("CLASSIFY_BENCH_ROUNDS", 7) as usize;
    let calls = env_or("CLASSIFY_BENCH_CALLS", 200_000);
    let only = std::env::var("CLASSIFY_BENCH_ONLY").unwrap_or_default();
    let which = std::env::var("CLASSIFY_BENCH_MESSAGE").ok();
    let msgs = messages();
    println!("reading a JSON-RPC message: one pass vs serde_json, median of {rounds} rounds");
    for (n, (name, msg)) in msgs.iter().enumerate() {
        if which.as_deref().is_some_and(|w| w != n.to_string()) {
            continue;
        }
        let calls = if msg.len() > 4096 { calls / 20 } else { calls }.max(1);
        let (mut one, mut serde) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            if only.is_empty() || only == "one" {
                one.push(run(classify, msg, calls));
            }
            if only.is_empty() || only == "serde" {
                serde.push(run(reference::classify, msg, calls));
            }
        }
        let (one, serde) = (median(one), median(serde));
        println!(
            "  {name:<22} {:>6} B   one pass {one:>8.0} ns   serde_json {serde:>8.0} ns   {:.2}x",
            msg.len(),
            serde / one
        );
    }
}
