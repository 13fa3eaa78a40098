//! `start_gameday` / `get_gameday` driven by the official Python SDK client (`mcp` on PyPI):
//! off without --allow-run; with it, the rules of `start_experiment` — a `path:` step and a
//! production label refused before anything reaches the target, a person's approval (the
//! operator's one-time code) — then the GameDay run to its end, watched with `get_gameday`,
//! its runs in the store tied to it, and no fault left on the target (a relay with an admin
//! API, read from its side).

mod common;
#[path = "mcp_support/mod.rs"]
mod support;

use serde_json::{json, Value};
use support::*;

/// A light inline experiment against the remote relay: one 10 % stage of a second.
fn light(r: &Remote, title: &str, labels: Value) -> Value {
    json!({
        "title": title,
        "labels": labels,
        "target": {"url": r.url, "admin": r.admin},
        "load": {"sessions": 4, "workload": {
            "arrival": {"mode": "closed", "concurrency": 4}, "think_ms": 50,
            "steps": [{"calls": [{"tool": "search_incidents", "arguments": {"query": "db"}}]}],
            "servers": [{"name": "fixture", "tools": {"search_incidents": {"latency": {"added_ms": 5}}}}]}},
        "baseline": "500ms",
        "method": [{"stage": "s0", "duration": "1s", "sessions": "10%"}],
        "faults": [{"id": "search-slow", "kind": "latency", "tools": ["search_incidents"], "added_ms": 20}],
        "gates": ["error_rate < 50% over 2s"],
    })
}

fn gameday(steps: Vec<Value>) -> String {
    json!({"title": "mcp gameday", "experiments": steps}).to_string()
}

