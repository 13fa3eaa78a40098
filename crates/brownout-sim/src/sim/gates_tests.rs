//! Gates in virtual time: they breach when and only when the simulated calls break them,
//! timeouts read as timeouts, and a run with gates replays exactly.

use super::*;
use brownout_core::slo::{Gate, GateStatus, GateSummary};

fn run(workload: &str, plan: &str, gates: &[&str]) -> Report {
    let w = Workload::from_str_named(workload, "w.yaml").unwrap_or_else(|e| panic!("{e}"));
    let plan = Plan::from_str_named(plan, "p.yaml").unwrap_or_else(|e| panic!("{e}"));
    let gates = gates
        .iter()
        .map(|g| Gate::parse(g).unwrap_or_else(|e| panic!("{g}: {e}")))
        .collect();
    simulate(
        &w,
        plan,
        &SimOptions {
            gates,
            ..SimOptions::default()
        },
    )
}

/// `tasks` single-call tasks at 100 per second on tool `t` (10 ms), client as given.
fn workload(tasks: u32, client: &str) -> String {
    format!(
        "tasks: {tasks}
arrival: {{mode: open, rate_per_s: 100}}
steps:
  - calls: [{{tool: t}}]
servers:
  - name: s
    tools:
      t: {{latency: {{added_ms: 10}}}}
client: {{{client}}}
"
    )
}

const NO_FAULTS: &str = "faults: []\n";

fn gate(r: &Report, i: usize) -> &GateSummary {
    &r.gates[i]
}

#[test]
fn an_error_burst_breaches_the_gate_inside_the_burst_and_it_recovers() {
    // 100 calls/s for 30 s; from 10 s to 13 s every call fails.
    let plan = "seed: 1
faults:
  - {id: burst, kind: error, probability: 1, window: {start: 10s, duration: 3s}}
";
    let r = run(
        &workload(3000, "timeout_ms: 1000"),
        plan,
        &[
            "error_rate < 1% over 1s",
            "error_rate < 1% over 1s for 2s",
            "error_rate < 1% over 1s for 5s",
            "error_rate{tool=\"other\"} < 1% over 1s",
            "availability >= 99% over 2s",
        ],
    );
    let g = gate(&r, 0);
    assert!(g.breached, "{g:?}");
    let at = g.first_breach_ms.expect("a breach time");
    // The first failed call lands just after 10 s and breaks the 1 % at once.
    assert!((10_000.0..10_100.0).contains(&at), "{at}");
    assert_eq!(g.worst, Some(1.0));
    assert_eq!(g.breaches, 1);
    // After the burst the window empties of failures: the gate holds again.
    assert_eq!(g.status, GateStatus::Holding);
    // Sustained: breached only two seconds into the burst; a 5 s `for` never breaches.
    let at2 = gate(&r, 1).first_breach_ms.expect("sustained breach");
    assert!((at2 - at - 2000.0).abs() <= 100.0, "{at} {at2}");
    assert!(!gate(&r, 2).breached, "{:?}", gate(&r, 2));
    // Out of scope: never enough samples.
    assert_eq!(gate(&r, 3).status, GateStatus::Insufficient);
    assert_eq!(gate(&r, 3).worst, None);
    // A server error is an answer: availability holds through the burst.
    assert!(!gate(&r, 4).breached, "{:?}", gate(&r, 4));
}

#[test]
fn client_timeouts_read_as_timeouts_and_unanswered() {
    let r = run(
        &workload(300, "timeout_ms: 5"),
        NO_FAULTS,
        &[
            "timeouts < 1% over 1s",
            "availability > 50% over 1s",
            "p99 < 6ms over 1s",
            "amplification <= 1 over 100 calls",
            "blast_radius <= 10% over 100 tasks",
        ],
    );
    assert_eq!(r.surfaced_failures, 300);
    for i in 0..2 {
        assert!(gate(&r, i).breached, "{:?}", gate(&r, i));
    }
    assert_eq!(gate(&r, 0).worst, Some(1.0));
    assert_eq!(gate(&r, 1).worst, Some(0.0));
    // The latency of a timed-out call is the time to give up: 5 ms.
    let p99 = gate(&r, 2).worst.expect("a p99");
    assert!((p99 - 5.0).abs() < 0.05, "{p99}");
    assert!(!gate(&r, 2).breached);
    assert_eq!(gate(&r, 3).worst, Some(1.0));
    assert!(gate(&r, 4).breached);
}

#[test]
fn retries_show_as_amplification() {
    let r = run(
        &workload(
            200,
            "timeout_ms: 5, retries: {max_attempts: 3, backoff_ms: 1}",
        ),
        NO_FAULTS,
        &["amplification < 2 over 50 calls"],
    );
    assert_eq!(gate(&r, 0).worst, Some(3.0));
    assert!(gate(&r, 0).breached);
}

#[test]
fn a_healthy_run_holds_and_runs_with_gates_replay() {
    let gates = ["error_rate < 1% over 1s", "p95 < 20ms over 500 calls"];
    let a = run(&workload(500, "timeout_ms: 1000"), NO_FAULTS, &gates);
    assert!(
        a.gates
            .iter()
            .all(|g| !g.breached && g.status == GateStatus::Holding),
        "{:?}",
        a.gates
    );
    assert_eq!(gate(&a, 0).worst, Some(0.0));
    let b = run(&workload(500, "timeout_ms: 1000"), NO_FAULTS, &gates);
    assert_eq!(a, b);
    // Without gates the report has none, and its JSON no `gates` key.
    let c = run(&workload(500, "timeout_ms: 1000"), NO_FAULTS, &[]);
    assert!(c.gates.is_empty());
    let v = serde_json::to_value(&c).expect("json");
    assert!(v.get("gates").is_none());
    assert_eq!((c.calls, c.attempts, c.tcsr), (a.calls, a.attempts, a.tcsr));
}
