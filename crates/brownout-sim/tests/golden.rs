//! Byte-for-byte replay across code changes: the full JSON report of a set of workloads,
//! plans, seeds and options, compared with golden files the simulator wrote before its
//! hot path was optimised (`tests/golden/*.json`). Any change to a decision, a draw, the
//! order of two events at one instant or a counter shows up here as a diff.
//!
//! The cases cover the headline with and without resilience, SLO gates (also stopping at
//! the first breach), the retry-storm cascade and its fix, chained calls with silent
//! corruption under each agent policy, long-lived sessions, open arrivals with deadlines,
//! and a plan that uses every selector (tools, servers, sessions, after_calls, every_nth,
//! max_injections, windows, correlation) with kinds that delay, fail, drop and drift.
//!
//! To rewrite the files after an intended change of the model (never to make an
//! optimisation pass): `BROWNOUT_GOLDEN_WRITE=1 cargo test -p brownout-sim --test golden`.

use brownout_core::slo::Gate;
use brownout_core::Plan;
use brownout_sim::{simulate, SimOptions, Workload};
use std::path::PathBuf;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn example(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A plan using every selector, over the headline's servers and tools.
const MIXED_PLAN: &str = "seed: 1234
faults:
  - id: slow-logs
    kind: latency
    tools: [\"get_*\"]
    probability: 0.3
    distribution: pareto
    scale_ms: 20
    shape: 1.5
    max_ms: 2000
  - id: inventory-errors
    kind: error
    servers: [inventory]
    sessions: 0.4
    after_calls: 1
    probability: 0.1
    phase: response
  - id: lost
    kind: timeout
    tools: [get_traces]
    every_nth: 2
    max_injections: 1
    probability: 0.5
  - id: drift
    kind: schema_drift
    tools: [describe_service]
    mutation: retype
    path: /severity
    probability: 0.2
  - id: burst
    kind: error
    probability: 0.05
    correlation: {mode: burst, mean_burst_calls: 8}
    window: {start: 2s, duration: 20s}
  - id: episodes
    kind: drop
    tools: [check_dependency]
    probability: 0.05
    correlation: {mode: episodes, episode_ms: 1000, intensity: 0.5}
  - id: cold
    kind: cold_start
    tools: [get_metrics]
    added_ms: 40
";

/// Both kinds of silent change on the chained agent's first call, and a partial result.
const DRIFT_AND_CORRUPT: &str = "seed: 77
faults:
  - id: wrong-service
    kind: corrupt
    tools: [get_incident]
    path: /service
    probability: 0.2
  - id: drifted
    kind: schema_drift
    tools: [get_incident]
    mutation: retype
    path: /service
    probability: 0.15
  - id: truncated
    kind: partial_result
    tools: [get_incident]
    mode: truncate_text
    every_nth: 5
";

/// An open-arrival workload with deadlines, replicas, a queue timeout, a base error rate,
/// think time, a token-bucket limiter that queues and an error-rate breaker.
const OPEN_WORKLOAD: &str = "name: open, deadlines, pools
seed: 21
tasks: 3000
arrival: {mode: open, rate_per_s: 150}
think_ms: 5
task_deadline_ms: 400
steps:
  - calls:
      - {tool: get_metrics, repeat: 2}
      - {tool: describe_service}
    deadline_ms: 150
  - calls:
      - {tool: check_dependency}
      - {tool: get_logs, critical: false}
servers:
  - name: observability
    replicas: 2
    concurrency: 4
    queue_timeout_ms: 60
    tools:
      get_metrics: {latency: {distribution: normal, mean_ms: 20, stddev_ms: 6}, error_rate: 0.01}
      get_logs: {latency: {added_ms: 35, jitter_ms: 10}}
  - name: inventory
    concurrency: 6
    tools:
      describe_service: {latency: {added_ms: 15, jitter_ms: 5}}
      check_dependency: {latency: {distribution: uniform, min_ms: 5, max_ms: 60}}
client:
  timeout_ms: 120
  deadline_aware: true
  degrade: true
  retries: {max_attempts: 3, backoff_ms: 10, multiplier: 2, jitter: 0.3}
  breaker: {mode: error_rate, threshold: 0.5, window: 50, min_calls: 20, open_ms: 300, half_open_probes: 2}
  rate_limiter: {rate_per_s: 1500, burst: 30, mode: queue}
";

const GATES: [&str; 4] = [
    "error_rate < 1% over 10s",
    "p99 < 800ms over 10s",
    "eta{tool=\"get_logs\"} >= 99% over 1000 calls",
    "blast_radius <= 20% over 10s",
];

struct Case {
    name: &'static str,
    workload: String,
    plan: String,
    opts: SimOptions,
}

fn gates(list: &[&str]) -> Vec<Gate> {
    list.iter()
        .map(|g| Gate::parse(g).unwrap_or_else(|e| panic!("{g}: {e}")))
        .collect()
}

fn chained(policy: &str) -> String {
    example("examples/sim/chained-incident.yaml")
        .replace("policy: trust", &format!("policy: {policy}"))
        .replace("tasks: 200", "tasks: 1500")
}

fn cases() -> Vec<Case> {
    let headline = example("examples/sim/headline.yaml");
    let resilient = example("examples/sim/headline-resilient.yaml");
    let errors2 = example("examples/sim/errors-2pct.yaml");
    let errors50 = example("examples/sim/errors-50pct.yaml");
    let cascade = example("examples/sim/cascade.yaml");
    let cascade_fixed = example("examples/sim/cascade-resilient.yaml");
    let trigger = example("examples/sim/cascade-trigger.yaml");
    let corrupt = example("examples/sim/corrupt-service.yaml");
    let series = |tasks| SimOptions {
        tasks: Some(tasks),
        keep_series: true,
        ..SimOptions::default()
    };
    vec![
        Case {
            name: "headline",
            workload: headline.clone(),
            plan: errors2.clone(),
            opts: series(20_000),
        },
        Case {
            name: "headline-seed-99",
            workload: headline.clone(),
            plan: errors2.clone(),
            opts: SimOptions {
                seed: Some(99),
                ..series(5_000)
            },
        },
        Case {
            name: "headline-50pct",
            workload: headline.clone(),
            plan: errors50,
            opts: series(3_000),
        },
        Case {
            name: "headline-gates",
            workload: headline.clone(),
            plan: errors2.clone(),
            opts: SimOptions {
                gates: gates(&GATES),
                ..series(20_000)
            },
        },
        Case {
            name: "headline-mixed-plan",
            workload: headline.clone(),
            plan: MIXED_PLAN.to_string(),
            opts: series(8_000),
        },
        Case {
            name: "headline-mixed-plan-sessions",
            workload: headline,
            plan: MIXED_PLAN.to_string(),
            opts: SimOptions {
                sessions: Some(10),
                gates: gates(&GATES),
                ..series(8_000)
            },
        },
        Case {
            name: "resilient",
            workload: resilient.clone(),
            plan: errors2.clone(),
            opts: series(20_000),
        },
        Case {
            name: "resilient-mixed-plan",
            workload: resilient,
            plan: MIXED_PLAN.to_string(),
            opts: SimOptions {
                seed: Some(3),
                ..series(8_000)
            },
        },
        Case {
            name: "cascade",
            workload: cascade.clone(),
            plan: trigger.clone(),
            opts: SimOptions {
                keep_series: true,
                gates: gates(&["error_rate < 1% over 10s"]),
                ..SimOptions::default()
            },
        },
        Case {
            name: "cascade-stop-at-breach",
            workload: cascade,
            plan: trigger.clone(),
            opts: SimOptions {
                gates: gates(&["error_rate < 1% over 10s", "p95 < 300ms over 5s"]),
                stop_at_breach: true,
                ..SimOptions::default()
            },
        },
        Case {
            name: "cascade-resilient",
            workload: cascade_fixed,
            plan: trigger,
            opts: SimOptions {
                keep_series: true,
                gates: gates(&["error_rate < 1% over 10s"]),
                ..SimOptions::default()
            },
        },
        Case {
            name: "chained-trust",
            workload: chained("trust"),
            plan: corrupt.clone(),
            opts: SimOptions::default(),
        },
        Case {
            name: "chained-validate",
            workload: chained("validate"),
            plan: DRIFT_AND_CORRUPT.to_string(),
            opts: SimOptions::default(),
        },
        Case {
            name: "chained-verify-sessions",
            workload: chained("verify"),
            plan: corrupt,
            opts: SimOptions {
                sessions: Some(4),
                ..SimOptions::default()
            },
        },
        Case {
            name: "open-deadlines-pools",
            workload: OPEN_WORKLOAD.to_string(),
            plan: MIXED_PLAN.to_string(),
            opts: SimOptions {
                keep_series: true,
                gates: gates(&GATES),
                ..SimOptions::default()
            },
        },
        Case {
            name: "open-deadlines-pools-2pct",
            workload: OPEN_WORKLOAD.to_string(),
            plan: errors2,
            opts: SimOptions {
                seed: Some(5),
                ..SimOptions::default()
            },
        },
    ]
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn render(case: &Case) -> String {
    let w = Workload::from_str_named(&case.workload, case.name).unwrap_or_else(|e| panic!("{e}"));
    let p = Plan::from_str_named(&case.plan, case.name).unwrap_or_else(|e| panic!("{e}"));
    let report = simulate(&w, p, &case.opts);
    let mut text = serde_json::to_string_pretty(&report).expect("a report serialises");
    text.push('\n');
    text
}

#[test]
fn every_case_replays_its_golden_report_byte_for_byte() {
    let write = std::env::var_os("BROWNOUT_GOLDEN_WRITE").is_some();
    let dir = golden_dir();
    let mut differ = Vec::new();
    for case in cases() {
        let path = dir.join(format!("{}.json", case.name));
        let got = render(&case);
        if write {
            std::fs::create_dir_all(&dir).expect("golden dir");
            std::fs::write(&path, &got).expect("write golden");
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (BROWNOUT_GOLDEN_WRITE=1 writes it)",
                path.display()
            )
        });
        if got != want {
            let line = got
                .lines()
                .zip(want.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(got.lines().count().min(want.lines().count()));
            differ.push(format!(
                "{}: first difference at line {}: got {:?}, want {:?}",
                case.name,
                line + 1,
                got.lines().nth(line),
                want.lines().nth(line)
            ));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

#[test]
fn the_golden_cases_exercise_what_they_claim() {
    // A golden file that froze a degenerate run (nothing injected, no gate, no silent
    // failure) would guard nothing: check the cases reach what the module doc says.
    let dir = golden_dir();
    let read = |name: &str| -> serde_json::Value {
        let path = dir.join(format!("{name}.json"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let mixed = read("headline-mixed-plan");
    for id in [
        "slow-logs",
        "inventory-errors",
        "lost",
        "drift",
        "burst",
        "episodes",
        "cold",
    ] {
        let n = mixed["injections"][id].as_u64().unwrap_or(0);
        assert!(n > 0, "fault {id} never injected: {}", mixed["injections"]);
    }
    assert!(mixed["silent_failures"].as_u64().unwrap_or(0) > 0);
    let gated = read("headline-gates");
    assert_eq!(gated["gates"].as_array().map(Vec::len), Some(4));
    let cascade = read("cascade");
    assert!(cascade["attempt_amplification"].as_f64().unwrap_or(0.0) > 2.0);
    let stopped = read("cascade-stop-at-breach");
    assert!(stopped["tasks"].as_u64() < cascade["tasks"].as_u64());
    let resilient = read("resilient-mixed-plan");
    assert!(resilient["breaker_transitions"].as_u64().unwrap_or(0) > 0);
    let chained = read("chained-trust");
    assert!(chained["silent_failures"].as_u64().unwrap_or(0) > 0);
    let open = read("open-deadlines-pools");
    assert!(open["skipped_calls"].as_u64().unwrap_or(0) > 0);
    let attempts = open["attempts"].as_u64().unwrap_or(0);
    assert!(attempts * 2 > open["calls"].as_u64().unwrap_or(0), "{open}");
}
