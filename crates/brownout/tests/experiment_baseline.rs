//! Tolerances from history (`from_baseline`): the bound comes from the store's completed
//! runs of the same experiment, the journal names those runs, and a bad use is located.

mod common;
#[path = "experiment_support/mod.rs"]
mod support;

use common::brownout;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use support::*;

const PROBE_FROM_HISTORY: &str = "[{probe: mcp, call: {tool: search_incidents, arguments: {query: db}}, tolerance: {success: \">= 99%\", from_baseline: p95, sigma: 3, runs: 5, min_runs: 3}, samples: 5}]";

/// A past run's journal, as far as the store and the history read it.
fn past(title: &str, status: &str, start: u64, p95: f64) -> Value {
    json!({
        "journal_version": 1,
        "status": status,
        "reason": "",
        "file": "exp.yaml",
        "seed": 1,
        "dry_run": false,
        "started_unix_ms": start,
        "ended_unix_ms": start + 1000,
        "experiment": {"title": title},
        "steady_state_before": {"met": true, "probes": [
            {"tool": "search_incidents", "success_pct": 100.0, "latency": {"p95_ms": p95}}
        ]},
    })
}

fn import(store: &Path, dir: &Path, journals: &[Value]) -> Vec<String> {
    let mut files = Vec::new();
    for (i, j) in journals.iter().enumerate() {
        let f = dir.join(format!("past-{i}.json"));
        std::fs::write(&f, j.to_string()).expect("write");
        files.push(f.display().to_string());
    }
    let out = Command::new(brownout())
        .args(["journal", "import", "--store"])
        .arg(store)
        .args(&files)
        .output()
        .expect("import");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(brownout())
        .args(["journal", "list", "--json", "--store"])
        .arg(store)
        .output()
        .expect("list");
    let listed: Value = serde_json::from_slice(&out.stdout).expect("list json");
    listed
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|r| r["run_id"].as_str().map(str::to_string))
        .collect()
}

fn dry_run(dir: &Path, store: &Path, probes: &str) -> (i32, Value, String) {
    let file = write(
        dir,
        &experiment_yaml(&Exp {
            probes,
            ..Exp::fixture_green()
        }),
    );
    let out = Command::new(brownout())
        .args(["run", &file, "--dry-run", "--json", "--store"])
        .arg(store)
        .current_dir(dir)
        .output()
        .expect("run");
    let j = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (
        out.status.code().unwrap_or(-1),
        j,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_bound_is_mean_plus_sigma_of_the_latest_completed_runs_and_names_them() {
    let dir = common::tmp();
    let store = dir.path().join("store.sqlite");
    let t0 = 1_790_000_000_000u64;
    let title = "a test experiment";
    import(
        &store,
        dir.path(),
        &[
            // Oldest first; only the latest 5 completed runs of this title count.
            past(title, "completed", t0, 1000.0),
            past(title, "completed", t0 + 10_000, 100.0),
            past(title, "completed", t0 + 20_000, 110.0),
            past(title, "aborted", t0 + 25_000, 5000.0),
            past("another experiment", "completed", t0 + 26_000, 9000.0),
            past(title, "completed", t0 + 30_000, 120.0),
            past(title, "completed", t0 + 40_000, 110.0),
            past(title, "completed", t0 + 50_000, 110.0),
        ],
    );
    let (code, j, err) = dry_run(dir.path(), &store, PROBE_FROM_HISTORY);
    assert_eq!(code, 0, "{err}");
    let b = &j["baselines"][0];
    assert_eq!(b["stat"], "p95", "{j:#}");
    // 110, 110, 120, 110, 100 (newest first): mean 110, sample sd √50 ≈ 7.071.
    let values: Vec<f64> = serde_json::from_value(b["values"].clone()).expect("values");
    assert_eq!(values, vec![110.0, 110.0, 120.0, 110.0, 100.0]);
    assert_eq!(b["runs"].as_array().map(Vec::len), Some(5));
    assert!(
        b["runs"][0].as_str().unwrap_or("").starts_with("2026"),
        "{b}"
    );
    assert_eq!(b["bound"], "<= 131.2ms", "{b}");
    assert!(b["note"].is_null(), "{b}");
    support::valid_journal(&j);
    // The report says where the bound came from.
    let jf = dir.path().join("dry.json");
    std::fs::write(&jf, j.to_string()).expect("write");
    let out = Command::new(brownout())
        .args(["journal", "report", "--format", "md"])
        .arg(&jf)
        .output()
        .expect("report");
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        md.contains("p95 **<= 131.2ms** from history (mean + 3σ, 5 run(s)"),
        "{md}"
    );
}

#[test]
fn too_short_a_history_falls_back_to_the_written_bound_and_says_so() {
    let dir = common::tmp();
    let store = dir.path().join("store.sqlite");
    import(
        &store,
        dir.path(),
        &[past(
            "a test experiment",
            "completed",
            1_790_000_000_000,
            50.0,
        )],
    );
    let with_own = PROBE_FROM_HISTORY.replace("sigma: 3,", "sigma: 3, p95: \"< 2s\",");
    let (code, j, err) = dry_run(dir.path(), &store, &with_own);
    assert_eq!(code, 0, "{err}");
    let b = &j["baselines"][0];
    assert_eq!(b["bound"], "< 2s", "{b}");
    assert!(
        b["note"]
            .as_str()
            .unwrap_or("")
            .contains("1 completed run(s)"),
        "{b}"
    );
    // Without a store there is no history at all.
    let file = dir.path().join("exp.yaml");
    let out = Command::new(brownout())
        .args(["run", "--dry-run", "--no-store"])
        .arg(&file)
        .current_dir(dir.path())
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("no store (--no-store)"), "{text}");
}

