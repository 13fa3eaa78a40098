//! `brownout run` against the built-in fixture: a green experiment completes, a breaching
//! one is aborted by its gate (and stages widen only while gates hold), SIGINT removes the
//! faults and runs the rollbacks, journals validate against their schema.

mod common;
#[path = "experiment_support/mod.rs"]
mod support;

use std::time::Duration;
use support::*;

#[test]
fn a_green_experiment_completes_with_a_valid_journal() {
    let dir = common::tmp();
    let e = Exp {
        rollbacks: "[{command: [touch, rolled-back]}]",
        ..Exp::fixture_green()
    };
    let (code, j, out) = run_experiment(dir.path(), &e, &[]);
    assert_eq!(code, 0, "{out}\n{j}");
    assert_eq!(j["status"], "completed");
    valid_journal(&j);
    assert_eq!(j["steady_state_before"]["met"], true);
    assert_eq!(j["steady_state_after"]["met"], true);
    let stages = j["stages"].as_array().expect("stages");
    assert_eq!(stages.len(), 2);
    assert!(stages.iter().all(|s| s["completed"] == true));
    assert!(stages[1]["slis"]["calls"].as_u64().unwrap_or(0) > 0, "{j}");
    assert!(j["baseline"]["slis"]["calls"].as_u64().unwrap_or(0) > 0);
    assert_eq!(j["rollbacks"][0]["action"], "remove faults");
    assert_eq!(j["rollbacks"][1]["ok"], true);
    assert!(dir.path().join("rolled-back").exists());
    assert!(j["recovery"]["mttr_ms"].is_number(), "{j}");
    assert!(!j["series"].as_array().expect("series").is_empty());
}

/// Every search fails for the sessions in the blast radius: the 1 % gate breaches in the
/// first stage, the faults leave within a tick, the second stage never starts.
#[test]
fn a_breaching_experiment_is_aborted_by_its_gate_and_widens_no_further() {
    let dir = common::tmp();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, "ladder: [\"50%\", \"100%\"]\n").expect("write policy");
    // 16 busy sessions: the 50 % stage may reach none of them, the 100 % one reaches all.
    let e = Exp {
        sessions: 16,
        method: "[{stage: half, duration: 4s, sessions: 50%}, {stage: all, duration: 20s, sessions: 100%}]",
        faults: "[{kind: error, tools: [\"search_*\"], probability: 1.0}]",
        gates: "[\"error_rate < 1% over 2s min 5 calls\"]",
        rollbacks: "[{command: [touch, rolled-back]}]",
        ..Exp::fixture_green()
    };
    let started = std::time::Instant::now();
    let (code, j, out) =
        run_experiment(dir.path(), &e, &["--policy", &policy.display().to_string()]);
    assert_eq!(code, 1, "{out}\n{j}");
    assert_eq!(j["status"], "aborted", "{j}");
    valid_journal(&j);
    // Stopped long before the 20 s stage would have ended; no stage after the breach.
    assert!(started.elapsed() < Duration::from_secs(40));
    let stages = j["stages"].as_array().expect("stages");
    let (last, before) = stages.split_last().expect("a stage ran");
    assert!(before.iter().all(|s| s["completed"] == true), "{j}");
    assert_eq!(last["completed"], false);
    assert_eq!(b_stage(&j), last["stage"]);
    let b = &j["breach"];
    assert!(
        b["gate"].as_str().unwrap_or("").starts_with("error_rate"),
        "{b}"
    );
    assert!(b["value"].as_f64().unwrap_or(0.0) >= 0.01, "{b}");
    // The faults left within a tick or so of the breach (generous on a loaded machine).
    let lat = b["abort_latency_ms"].as_f64().expect("latency");
    assert!((0.0..1000.0).contains(&lat), "{b}");
    assert!(dir.path().join("rolled-back").exists());
    assert!(
        stages[0]["injections"]
            .as_object()
            .is_some_and(|m| !m.is_empty()),
        "{j}"
    );
}

/// SIGINT in the middle of a stage: exit 130, the faults removed first, the rollback ran.
#[test]
fn sigint_mid_stage_removes_the_faults_and_runs_the_rollbacks() {
    let dir = common::tmp();
    let e = Exp {
        method: "[{stage: canary, duration: 60s, sessions: 10%}]",
        rollbacks: "[{command: [touch, rolled-back]}]",
        ..Exp::fixture_green()
    };
    let status = dir.path().join("status.json");
    let mut child = spawn_run(dir.path(), &e, &["--status", &status.display().to_string()]);
    wait_for_stage(&status);
    signal(&child, nix::sys::signal::Signal::SIGINT);
    let code = wait_exit(&mut child, 60);
    assert_eq!(code, 130);
    let j = journal(dir.path());
    valid_journal(&j);
    assert_eq!(j["status"], "interrupted", "{j}");
    assert_eq!(j["rollbacks"][0]["action"], "remove faults");
    assert_eq!(j["rollbacks"][0]["ok"], true);
    assert!(
        dir.path().join("rolled-back").exists(),
        "the rollback did not run"
    );
}

