//! Benchmark: what taint tracking costs the engine per relayed call (docs/silent.md).
//!
//! Run: `cargo bench -p brownout-core --bench taint`. One `tools/call` (request and answer,
//! the same bytes a stdio or HTTP front hands the engine) through `Engine::on_message`:
//!
//! - `no result-changing fault`: a plan whose only fault (`corrupt`, probability 0) never
//!   hits: the session holds no taint, nothing is parsed for taints;
//! - `16 taints held`: the same calls on a session holding 16 pending taints (left by 16
//!   corrupted results earlier), so every request's arguments are parsed and checked;
//! - `corrupt on every call`: every answer is corrupted (the fault's own work) and taints
//!   are created and checked — the cost a result-changing fault brings with it.
//!
//! Alternating rounds, median ns per call over rounds. The engine is the same in every
//! front, so the figure is the stdio and the HTTP relay's added CPU alike.
//!
//! For noise-free instruction counts, run one scenario under callgrind at two sizes and
//! divide the difference (scripts/taint-callgrind):
//! `TAINT_BENCH_ONLY=held TAINT_BENCH_CALLS=2000 TAINT_BENCH_ROUNDS=1 valgrind --tool=callgrind <bench binary>`.

use brownout_core::{Engine, EngineConfig, Plan, Side, Time};
use std::time::Instant;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn engine(plan: &str) -> Engine {
    let plan = Plan::from_str_named(plan, "bench.yaml").unwrap_or_else(|e| panic!("{e}"));
    Engine::new(
        plan,
        EngineConfig {
            record_events: false,
            ..EngineConfig::default()
        },
    )
}

fn request(id: u64, tool: &str) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"id":"INC-{id}","service":"checkout","note":"look at the logs first"}}}}}}"#).into_bytes()
}

fn answer(id: u64) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{{\"id\":\"INC-{id}\",\"service\":\"payments-api\"}}"}}],"structuredContent":{{"id":"INC-{id}","service":"payments-api","owner":"team-billing"}}}}}}"#).into_bytes()
}

/// ns per call (request + answer) over `calls` calls of `tool`.
fn run(e: &mut Engine, tool: &str, first: u64, calls: u64) -> f64 {
    let msgs: Vec<(Vec<u8>, Vec<u8>)> = (first..first + calls)
        .map(|i| (request(i, tool), answer(i)))
        .collect();
    let t0 = Instant::now();
    for (i, (req, ans)) in msgs.iter().enumerate() {
        let t = Time(1_000 + i as u64);
        std::hint::black_box(e.on_message(Side::Client, "s", req, t));
        std::hint::black_box(e.on_message(Side::Server, "s", ans, t));
    }
    t0.elapsed().as_nanos() as f64 / calls.max(1) as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() {
    let rounds = env_or("TAINT_BENCH_ROUNDS", 7) as usize;
    let calls = env_or("TAINT_BENCH_CALLS", 100_000);
    let only = std::env::var("TAINT_BENCH_ONLY").unwrap_or_default();
    let wants = |s: &str| only.is_empty() || only == s;
    let never = "seed: 1\nfaults:\n  - {kind: corrupt, tools: [get_incident], path: /service, probability: 0}\n";
    let always = "seed: 1\nfaults:\n  - {kind: corrupt, tools: [get_incident], path: /service}\n";
    let (mut empty, mut off, mut held, mut every) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let base = 10_000_000 * (round as u64 + 1);
        if wants("empty") {
            let mut e = engine("faults: []\n");
            empty.push(run(&mut e, "echo", base, calls));
        }
        if wants("off") {
            let mut e = engine(never);
            off.push(run(&mut e, "echo", base, calls));
        }
        if wants("held") {
            // 16 corrupted results leave 16 pending taints; then the same plain calls.
            let mut e = engine(always);
            for i in 0..16 {
                let t = Time(i);
                e.on_message(Side::Client, "s", &request(i, "get_incident"), t);
                e.on_message(Side::Server, "s", &answer(i), t);
            }
            assert_eq!(e.summary().silent().altered, 16);
            held.push(run(&mut e, "echo", base, calls));
            assert_eq!(
                e.summary().silent().pending,
                16,
                "the taints stayed pending"
            );
        }
        if wants("every") {
            let mut e = engine(always);
            every.push(run(&mut e, "get_incident", base, calls));
        }
    }
    let (empty, off, held, every) = (median(empty), median(off), median(held), median(every));
    println!(
        "engine, one tools/call (request + answer), median of {rounds} rounds x {calls} calls:"
    );
    println!("  empty plan                    {empty:>8.0} ns");
    println!(
        "  no result-changing fault      {off:>8.0} ns   ({:+.2} us)",
        (off - empty) / 1000.0
    );
    println!(
        "  16 taints held (checked)      {held:>8.0} ns   ({:+.2} us)",
        (held - off) / 1000.0
    );
    println!(
        "  corrupt on every call         {every:>8.0} ns   ({:+.2} us)",
        (every - off) / 1000.0
    );
}
