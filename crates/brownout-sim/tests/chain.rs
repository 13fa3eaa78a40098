//! Chained workloads in the simulator: the agent's policy against `corrupt` (a schema-valid
//! wrong value) and `schema_drift` (a schema violation), classified as the relay classifies
//! them live (altered → propagated / noticed / unobserved), deterministic from the seed, and
//! fed to `silent_rate` gates; and the workload format's checks of `{from, path}` arguments.

use brownout_core::slo::Gate;
use brownout_core::Plan;
use brownout_sim::{simulate, Report, SimOptions, Workload};

const TASKS: u64 = 2000;

fn workload(policy: &str) -> Workload {
    let text = format!(
        "tasks: {TASKS}
arrival: {{mode: closed, concurrency: 8}}
steps:
  - calls:
      - {{tool: get_incident, arguments: {{id: INC-1}}}}
      - {{tool: fetch_logs, arguments: {{service: db}}}}
  - calls:
      - tool: restart_service
        arguments: {{service: {{from: get_incident, path: /service}}}}
servers:
  - name: s
    tools:
      get_incident: {{latency: {{added_ms: 5}}}}
      fetch_logs: {{latency: {{added_ms: 5}}}}
      restart_service: {{latency: {{added_ms: 5}}}}
client:
  agent: {{policy: {policy}}}
"
    );
    Workload::from_str_named(&text, "w.yaml").unwrap_or_else(|e| panic!("{e}"))
}