/// A second signal cuts nothing short (issue 23 §2: it used to skip what was left of the
/// rollbacks): the faults leave, every rollback runs to its end or its own timeout, and the
/// signal is recorded in the rollback it arrived during.
#[test]
fn a_second_signal_is_recorded_and_every_rollback_still_runs_to_its_timeout() {
    let dir = common::tmp();
    let e = Exp {
        method: "[{stage: canary, duration: 60s, sessions: 10%}]",
        rollbacks: "[{command: [sh, -c, \"touch started; exec sleep 30\"], timeout: 3s}, {command: [touch, done]}]",
        ..Exp::fixture_green()
    };
    let status = dir.path().join("status.json");
    let mut child = spawn_run(dir.path(), &e, &["--status", &status.display().to_string()]);
    wait_for_stage(&status);
    signal(&child, nix::sys::signal::Signal::SIGINT);
    // The second signal arrives while the first rollback runs.
    wait_for_file(&dir.path().join("started"), 60);
    signal(&child, nix::sys::signal::Signal::SIGINT);
    assert_eq!(wait_exit(&mut child, 60), 130);
    let j = journal(dir.path());
    valid_journal(&j);
    assert_eq!(j["rollbacks"][0]["action"], "remove faults");
    assert_eq!(j["rollbacks"][0]["ok"], true);
    let detail = j["rollbacks"][1]["detail"].as_str().unwrap_or("");
    assert!(detail.contains("killed after its timeout"), "{j}");
    assert!(detail.contains("recorded, not obeyed"), "{j}");
    assert_eq!(j["rollbacks"][2]["ok"], true, "{j}");
    assert!(dir.path().join("done").exists());
}

/// The steady state does not hold before: `not_run`, exit 4, no stage, nothing injected.
#[test]
fn an_unmet_steady_state_runs_nothing() {
    let dir = common::tmp();
    let e = Exp {
        probes: "[{probe: mcp, call: {tool: no_such_tool}, samples: 3}]",
        ..Exp::fixture_green()
    };
    let (code, j, out) = run_experiment(dir.path(), &e, &[]);
    assert_eq!(code, 4, "{out}");
    assert_eq!(j["status"], "not_run");
    valid_journal(&j);
    assert_eq!(j["steady_state_before"]["met"], false);
    assert!(j["stages"].as_array().is_some_and(|s| s.is_empty()));
    assert!(j["rollbacks"].as_array().is_some_and(|s| s.is_empty()));
}

/// An unreachable target: `failed`, exit 4; `--json` prints the journal on stdout.
#[test]
fn an_unreachable_target_fails_and_json_prints_the_journal() {
    let dir = common::tmp();
    let port = common::http::free_port();
    let target = format!("{{url: \"http://127.0.0.1:{port}/mcp\"}}");
    let e = Exp {
        target: &target,
        ..Exp::fixture_green()
    };
    let (code, j, out) = run_experiment(dir.path(), &e, &["--json"]);
    assert_eq!(code, 4, "{out}");
    assert_eq!(j["status"], "failed");
    valid_journal(&j);
    let printed: serde_json::Value = serde_json::from_str(
        out.lines()
            .take_while(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
            .as_str(),
    )
    .unwrap_or_else(|e| panic!("stdout is not the journal ({e}): {out}"));
    assert_eq!(printed["status"], "failed");
}

fn b_stage(j: &serde_json::Value) -> serde_json::Value {
    j["breach"]["stage"].clone()
}

/// A `during: true` probe that misses its tolerance in a stage stops the promotion: the run
/// ends `deviated` (exit 1) with the faults removed, even though no gate breached.
#[test]
fn a_continuous_probe_that_misses_its_tolerance_stops_the_widening() {
    let dir = common::tmp();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, "ladder: [\"100%\"]\n").expect("write policy");
    let e = Exp {
        method: "[{stage: all, duration: 3s, sessions: 100%}, {stage: again, duration: 3s, sessions: 100%}]",
        faults: "[{kind: error, tools: [get_incident], probability: 1.0}]",
        gates: "[\"p99 < 10s over 2s\"]",
        probes: "[{probe: mcp, call: {tool: get_incident, arguments: {id: INC-1}}, samples: 3, during: true, tolerance: {success: \">= 99%\"}}]",
        ..Exp::fixture_green()
    };
    let (code, j, out) =
        run_experiment(dir.path(), &e, &["--policy", &policy.display().to_string()]);
    assert_eq!(code, 1, "{out}\n{j}");
    assert_eq!(j["status"], "deviated", "{j}");
    valid_journal(&j);
    let stages = j["stages"].as_array().expect("stages");
    assert_eq!(stages.len(), 1, "{j}");
    assert_eq!(stages[0]["probes"][0]["met"], false, "{j}");
    assert!(
        j["reason"].as_str().unwrap_or("").contains("get_incident"),
        "{j}"
    );
    assert_eq!(j["rollbacks"][0]["action"], "remove faults");
}