#[test]
fn history_keys_without_from_baseline_or_both_rules_are_located() {
    let dir = common::tmp();
    let bad = PROBE_FROM_HISTORY.replace("from_baseline: p95, ", "");
    let file = write(
        dir.path(),
        &experiment_yaml(&Exp {
            probes: &bad,
            ..Exp::fixture_green()
        }),
    );
    let out = Command::new(brownout())
        .args(["experiment", "check", &file])
        .output()
        .expect("check");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("exp.yaml:4:"), "{err}");
    assert!(
        err.contains("sigma") && err.contains("from_baseline"),
        "{err}"
    );
    let both = PROBE_FROM_HISTORY.replace("sigma: 3,", "sigma: 3, percentile: 99,");
    let file = write(
        dir.path(),
        &experiment_yaml(&Exp {
            probes: &both,
            ..Exp::fixture_green()
        }),
    );
    let out = Command::new(brownout())
        .args(["experiment", "check", &file])
        .output()
        .expect("check");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("not both"), "{err}");
}

/// Two live runs against the fixture: the second takes its bound from the first, and its
/// probe is judged by that bound.
#[test]
fn a_live_run_learns_its_bound_from_the_run_before() {
    let dir = common::tmp();
    let store = dir.path().join("store.sqlite");
    let store_arg = store.display().to_string();
    // One run of history has no spread: σ is its floor (1 % of the mean, at least 0.1 ms);
    // 100 of them leave the second run room for the noise of five samples.
    let probes = PROBE_FROM_HISTORY
        .replace("min_runs: 3", "min_runs: 1")
        .replace("sigma: 3", "sigma: 100");
    let e = Exp {
        probes: &probes,
        ..Exp::fixture_green()
    };
    let (code, first, out) = run_experiment(dir.path(), &e, &["--store", &store_arg]);
    assert_eq!(code, 0, "{out}");
    assert!(first["baselines"][0]["bound"].is_null(), "{first:#}");
    let first_p95 = first["steady_state_before"]["probes"][0]["latency"]["p95_ms"]
        .as_f64()
        .expect("p95");
    let (_, second, out) = run_experiment(dir.path(), &e, &["--store", &store_arg]);
    let b = &second["baselines"][0];
    assert_eq!(b["runs"][0], first["run_id"], "{out}\n{b}");
    assert_eq!(b["values"][0].as_f64(), Some(first_p95));
    let bound = b["bound"].as_str().expect("a bound");
    assert_eq!(
        second["steady_state_before"]["probes"][0]["tolerance"]["p95"].as_str(),
        Some(bound),
        "the probe is judged by the bound from history"
    );
    assert!(out.contains("from history"), "{out}");
    // The run's robustness: the fixture holds the 5 % gate with room (ρ in (0, 1]), per
    // stage too, and the summary says so.
    let rho = second["robustness"].as_f64().expect("robustness");
    assert!(rho > 0.0 && rho <= 1.0, "{rho}");
    let stage_rho = second["stages"][1]["robustness"].as_f64().expect("stage ρ");
    assert!(stage_rho >= rho, "{stage_rho} {rho}");
    assert!(out.contains("robustness ρ +"), "{out}");
    // Estimate before, actual after: the simulator, calibrated on the baseline, predicted
    // each stage; its error is recorded, and the verdict (the gates held) was right.
    assert!(
        second["calibration"]["calls"].as_u64().unwrap_or(0) >= 20,
        "{second:#}"
    );
    for st in second["stages"].as_array().expect("stages") {
        let p = &st["prediction"];
        assert_eq!(p["verdict"], "holds", "{st:#}");
        assert_eq!(p["error"]["verdict_right"], true, "{st:#}");
        let err = p["error"]["error_rate"].as_f64().expect("error");
        assert!(err.abs() < 0.05, "{st:#}");
        let predicted_p95 = p["slis"]["p95_ms"].as_f64().expect("p95");
        assert!(predicted_p95 > 0.0, "{st:#}");
    }
    assert!(out.contains("predicted"), "{out}");
}

