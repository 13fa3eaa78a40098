//! `brownout mcp` stays bounded under a hostile client or target (issue 18, part 4): a
//! session flood is refused with 503 and Retry-After past the caps while others are
//! served; slow, half-sent request heads are cut after the header timeout and cannot lock
//! a legitimate client out; `describe_target` on a target whose `tools/list` never ends
//! stops at the tool (or byte) cap; `simulate` past its bounds answers, naming the bound;
//! a cancelled `simulate` stops computing; `validate_plan` on a large TOML is fast, and one
//! over the size cap is refused. The legitimate client is the official Python SDK; the
//! hostile ones are raw (peers/python/hostile_client.py, hostile_target.py). Timings are never asserted: the
//! agents' overall timeouts only keep a hang (the old code) from holding the suite.

mod common;
#[path = "mcp_support/mod.rs"]
mod support;

use common::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::*;

fn hostile_client(args: &[&str]) -> Value {
    let out = Command::new(python())
        .arg(repo().join("peers/python/hostile_client.py"))
        .args(args)
        .output()
        .expect("run the hostile client");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "the hostile client printed no JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The legitimate client (the official SDK) lists the tools and calls one; its document,
/// or `None` when it could not (e.g. refused a session).
fn legit(url: &str) -> Option<Value> {
    let script = json!([{"op": "list_tools"}, call("list_fault_kinds", json!({}))]);
    let out = Command::new(python())
        .arg(repo().join("peers/python/agent.py"))
        .arg("--script")
        .arg(script.to_string())
        .arg("--url")
        .arg(url)
        .args(["--timeout", "20"])
        .output()
        .expect("run the agent");
    let doc: Value = serde_json::from_slice(&out.stdout).ok()?;
    let ok = doc["completed"] == true
        && doc["ops"][0]["ok"] == true
        && sc(&doc, 1)["kinds"]
            .as_array()
            .is_some_and(|k| !k.is_empty());
    ok.then_some(doc)
}

#[test]
fn a_session_flood_is_refused_with_503_and_others_are_still_served() {
    let env = Env::new();
    let (_g, url) = http_server(
        &env,
        &["--max-sessions", "30", "--max-sessions-per-client", "20"],
    );
    // One client address opens 40 sessions: 20 are held, 20 refused (per client).
    let v = hostile_client(&[
        "sessions",
        "--url",
        &url,
        "--count",
        "40",
        "--source",
        "127.0.0.2",
    ]);
    assert_eq!(v["status"]["200"], 20, "{v}");
    assert_eq!(v["status"]["503"], 20, "{v}");
    assert!(
        v["retry_after"]
            .as_array()
            .is_some_and(|r| r.iter().all(|x| x == "5")),
        "{v}"
    );
    assert!(
        v["refusal"]
            .as_str()
            .unwrap_or("")
            .contains("--max-sessions-per-client"),
        "{v}"
    );
    // Another client is still served.
    assert!(
        legit(&url).is_some(),
        "a legitimate client was refused under a per-client flood"
    );
    // A second address fills the server: 10 held, 10 refused (in all).
    let v = hostile_client(&[
        "sessions",
        "--url",
        &url,
        "--count",
        "20",
        "--source",
        "127.0.0.3",
    ]);
    assert_eq!(v["status"]["200"], 10, "{v}");
    assert_eq!(v["status"]["503"], 10, "{v}");
    assert!(
        v["refusal"]
            .as_str()
            .unwrap_or("")
            .contains("--max-sessions)"),
        "{v}"
    );
}

#[test]
fn flooded_sessions_idle_out_and_a_legitimate_client_is_served_again() {
    let env = Env::new();
    let (_g, url) = http_server(
        &env,
        &["--max-sessions", "10", "--session-idle-timeout", "2s"],
    );
    let v = hostile_client(&[
        "sessions",
        "--url",
        &url,
        "--count",
        "15",
        "--source",
        "127.0.0.2",
    ]);
    assert_eq!(v["status"]["200"], 10, "{v}");
    assert_eq!(v["status"]["503"], 5, "{v}");
    // The flood's sessions idle out: a legitimate client is served again.
    let until = Instant::now() + Duration::from_secs(30);
    while legit(&url).is_none() {
        assert!(Instant::now() < until, "idle sessions never expired");
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn half_sent_heads_are_cut_and_cannot_lock_others_out() {
    let env = Env::new();
    let (_g, url) = http_server(&env, &["--max-connections", "40", "--header-timeout", "1s"]);
    // 90 connections (50 past the cap) each send half a request head, then nothing.
    let mut slow = Command::new(python())
        .arg(repo().join("peers/python/hostile_client.py"))
        .args([
            "slowloris",
            "--url",
            &url,
            "--count",
            "90",
            "--hold",
            "6",
            "--source",
            "127.0.0.2",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("run the slow client");
    let mut lines = BufReader::new(slow.stdout.take().expect("stdout")).lines();
    let ready = lines.next().and_then(Result::ok).unwrap_or_default();
    assert_eq!(
        ready, "ready",
        "the slow client did not open its connections"
    );
    // While they are held, a legitimate client is served.
    assert!(
        legit(&url).is_some(),
        "a legitimate client was locked out by half-sent heads"
    );
    let last = lines.next().and_then(Result::ok).unwrap_or_default();
    let _ = slow.wait();
    let v: Value = serde_json::from_str(&last).unwrap_or_else(|e| panic!("{e}: {last}"));
    assert_eq!(v["opened"], 90, "{v}");
    assert_eq!(
        v["closed_by_server"], 90,
        "every half-sent head is cut (header timeout, connection cap): {v}"
    );
}

/// A policy letting MCP clients start the hostile target (with `args`).
fn target_policy(env: &Env, lines: &[String]) -> String {
    let globs: Vec<String> = lines.iter().map(|l| format!("  - {l:?}\n")).collect();
    env.policy(&format!("mcp_commands:\n{}", globs.concat()))
}

#[test]
fn describe_target_on_an_endless_paginator_stops_at_a_bound() {
    let env = Env::new();
    let py = python();
    let target = repo()
        .join("peers/python/hostile_target.py")
        .display()
        .to_string();
    let big = vec![
        py.clone(),
        target.clone(),
        "--description-bytes".into(),
        "200000".into(),
    ];
    let plain = vec![py.clone(), target.clone()];
    let policy = target_policy(&env, &[plain.join(" "), big.join(" ")]);
    let script = json!([
        call(
            "describe_target",
            json!({"target": {"command": plain}, "timeout_ms": 20000})
        ),
        call(
            "describe_target",
            json!({"target": {"command": big}, "timeout_ms": 20000})
        ),
    ]);
    let doc = agent_stdio(
        &script,
        &env.server(&["--policy", &policy]),
        &["--timeout", "60"],
    );
    let v = sc(&doc, 0);
    assert_eq!(v["server"]["name"], "endless-paginator", "{v:#}");
    assert_eq!(
        v["tools"].as_array().map(Vec::len),
        Some(500),
        "cut at the tool cap"
    );
    assert_eq!(v["tools_truncated"], true);
    let why = v["tools_stopped_by"].as_str().unwrap_or("");
    assert!(why.starts_with("tools:"), "{why}");
    // Pages of 50 tools of 200 KB each: the byte cap (8 MiB) stops it first.
    let v = sc(&doc, 1);
    let why = v["tools_stopped_by"].as_str().unwrap_or("");
    assert!(why.starts_with("bytes:"), "{why}");
    let n = v["tools"].as_array().map_or(0, Vec::len);
    assert!((1..=50).contains(&n), "{n} tools under the byte cap");
}

#[test]
fn simulate_past_its_bounds_answers_naming_the_bound() {
    let env = Env::new();
    // The documented bounds: 200,000 tasks, 100 steps of 100 calls, 10,000 agents.
    let calls: Vec<String> = (0..100).map(|_| "{tool: t}".to_string()).collect();
    let step = format!("  - calls: [{}]\n", calls.join(", "));
    let workload = format!(
        "name: huge\narrival: {{mode: closed, concurrency: 10000}}\ntasks: 200000\nsteps:\n{}servers:\n  - name: s\n    tools:\n      t: {{latency: {{added_ms: 5}}}}\nclient:\n  timeout_ms: 5000\n",
        step.repeat(100)
    );
    let script = json!([call(
        "simulate",
        json!({"workload": workload, "gates": ["error_rate < 1% over 10s"]})
    )]);
    let doc = agent_stdio(
        &script,
        &env.server(&["--max-sim-time", "2s"]),
        &["--timeout", "60"],
    );
    let v = sc(&doc, 0);
    assert_eq!(v["complete"], false, "{v:#}");
    let why = v["stopped_by"].as_str().unwrap_or("");
    assert!(
        ["time:", "events:", "memory:"]
            .iter()
            .any(|b| why.starts_with(b)),
        "{why}"
    );
    assert!(
        v["report"]["calls"].as_u64().is_some_and(|c| c > 0),
        "{v:#}"
    );
}

/// Run the agent over stdio on a script kept in a file (too long for a command line): its
/// document and its stderr (where the server's stderr goes).
fn run_agent_file(env: &Env, script: &Value, server: &[String], timeout: &str) -> (Value, String) {
    let file = env.dir.path().join("script.json");
    std::fs::write(&file, script.to_string()).expect("write the script");
    let out = Command::new(python())
        .arg(repo().join("peers/python/agent.py"))
        .arg("--script")
        .arg(&file)
        .args(["--timeout", timeout, "--"])
        .args(server)
        .output()
        .expect("run the agent");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(doc["completed"], true, "{doc:#}\n{err}");
    (doc, err)
}

#[test]
fn a_cancelled_simulate_stops_computing() {
    let env = Env::new();
    let calls: Vec<String> = (0..100).map(|_| "{tool: t}".to_string()).collect();
    let step = format!("  - calls: [{}]\n", calls.join(", "));
    let workload = format!(
        "name: huge\narrival: {{mode: closed, concurrency: 10000}}\ntasks: 200000\nsteps:\n{}servers:\n  - name: s\n    tools:\n      t: {{latency: {{added_ms: 5}}}}\n",
        step.repeat(100)
    );
    // The client gives up after 2 s and says so (notifications/cancelled); the wall-time
    // bound (120 s) is far away: only the cancellation can stop the simulation in time.
    let mut sim = call("simulate", json!({"workload": workload}));
    sim["timeout_s"] = json!(2);
    let script = json!([sim, {"op": "sleep", "seconds": 3}, call("list_fault_kinds", json!({}))]);
    let (doc, err) = run_agent_file(
        &env,
        &script,
        &env.server(&["--max-sim-time", "120s"]),
        "60",
    );
    assert_eq!(
        doc["ops"][0]["ok"], false,
        "the client abandoned it: {:#}",
        doc["ops"][0]
    );
    assert!(sc(&doc, 2)["kinds"].is_array());
    assert!(
        err.contains("simulate stopped early: cancelled"),
        "the simulation went on after the request was cancelled: {err}"
    );
}

/// A TOML plan of about `bytes` bytes: many small faults.
fn big_toml(bytes: usize) -> String {
    let mut t = String::from("seed = 1\n");
    let mut i = 0;
    while t.len() < bytes {
        t.push_str(&format!(
            "[[faults]]\nid = \"f{i}\"\nkind = \"latency\"\nadded_ms = 5\nprobability = 0.5\n"
        ));
        i += 1;
    }
    t
}

#[test]
fn validate_plan_on_a_large_toml_answers_and_a_too_large_one_is_refused() {
    let env = Env::new();
    let script = json!([
        call(
            "validate_plan",
            json!({"plan": big_toml(240 * 1024), "format": "toml"})
        ),
        call(
            "validate_plan",
            json!({"plan": big_toml(300 * 1024), "format": "toml"})
        ),
    ]);
    let (doc, _) = run_agent_file(&env, &script, &env.server(&[]), "25");
    let v = sc(&doc, 0);
    assert!(v["ok"].is_boolean(), "{v:#}");
    let r = &doc["ops"][1]["result"];
    assert_eq!(r["isError"], true, "{r:#}");
    let text = r["content"][0]["text"].as_str().unwrap_or("");
    assert!(text.contains("at most 262144 bytes"), "{text}");
}
