//! Abort latency: from the evaluation that finds a gate breached (on the call that breaks
//! it, or a ≤ 100 ms tick) to the last fault leaving the engine, over many aborted runs of
//! `brownout run` against the fixture. `BENCH_RUNS` sets the number of runs (default 50).
//!
//!     cargo bench -p brownout --bench abort_latency

use std::process::Command;

const WORKLOAD: &str = "arrival: {mode: closed, concurrency: 16}\nsteps:\n  - calls: [{tool: search_incidents, arguments: {query: db}}]\nservers:\n  - name: fixture\n    tools:\n      search_incidents: {latency: {added_ms: 2}}\n";

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(50);
    let bin = env!("CARGO_BIN_EXE_brownout");
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("workload.yaml"), WORKLOAD).expect("write");
    std::fs::write(d.join("policy.yaml"), "ladder: [\"100%\"]\n").expect("write");
    let exp = format!(
        "title: abort latency\nlabels: {{env: bench}}\ntarget: {{command: [{bin}, fixture]}}\nload: {{workload: workload.yaml, sessions: 16}}\nbaseline: 500ms\nmethod: [{{stage: all, duration: 30s, sessions: 100%}}]\nfaults: [{{kind: error, tools: [\"search_*\"], probability: 0.5}}]\ngates: [\"error_rate < 1% over 2s min 5 calls\"]\nrecovery: {{within: 1s}}\n"
    );
    std::fs::write(d.join("exp.yaml"), exp).expect("write");
    let mut lat = Vec::new();
    for i in 0..runs {
        let journal = d.join(format!("j{i}.json"));
        let out = Command::new(bin)
            .args(["run", "exp.yaml", "--policy", "policy.yaml", "--journal"])
            .arg(&journal)
            .current_dir(d)
            .output()
            .expect("run");
        let j: serde_json::Value = std::fs::read_to_string(&journal)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        match j["breach"]["abort_latency_ms"].as_f64() {
            Some(v) => lat.push(v),
            None => eprintln!("run {i}: not aborted (exit {:?})", out.status.code()),
        }
    }
    lat.sort_by(f64::total_cmp);
    let pct = |p: f64| lat[((p * lat.len() as f64).ceil() as usize).clamp(1, lat.len()) - 1];
    if lat.is_empty() {
        println!("abort latency: no aborted run");
        return;
    }
    println!(
        "abort latency over {} aborted runs: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        lat.len(),
        pct(0.5),
        pct(0.99),
        lat[lat.len() - 1]
    );
}
