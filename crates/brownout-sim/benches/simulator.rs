//! Benchmark: simulated tool calls per second on one core (the simulator is single-threaded).
//!
//! Run: `cargo bench -p brownout-sim --bench simulator`. Workloads from `examples/sim/`
//! under the headline's 2 % error plan: the headline without resilience, the same with four
//! SLO gates watched in virtual time (the cost of `--gate`), the headline with retries, a
//! retry budget, degradation and a breaker, 1,000,000 tasks at fan-out 8, and the cascade
//! the boundary search simulates (`examples/sim/cascade.yaml` under its trigger: unbounded
//! retries, a rate limiter, a squeezed pool).
//! Reports the median over rounds of logical calls per second and attempts per second, and
//! writes `target/bench/simulator.json`.
//!
//! For profiling (e.g. under `valgrind --tool=callgrind`): `BENCH_CASE=TEXT` runs only the
//! cases whose name contains TEXT, `BENCH_TASKS=N` overrides their task counts and
//! `BENCH_ROUNDS=N` the number of rounds.

use brownout_core::slo::Gate;
use brownout_core::Plan;
use brownout_sim::{simulate, SimOptions, Workload};
use std::path::PathBuf;
use std::time::Instant;

const ROUNDS: usize = 5;

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// The gates of the gated case: a time window, a percentile, a scoped count window, tasks.
const GATES: [&str; 4] = [
    "error_rate < 1% over 10s",
    "p99 < 800ms over 10s",
    "eta{tool=\"get_logs\"} >= 99% over 1000 calls",
    "blast_radius <= 20% over 10s",
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn load(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let errors_2pct = "examples/sim/errors-2pct.yaml";
    let gates: Vec<Gate> = GATES
        .iter()
        .map(|g| Gate::parse(g).unwrap_or_else(|e| panic!("{g}: {e}")))
        .collect();
    let cases = [
        (
            "headline, no resilience",
            "examples/sim/headline.yaml",
            errors_2pct,
            200_000u64,
            Vec::new(),
        ),
        (
            "headline, no resilience, 4 gates",
            "examples/sim/headline.yaml",
            errors_2pct,
            200_000u64,
            gates,
        ),
        (
            "headline, retries + breaker + degradation",
            "examples/sim/headline-resilient.yaml",
            errors_2pct,
            200_000,
            Vec::new(),
        ),
        (
            "1,000,000 tasks at fan-out 8, no resilience",
            "examples/sim/headline.yaml",
            errors_2pct,
            1_000_000,
            Vec::new(),
        ),
        (
            "cascade, unbounded retries + rate limiter",
            "examples/sim/cascade.yaml",
            "examples/sim/cascade-trigger.yaml",
            9_000,
            Vec::new(),
        ),
    ];
    let only = std::env::var("BENCH_CASE").ok();
    let rounds = env_number("BENCH_ROUNDS").map_or(ROUNDS, |n| n.max(1) as usize);
    let mut rows = Vec::new();
    println!(
        "{:<46} {:>10} {:>12} {:>14} {:>14} {:>9}",
        "workload", "tasks", "calls", "calls/s", "attempts/s", "wall s"
    );
    for (name, workload, plan_path, tasks, gates) in cases {
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        let tasks = env_number("BENCH_TASKS").unwrap_or(tasks);
        let w =
            Workload::from_str_named(&load(workload), workload).unwrap_or_else(|e| panic!("{e}"));
        let plan_text = load(plan_path);
        let (mut calls_s, mut attempts_s, mut wall) = (Vec::new(), Vec::new(), Vec::new());
        let mut calls = 0;
        for _ in 0..rounds {
            let plan =
                Plan::from_str_named(&plan_text, plan_path).unwrap_or_else(|e| panic!("{e}"));
            let opts = SimOptions {
                tasks: Some(tasks),
                gates: gates.clone(),
                ..SimOptions::default()
            };
            let t = Instant::now();
            let r = simulate(&w, plan, &opts);
            let s = t.elapsed().as_secs_f64();
            calls = r.calls;
            calls_s.push(r.calls as f64 / s);
            attempts_s.push(r.attempts as f64 / s);
            wall.push(s);
        }
        let (c, a, s) = (median(calls_s), median(attempts_s), median(wall));
        println!("{name:<46} {tasks:>10} {calls:>12} {c:>14.0} {a:>14.0} {s:>9.2}");
        rows.push(
            serde_json::json!({"workload": name, "tasks": tasks, "calls": calls,
            "calls_per_s": c, "attempts_per_s": a, "wall_s": s}),
        );
    }
    let out = repo().join("target/bench");
    let _ = std::fs::create_dir_all(&out);
    let _ = std::fs::write(
        out.join("simulator.json"),
        serde_json::to_string_pretty(&rows).unwrap_or_default(),
    );
}
