//! `brownout design`: goals mapped to scenarios by the vocabulary (the words that matched
//! reported), each scenario an escalating series whose faults match it, every written
//! experiment passing `brownout experiment check`, and a GameDay file that names them in
//! order — against the built-in fixture, described live.

mod common;

use common::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// `brownout design ARGS -- brownout fixture`: (exit code, stdout, stderr).
fn design(args: &[&str], store: &Path) -> (i32, String, String) {
    let out = Command::new(brownout())
        .arg("design")
        .args(args)
        .arg("--store")
        .arg(store)
        .args(["--", "brownout", "fixture"])
        .output()
        .expect("brownout design");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn design_json(goal: &str, store: &Path) -> Value {
    let (code, out, err) = design(&["--goal", goal, "--json"], store);
    assert_eq!(code, 0, "{goal}: {err}{out}");
    serde_json::from_str(&out).expect("JSON")
}

fn scenarios(v: &Value) -> BTreeSet<String> {
    v["scenarios"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["skipped"].is_null())
        .filter_map(|s| s["scenario"].as_str().map(String::from))
        .collect()
}

/// Every experiment document of a design (parsed from its text).
fn docs(v: &Value) -> Vec<Value> {
    v["experiments"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| serde_json::from_str(e["experiment"].as_str().unwrap_or("{}")).expect("JSON"))
        .collect()
}

fn fault_kinds(docs: &[Value]) -> BTreeSet<String> {
    docs.iter()
        .flat_map(|d| d["faults"].as_array().cloned().unwrap_or_default())
        .filter_map(|f| f["kind"].as_str().map(String::from))
        .collect()
}

fn gates(docs: &[Value]) -> String {
    docs.iter()
        .map(|d| d["gates"].to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every fault acts on tools the load calls (a fault on a tool nobody calls tests
/// nothing), and the experiment carries the seed that puts each rung on its sessions.
fn faults_on_loaded_tools(d: &Value) {
    let called: BTreeSet<String> = d["load"]["workload"]["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["calls"].as_array().cloned().unwrap_or_default())
        .filter_map(|c| c["tool"].as_str().map(String::from))
        .collect();
    for f in d["faults"].as_array().into_iter().flatten() {
        for t in f["tools"].as_array().into_iter().flatten() {
            let t = t.as_str().unwrap_or_default();
            assert!(called.contains(t), "{t} is not loaded: {d:#}");
        }
    }
    assert!(d["seed"].as_u64().is_some_and(|s| s > 0), "{d:#}");
}

#[test]
fn four_goals_give_distinct_scenarios_whose_faults_match() {
    let dir = tmp();
    let store = dir.path().join("store.sqlite");

    let pool = design_json("pool exhaustion with retry storm", &store);
    assert_eq!(
        scenarios(&pool),
        BTreeSet::from(["pool_exhaustion".into(), "retry_storm".into()])
    );
    let words: Vec<String> = pool["matched"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["words"].as_array().cloned().unwrap_or_default())
        .filter_map(|w| w.as_str().map(String::from))
        .collect();
    assert_eq!(words, ["pool", "exhaustion", "retry", "storm"], "{pool:#}");
    let d = docs(&pool);
    assert_eq!(d.len(), 6, "two series of three steps");
    assert!(
        d.iter().any(|x| x["faults"]
            .to_string()
            .contains("connection pool exhausted")),
        "a pool squeeze"
    );
    assert!(
        d.iter()
            .all(|x| x["load"]["workload"]["client"]["retries"].is_object()),
        "a client that retries"
    );
    assert!(d
        .iter()
        .any(|x| x["load"]["workload"]["client"]["retries"]["unbounded"] == true));
    assert!(gates(&d).contains("amplification"), "the storm's gate");
    // Rising strength and a staged blast radius within a series.
    let squeeze: Vec<f64> = d
        .iter()
        .filter(|x| x["labels"]["scenario"] == "pool_exhaustion")
        .map(|x| x["faults"][0]["probability"].as_f64().unwrap_or(0.0))
        .collect();
    assert!(squeeze.windows(2).all(|w| w[0] < w[1]), "{squeeze:?}");
    let rungs: Vec<usize> = d
        .iter()
        .filter(|x| x["labels"]["scenario"] == "pool_exhaustion")
        .map(|x| x["method"].as_array().map_or(0, Vec::len))
        .collect();
    assert_eq!(rungs, [1, 2, 3]);

    let kill = design_json("the server gets killed", &store);
    assert_eq!(scenarios(&kill), BTreeSet::from(["process_kill".into()]));
    assert_eq!(
        fault_kinds(&docs(&kill)),
        BTreeSet::from(["process".into()])
    );

    let rate = design_json("rate limiting", &store);
    assert_eq!(scenarios(&rate), BTreeSet::from(["rate_limit".into()]));
    assert_eq!(
        fault_kinds(&docs(&rate)),
        BTreeSet::from(["rate_limit".into()])
    );

    let wrong = design_json("tools return subtly wrong data", &store);
    assert_eq!(
        scenarios(&wrong),
        BTreeSet::from(["silent_corruption".into()])
    );
    let w = docs(&wrong);
    assert_eq!(fault_kinds(&w), BTreeSet::from(["corrupt".into()]));
    assert!(gates(&w).contains("correctness") && gates(&w).contains("silent_rate"));

    // Every proposal valid; no load calls a tool that may write (the fixture's
    // restart_service), and that tool is reported as not designed.
    for v in [&pool, &kill, &rate, &wrong] {
        for e in v["experiments"].as_array().into_iter().flatten() {
            assert_eq!(e["valid"], true, "{e:#}");
            assert!(e["estimate"].is_object(), "{e:#}");
        }
        for d in docs(v) {
            assert!(!d["load"].to_string().contains("restart_service"), "{d:#}");
            faults_on_loaded_tools(&d);
        }
        assert!(v["not_designed"].to_string().contains("restart_service"));
    }
}

#[test]
fn out_dir_holds_checked_experiments_and_a_gameday_that_strings_them_together() {
    let dir = tmp();
    let out = dir.path().join("gd");
    let store = dir.path().join("store.sqlite");
    let (code, stdout, err) = design(
        &[
            "--goal",
            "one pod slowed, then the pool is exhausted",
            "-o",
            out.to_str().unwrap_or_default(),
        ],
        &store,
    );
    assert_eq!(code, 0, "{err}{stdout}");
    assert!(
        stdout.contains("goal matched slow_dependency by: slowed"),
        "{stdout}"
    );
    let text = std::fs::read_to_string(out.join("gameday.yaml")).expect("gameday.yaml");
    let g = brownout_core::plan::source::parse(&text, brownout_core::plan::source::Format::Yaml)
        .expect("the GameDay is YAML")
        .to_json();
    assert!(g["title"].as_str().is_some_and(|t| !t.is_empty()), "{g:#}");
    let list = g["experiments"].as_array().cloned().unwrap_or_default();
    assert_eq!(list.len(), 6, "{g:#}");
    let mut seen: Vec<String> = Vec::new();
    let mut files = Vec::new();
    for e in &list {
        let id = e["id"].as_str().expect("id").to_string();
        assert!(
            id.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_'),
            "{id}"
        );
        assert!(!seen.contains(&id), "unique: {id}");
        for r in e["requires"].as_array().into_iter().flatten() {
            assert!(
                seen.iter().any(|s| r == s.as_str()),
                "{id} requires an earlier id: {r}"
            );
        }
        let path = out.join(e["path"].as_str().expect("path"));
        assert!(path.exists(), "{}", path.display());
        let text = std::fs::read_to_string(&path).expect("read");
        let doc =
            brownout_core::plan::source::parse(&text, brownout_core::plan::source::Format::Yaml)
                .expect("YAML")
                .to_json();
        faults_on_loaded_tools(&doc);
        files.push(path);
        seen.push(id);
    }
    assert_eq!(seen[0], "slow-dependency-1");
    assert!(seen.contains(&"pool-exhaustion-3".to_string()));
    // Every written experiment passes `brownout experiment check`.
    let check = Command::new(brownout())
        .args(["experiment", "check"])
        .args(&files)
        .output()
        .expect("check");
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    // The first step passes the default policy now; the dry run says so.
    let dry = Command::new(brownout())
        .args(["run", "--dry-run", "--no-store"])
        .arg(&files[0])
        .output()
        .expect("dry run");
    assert_eq!(
        dry.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&dry.stderr)
    );
}

#[test]
fn scenarios_by_name_and_bad_input() {
    let dir = tmp();
    let store = dir.path().join("store.sqlite");
    let (code, out, err) = design(
        &[
            "--scenario",
            "dependency-outage",
            "--scenario",
            "schema_drift",
            "--json",
        ],
        &store,
    );
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(
        scenarios(&v),
        BTreeSet::from(["dependency_outage".into(), "schema_drift".into()])
    );
    let d = docs(&v);
    assert_eq!(
        fault_kinds(&d),
        BTreeSet::from(["error".into(), "schema_drift".into()])
    );
    let (code, _, err) = design(&["--scenario", "meteor_strike"], &store);
    assert_eq!(code, 2);
    assert!(
        err.contains("meteor_strike") && err.contains("pool_exhaustion"),
        "{err}"
    );
    // A goal no word of which is in the vocabulary: the default escalating series, said so.
    let v = design_json("what happens?", &store);
    assert_eq!(
        scenarios(&v),
        BTreeSet::from([
            "slow_dependency".into(),
            "rate_limit".into(),
            "pool_exhaustion".into(),
            "process_kill".into()
        ])
    );
    assert!(
        v["notes"].to_string().contains("default escalating series"),
        "{v:#}"
    );
}