#[test]
fn start_gameday_is_off_without_allow_run_and_runs_to_its_end_with_approval() {
    let env = Env::new();
    let r = remote();
    let ok = gameday(vec![
        json!({"id": "first", "experiment": light(&r, "gd first", json!({"env": "staging"}))}),
        json!({"id": "second", "requires": ["first"], "experiment": light(&r, "gd second", json!({"env": "staging"}))}),
    ]);
    // Off: not listed, and refused when called anyway.
    let doc = agent_stdio(
        &json!([{"op": "list_tools"}, call("start_gameday", json!({"gameday": ok}))]),
        &env.server(&[]),
        &[],
    );
    let listed: Vec<&str> = doc["ops"][0]["result"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(!listed.contains(&"start_gameday") && !listed.contains(&"get_gameday"));
    assert_eq!(doc["ops"][1]["ok"], false, "{:#}", doc["ops"][1]);
    assert!(doc["ops"][1]["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("--allow-run"));

    let by_path = gameday(vec![json!({"id": "a", "path": "exp.yaml"})]);
    let prod = gameday(vec![
        json!({"id": "a", "experiment": light(&r, "gd prod", json!({"env": "production"}))}),
    ]);
    // Refusals, and the ask for approval: nothing reaches the target.
    let doc = agent_stdio(
        &json!([
            {"op": "list_tools"},
            call("start_gameday", json!({"gameday": by_path})),
            call("start_gameday", json!({"gameday": prod})),
            call("start_gameday", json!({"gameday": ok})),
        ]),
        &env.server(&["--allow-run"]),
        &[],
    );
    let tools = doc["ops"][0]["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let schema_of = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["outputSchema"].clone())
            .unwrap_or_else(|| panic!("{name} listed with --allow-run"))
    };
    let refused = sc(&doc, 1);
    assert_eq!(
        (&refused["decision"], &refused["rule"]),
        (&json!("refused"), &json!("paths")),
        "{refused:#}"
    );
    let refused = sc(&doc, 2);
    assert_eq!(refused["rule"], "production_labels", "{refused:#}");
    let asked = sc(&doc, 3);
    assert_eq!(asked["decision"], "approval_required", "{asked:#}");
    assert_valid(&schema_of("start_gameday"), &asked, "start_gameday");
    assert_eq!(
        r.tool_calls(),
        0,
        "nothing reached the target before approval"
    );
    // Approved by the operator's code, then watched until it ended.
    let mut script = vec![
        call("start_gameday", json!({"gameday": ok})),
        json!({"op": "read_code", "file": path_of(&env.approvals())}),
        call(
            "start_gameday",
            json!({"gameday": ok, "approval_code": "$code"}),
        ),
    ];
    for _ in 0..40 {
        script.push(json!({"op": "sleep", "seconds": 1.5}));
        script.push(call("get_gameday", json!({"run_id": "$run_id"})));
    }
    let doc = agent_stdio(
        &Value::Array(script),
        &env.server(&["--allow-run"]),
        &["--timeout", "150"],
    );
    let started = sc(&doc, 2);
    assert_eq!(started["decision"], "started", "{started:#}");
    assert_valid(&schema_of("start_gameday"), &started, "start_gameday");
    let run_id = started["run_id"].as_str().expect("run id").to_string();
    // Watched until it ended.
    let ended = (3..doc["ops"].as_array().map_or(0, Vec::len))
        .filter(|i| doc["ops"][i]["name"] == "get_gameday")
        .map(|i| sc(&doc, i))
        .inspect(|v| assert_valid(&schema_of("get_gameday"), v, "get_gameday"))
        .find(|v| v["state"] == "ended")
        .unwrap_or_else(|| panic!("the GameDay never ended: {:#}", doc["ops"]));
    let g = &ended["gameday"];
    assert_eq!(g["status"], "completed", "{ended:#}");
    assert_eq!(g["gameday_id"], run_id.as_str());
    let steps = g["experiments"].as_array().expect("experiments");
    assert_eq!(steps.len(), 2);
    assert!(steps.iter().all(|s| s["status"] == "completed"), "{g:#}");
    assert!(g["score"].as_f64().is_some_and(|s| s >= 50.0), "{g:#}");
    // Its runs are in the store, tied to it; the target holds no fault.
    let out = std::process::Command::new(common::brownout())
        .args(["journal", "query", "--json", "--store"])
        .arg(env.store())
        .arg(format!(
            "SELECT count(*) FROM runs WHERE gameday_id = '{run_id}' AND status = 'completed'"
        ))
        .output()
        .expect("journal query");
    let q: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(q["rows"][0][0], 2, "{q}");
    assert!(r.wait_clean(), "faults left on the target");
    assert!(r.tool_calls() > 0, "the GameDay reached the target");
    let audit = env.audit_entries();
    assert!(
        audit
            .iter()
            .any(|e| e["tool"] == "start_gameday" && e["decision"] == "started"),
        "{audit:#?}"
    );
}

/// The MCP session ends while a GameDay runs: the GameDay stops where it is (interrupted),
/// its running experiment's faults leave the target, and the store says where it stopped.
#[test]
fn a_gameday_stops_when_the_mcp_session_ends_and_leaves_no_fault() {
    let env = Env::new();
    let r = remote();
    let mut long = light(&r, "gd long", json!({"env": "staging"}));
    long["method"][0]["duration"] = json!("60s");
    let gd = gameday(vec![
        json!({"id": "long", "experiment": long}),
        json!({"id": "next", "experiment": light(&r, "gd next", json!({"env": "staging"}))}),
    ]);
    let mut script = vec![
        call("start_gameday", json!({"gameday": gd})),
        json!({"op": "read_code", "file": path_of(&env.approvals())}),
        call(
            "start_gameday",
            json!({"gameday": gd, "approval_code": "$code"}),
        ),
    ];
    // Until the faults are on the target (the stage runs), then the session ends.
    for _ in 0..20 {
        script.push(json!({"op": "sleep", "seconds": 1}));
        script.push(call("get_gameday", json!({"run_id": "$run_id"})));
    }
    let doc = agent_stdio(
        &Value::Array(script),
        &env.server(&["--allow-run"]),
        &["--timeout", "120"],
    );
    let started = sc(&doc, 2);
    assert_eq!(started["decision"], "started", "{started:#}");
    let id = started["run_id"].as_str().expect("run id").to_string();
    assert!(
        r.wait_clean(),
        "faults left on the target after the session ended"
    );
    // The GameDay's record reaches the store once its run has stopped.
    let query = |sql: String| -> Value {
        let out = std::process::Command::new(common::brownout())
            .args(["journal", "query", "--json", "--store"])
            .arg(env.store())
            .arg(sql)
            .output()
            .expect("journal query");
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let row = loop {
        let q = query(format!(
            "SELECT status, json_extract(json, '$.stopped_at') FROM gamedays WHERE gameday_id = '{id}'"
        ));
        if q["rows"][0].is_array() {
            break q["rows"][0].clone();
        }
        assert!(
            std::time::Instant::now() < until,
            "the GameDay never reached the store: {q}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert_eq!(row, json!(["interrupted", "long"]), "{row}");
    let runs = query(format!(
        "SELECT experiment, status FROM runs WHERE gameday_id = '{id}'"
    ));
    assert_eq!(runs["rows"], json!([["gd long", "interrupted"]]), "{runs}");
}