/// `ladder_from_history`: a stage may go one rung above the widest this experiment has
/// passed in the store; with no history, only the bottom rung. Refusals name the rule.
#[test]
fn the_ladder_is_enforced_against_the_stores_history() {
    let dir = common::tmp();
    let store = dir.path().join("store.sqlite");
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, "ladder_from_history: true\n").expect("policy");
    let file = write(dir.path(), &experiment_yaml(&Exp::fixture_green()));
    let dry = |extra: &[&str]| {
        let out = Command::new(brownout())
            .args(["run", &file, "--dry-run", "--json", "--policy"])
            .arg(&policy)
            .arg("--store")
            .arg(&store)
            .args(extra)
            .output()
            .expect("run");
        let j: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (out.status.code(), j)
    };
    // No history: 10 % → 25 % reaches a rung above the bottom one.
    let (code, j) = dry(&[]);
    assert_eq!(code, Some(3), "{j:#}");
    assert_eq!(j["refusal"]["rule"], "ladder_from_history", "{j:#}");
    // Issue 23 §1: rungs passed against another target with the same title unlock
    // nothing here (the ladder was keyed by the title alone).
    let mut elsewhere = past("a test experiment", "aborted", 1_789_000_000_000, 10.0);
    elsewhere["experiment"]["target"] = json!({"url": "http://127.0.0.1:9/mcp"});
    elsewhere["stages"] = json!([
        {"stage": "canary", "share": 0.1, "completed": true},
        {"stage": "wider", "share": 0.25, "completed": true},
    ]);
    import(&store, dir.path(), &[elsewhere]);
    let (code, j) = dry(&[]);
    assert_eq!(code, Some(3), "{j:#}");
    assert_eq!(j["refusal"]["rule"], "ladder_from_history", "{j:#}");
    // A run of this target whose 10 % stage passed: one rung more (25 %) is allowed.
    let mut past = past("a test experiment", "aborted", 1_790_000_000_000, 10.0);
    past["experiment"]["target"] = json!({"command": [brownout(), "fixture"]});
    past["stages"] = json!([
        {"stage": "canary", "share": 0.1, "completed": true},
        {"stage": "wider", "share": 0.25, "completed": false},
    ]);
    let ids = import(&store, dir.path(), &[past]);
    let (code, j) = dry(&[]);
    assert_eq!(code, Some(0), "{j:#}");
    // A third stage at 50 % skips the 25 % rung it has not passed.
    let wider = experiment_yaml(&Exp {
        method: "[{stage: canary, duration: 1s, sessions: 10%}, {stage: wider, duration: 1s, sessions: 25%}, {stage: half, duration: 1s, sessions: 50%}]",
        ..Exp::fixture_green()
    });
    std::fs::write(&file, wider).expect("write");
    let (code, j) = dry(&[]);
    assert_eq!(code, Some(3), "{j:#}");
    let detail = j["refusal"]["detail"].as_str().unwrap_or("");
    assert!(
        detail.contains(&ids[0]) && detail.contains("50%"),
        "{detail}"
    );
    // Without a store the guardrail cannot check, so it refuses.
    let out = Command::new(brownout())
        .args(["run", &file, "--dry-run", "--no-store", "--policy"])
        .arg(&policy)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(3));
}