fn plan(kind: &str, p: f64) -> Plan {
    let extra = if kind == "schema_drift" {
        ", mutation: retype, path: /severity"
    } else {
        ", path: /service"
    };
    Plan::from_str_named(
        &format!("seed: 3\nfaults:\n  - {{id: f, kind: {kind}, tools: [get_incident, fetch_logs], probability: {p}{extra}}}\n"),
        "p.yaml",
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn run(policy: &str, kind: &str) -> Report {
    simulate(&workload(policy), plan(kind, 0.05), &SimOptions::default())
}

#[test]
fn trust_propagates_validate_too_and_verify_notices_corrupt_values() {
    let trust = run("trust", "corrupt");
    let validate = run("validate", "corrupt");
    let verify = run("verify", "corrupt");
    for r in [&trust, &validate, &verify] {
        let s = &r.silent;
        assert!(s.altered > 150, "{s:?}");
        assert_eq!(s.altered, s.propagated + s.noticed + s.unobserved, "{s:?}");
    }
    // fetch_logs' results are altered too, and nobody takes from them: about half of what
    // a fault changes is unobserved whatever the policy.
    let t = &trust.silent;
    assert!(t.silent_rate > 0.35 && t.silent_rate < 0.65, "{t:?}");
    assert_eq!(t.noticed, 0);
    assert_eq!(t.rereads, 0);
    // A schema-valid wrong value passes validation.
    let v = &validate.silent;
    assert!(v.silent_rate > 0.35, "{v:?}");
    assert_eq!(v.noticed, 0, "{v:?}");
    // Cross-checking catches most of it: what still propagates is two altered reads that
    // agree on the wrong value (a fault changes a value the same way each time).
    let x = &verify.silent;
    assert!(x.safe_rate > 0.35, "{x:?}");
    assert!(
        t.silent_rate > 3.0 * x.silent_rate,
        "trust ≫ verify: {t:?} {x:?}"
    );
    assert!(v.silent_rate >= x.silent_rate);
    // Verify reads every consumed result twice: at least one extra call per task.
    assert!(x.rereads >= TASKS, "{x:?}");
    assert_eq!(trust.calls, 3 * TASKS);
    // Extra reads are calls; a task given up skips its restart_service.
    let gave_up = (verify.blast_radius * verify.tasks as f64).round() as u64;
    assert_eq!(verify.calls + gave_up, 3 * TASKS + x.rereads);
    // Of clean and wrong, two of three reads always agree: verify never gives up here.
    assert_eq!(verify.blast_radius, trust.blast_radius);
}

#[test]
fn validate_notices_drift_and_trust_does_not() {
    let trust = run("trust", "schema_drift");
    let validate = run("validate", "schema_drift");
    let (t, v) = (&trust.silent, &validate.silent);
    assert!(t.propagated > 50 && t.noticed == 0, "{t:?}");
    assert_eq!(v.propagated, 0, "{v:?}");
    assert!(v.noticed > 50, "{v:?}");
    // A re-fetch per drifted read of get_incident; a second drifted read fails the task.
    assert_eq!(v.rereads, v.noticed);
    assert!(validate.blast_radius > 0.0 && validate.blast_radius < 0.1);
    assert!(v
        .headline
        .starts_with(&format!("of the {} results a fault changed, ", v.altered)));
}

#[test]
fn the_same_seed_replays_the_same_figures() {
    let a = run("verify", "corrupt");
    let b = run("verify", "corrupt");
    assert_eq!(a, b);
}

#[test]
fn a_silent_rate_gate_breaches_under_trust_and_holds_under_validate_against_drift() {
    let gate = |w: &Workload| {
        let r = simulate(
            w,
            plan("schema_drift", 0.2),
            &SimOptions {
                gates: vec![Gate::parse("silent_rate < 1% over 10s").expect("gate")],
                ..SimOptions::default()
            },
        );
        r.gates[0].clone()
    };
    let trust = gate(&workload("trust"));
    assert!(trust.breached, "{trust:?}");
    let validate = gate(&workload("validate"));
    assert!(
        !validate.breached && validate.worst.is_some(),
        "{validate:?}"
    );
}

fn errors(text: &str) -> Vec<String> {
    match Workload::from_str_live(text, "w.yaml") {
        Ok(_) => Vec::new(),
        Err(e) => e.to_string().lines().map(str::to_string).collect(),
    }
}

#[test]
fn chained_arguments_are_checked_with_line_column_and_hint() {
    let e = errors(
        "steps:
  - calls:
      - {tool: get_incident}
  - calls:
      - tool: restart_service
        arguments:
          service: {from: get_incidnt, path: service}
          other: {from: restart_service, path: /x}
          third: {from: get_incident, pth: /x}
",
    );
    let all = e.join("\n");
    assert!(all.contains("w.yaml:7:"), "the reference's own line: {all}");
    assert!(all.contains("`steps[1].calls[0].arguments.service.from`: `from: get_incidnt` names no tool called in an earlier step (did you mean `get_incident`?)"), "{all}");
    assert!(
        all.contains("`steps[1].calls[0].arguments.service.path`: `service` is not a JSON pointer"),
        "{all}"
    );
    assert!(all.contains("(did you mean `/service`?)"), "{all}");
    assert!(all.contains("`from: restart_service` names no tool called in an earlier step (it is called in this step or a later one"), "{all}");
    assert!(
        all.contains("unknown key `pth` in a chained argument")
            && all.contains("(did you mean `path`?)"),
        "{all}"
    );
    assert!(all.contains("missing `path`"), "{all}");
    // The first step has nothing to take from.
    let e = errors(
        "steps:\n  - calls:\n      - tool: a\n        arguments: {x: {from: a, path: /x}}\n",
    );
    assert!(
        e.join("\n")
            .contains("a value can only come from a step that ran before"),
        "{e:?}"
    );
    // A good one passes, and an unknown policy is named.
    assert!(errors("steps:\n  - calls: [{tool: a}]\n  - calls: [{tool: b, arguments: {x: {from: a, path: ''}}}]\nclient: {agent: {policy: verify}}\n").is_empty());
    let e = errors("steps:\n  - calls: [{tool: a}]\nclient: {agent: {policy: verfy}}\n");
    assert!(e.join("\n").contains("w.yaml:3:"), "{e:?}");
}
