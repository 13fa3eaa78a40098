//! The experiments in examples/experiments/ check, and run as they are (with `brownout` on
//! PATH, from the repository root).

mod common;
#[path = "experiment_support/mod.rs"]
mod support;

use common::{brownout, repo};
use std::process::Command;

fn path_with_brownout() -> String {
    let bin = std::path::Path::new(brownout()).parent().expect("bin dir");
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Every file of examples/experiments: experiments only (workloads and policies have
/// folders of their own).
fn experiments() -> Vec<std::path::PathBuf> {
    let mut out: Vec<_> = std::fs::read_dir(repo().join("examples/experiments"))
        .expect("examples/experiments")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    out.sort();
    out
}

/// `experiment check examples/experiments/*.yaml`, as the shell expands it, finds no error:
/// the folder holds experiments only.
#[test]
fn the_experiments_folder_checks_with_no_error() {
    let files = experiments();
    let out = Command::new(brownout())
        .args(["experiment", "check"])
        .args(&files)
        .current_dir(repo())
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let ok = String::from_utf8_lossy(&out.stdout)
        .matches(": ok,")
        .count();
    assert_eq!(ok, files.len(), "one `ok` per file");
}

/// `experiment check --policy` applies the guardrails `run --policy` applies: an example
/// that kills a server passes its check alone, fails it under a policy that forbids
/// `process` faults, and passes under the policy written for it.
#[test]
fn experiment_check_applies_a_policy_as_run_does() {
    let file = repo().join("examples/experiments/seed-process-kill.yaml");
    let check = |policy: Option<&str>| {
        let mut c = Command::new(brownout());
        c.args(["experiment", "check"]).arg(&file);
        if let Some(p) = policy {
            c.arg("--policy").arg(repo().join(p));
        }
        let out = c.current_dir(repo()).output().expect("run");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert_eq!(check(None).0, Some(0), "{}", check(None).1);
    let (code, err) = check(Some("examples/policies/policy.yaml"));
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("refused by the policy"), "{err}");
    let (code, err) = check(Some("examples/policies/seed-policy.yaml"));
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = check(Some("examples/no-such-policy.yaml"));
    assert_eq!(code, Some(2), "{err}");
}

#[test]
fn every_example_experiment_checks() {
    let files = experiments();
    assert!(files.len() >= 2, "{files:?}");
    let out = Command::new(brownout())
        .args(["experiment", "check"])
        .args(&files)
        .env("PATH", path_with_brownout())
        .current_dir(repo())
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let policy = repo().join("examples/policies/policy.yaml");
    let out = Command::new(brownout())
        .args(["run", "--dry-run", "--policy"])
        .arg(&policy)
        .arg(repo().join("examples/experiments/green.yaml"))
        .env("PATH", path_with_brownout())
        .current_dir(repo())
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn run_example(name: &str) -> (i32, serde_json::Value) {
    let dir = common::tmp();
    let journal = dir.path().join("journal.json");
    let out = Command::new(brownout())
        .arg("run")
        .arg(format!("examples/experiments/{name}"))
        .arg("--journal")
        .arg(&journal)
        // Its own store: its history, and its run lock (one run per target), are its own.
        .arg("--store")
        .arg(dir.path().join("store.sqlite"))
        .env("PATH", path_with_brownout())
        .current_dir(repo())
        .output()
        .expect("run");
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&journal).expect("journal")).expect("json");
    support::valid_journal(&j);
    (out.status.code().unwrap_or(-1), j)
}

#[test]
fn the_green_example_completes_and_the_breach_example_is_aborted() {
    let (code, j) = run_example("green.yaml");
    assert_eq!(code, 0, "{j}");
    assert_eq!(j["status"], "completed");
    let (code, j) = run_example("breach.yaml");
    assert_eq!(code, 1, "{j}");
    assert_eq!(j["status"], "aborted");
    assert_stages_widened_only_while_gates_held(&j);
}

#[test]
fn the_silent_servers_example_follows_the_wrong_value_from_one_server_to_the_other() {
    let (code, j) = run_example("silent-servers.yaml");
    assert_eq!(code, 1, "{j}");
    let gate = j["breach"]["gate"].as_str().unwrap_or_default();
    assert!(gate.starts_with("silent_rate"), "{j}");
    let by = |name: &str| {
        j["servers"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| s["name"] == name)
            .cloned()
            .unwrap_or_default()
    };
    let (incidents, ops) = (by("incidents"), by("ops"));
    assert!(
        incidents["silent"]["propagated"].as_u64().unwrap_or(0) > 0,
        "{j}"
    );
    assert_eq!(ops["silent"]["altered"].as_u64(), Some(0), "{j}");
    assert!(ops["calls"].as_u64().unwrap_or(0) > 0, "{j}");
    assert_eq!(
        j["tool_calls"]["ops/get_incident"],
        serde_json::Value::Null,
        "{j}"
    );
}

#[test]
fn the_silent_chain_example_breaches_on_silent_rate_not_on_errors() {
    let (code, j) = run_example("silent-chain.yaml");
    assert_eq!(code, 1, "{j}");
    assert_eq!(j["status"], "aborted", "{j}");
    let gate = j["breach"]["gate"].as_str().unwrap_or_default();
    assert!(
        gate.starts_with("silent_rate"),
        "the silent gate, not errors, stopped it: {j}"
    );
    assert_eq!(
        j["stages"][0]["slis"]["error_rate"], 0.0,
        "no call erred: {j}"
    );
    let s = &j["silent"];
    assert!(s["altered"].as_u64().unwrap_or(0) > 0, "{s}");
    assert!(
        s["propagated"].as_u64().unwrap_or(0) > 0,
        "the trusting agent acted on them: {s}"
    );
    assert_eq!(
        j["stages"].as_array().map(Vec::len),
        Some(1),
        "no wider stage: {j}"
    );
    // The report leads with it.
    let md = brownout::report::markdown::render(&j);
    assert!(md.contains("## Failed safely or silently"), "{md}");
}

/// Every stage before the last ran whole; the last one was stopped by the breach.
pub fn assert_stages_widened_only_while_gates_held(j: &serde_json::Value) {
    let stages = j["stages"].as_array().expect("stages");
    let (last, before) = stages.split_last().expect("a stage ran");
    assert!(before.iter().all(|s| s["completed"] == true), "{j}");
    assert_eq!(last["completed"], false, "{j}");
    assert_eq!(j["breach"]["stage"], last["stage"], "{j}");
}
