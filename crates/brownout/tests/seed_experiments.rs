//! The seed's three monitoring experiments (examples/experiments/seed-*.yaml), run as written
//! against real servers — server-everything over stdio behind brownout's relay, the official
//! Python SDK's server over streamable HTTP, and a Python SDK server with a dependency — with
//! their detection and recovery times (the journal's `detection`) checked against the bounds
//! docs/experiments.md states. Bounds are generous: the machine may be loaded.

mod common;
#[path = "experiment_support/mod.rs"]
mod support;

use common::http::{brownout_http, free_port, python_http, spawn, wait_port, Guard};
use common::{brownout, python, repo};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Run an example with its target lines replaced; (exit code, journal, output).
fn run_seed(dir: &Path, name: &str, replace: &[(&str, String)]) -> (i32, Value, String) {
    let examples = repo().join("examples/experiments");
    let mut text = std::fs::read_to_string(examples.join(name)).expect("example");
    for (from, to) in replace {
        assert!(text.contains(from), "{name} has `{from}`");
        text = text.replace(from, to);
    }
    // The examples' layout: experiments beside their workloads' folder.
    std::fs::create_dir_all(dir.join("experiments")).expect("mkdir");
    std::fs::create_dir_all(dir.join("workloads")).expect("mkdir");
    let file = dir.join("experiments").join(name);
    std::fs::write(&file, text).expect("write");
    for w in ["seed-everything.yaml", "seed-echo.yaml", "seed-lookup.yaml"] {
        std::fs::copy(
            repo().join("examples/workloads").join(w),
            dir.join("workloads").join(w),
        )
        .expect("workload");
    }
    let journal = dir.join("journal.json");
    let out = Command::new(brownout())
        .arg("run")
        .arg(&file)
        .arg("--policy")
        .arg(repo().join("examples/policies/seed-policy.yaml"))
        .arg("--journal")
        .arg(&journal)
        .arg("--no-store")
        .current_dir(dir)
        .output()
        .expect("run");
    let j: Value = std::fs::read_to_string(&journal)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), j, text)
}

fn ms(d: &Value, key: &str) -> f64 {
    d[key]
        .as_f64()
        .unwrap_or_else(|| panic!("`{key}` missing: {d:#}"))
}

/// Experiment 1: the probe's server is killed on each of its calls for 4 s; the monitor
/// sees `process_exited`, alerts after two failures, and a passing probe follows the kills'
/// end (the next `initialize` starts a new server).
#[test]
fn a_killed_server_is_detected_alerted_and_comes_back() {
    let dir = common::tmp();
    let everything = common::everything();
    let cmd = format!(
        "command: [\"{}\", \"{}\", stdio]",
        everything[0], everything[1]
    );
    let (code, j, out) = run_seed(
        dir.path(),
        "seed-process-kill.yaml",
        &[(
            "command: [npx, -y, \"@modelcontextprotocol/server-everything\", stdio]",
            cmd,
        )],
    );
    assert_eq!(code, 1, "deviated: the probe missed its tolerance\n{out}");
    support::valid_journal(&j);
    assert_eq!(j["status"], "deviated", "{out}");
    let d = &j["detection"];
    let reasons = d["reasons"].as_object().expect("reasons");
    assert!(
        reasons.keys().all(|r| r.starts_with("process_exited")),
        "{d:#}"
    );
    // Interval 500 ms: the first sample under the faults fails; two in a row alert.
    assert!(ms(d, "ttd_ms") < 1_000.0 + 3_000.0, "{d:#}");
    assert!(ms(d, "tta_ms") >= ms(d, "ttd_ms"), "{d:#}");
    assert!(ms(d, "tta_ms") < 2.0 * 1_000.0 + 6_000.0, "{d:#}");
    // Recovery from the faults' removal: a new session, a new server (Node starts), a pass.
    assert_eq!(d["recovery_from_ms"], d["faults_removed_ms"], "{d:#}");
    assert!(ms(d, "ttr_ms") < 10_000.0, "{d:#}");
    assert!(ms(d, "ttrn_ms") >= ms(d, "ttr_ms"), "{d:#}");
    // The stage saw the same, and the samples are in the journal with their reasons.
    let stage = &j["stages"][0];
    assert_eq!(stage["detection"]["ttd_ms"], d["ttd_ms"], "{stage:#}");
    let samples = stage["probes"][0]["samples"].as_array().expect("samples");
    assert!(
        samples.iter().any(|s| s["notice"] == "alert"),
        "{samples:?}"
    );
    assert!(out.contains("probes: detected in"), "{out}");
}

/// Experiment 3: 2 s added to every call of the Python SDK server over streamable HTTP;
/// the rolling P95 (< 500ms over 3 probes, one a second) alerts on the first slow probe,
/// and the recovery notice follows once the window is fast again.
#[test]
fn two_seconds_of_latency_fire_the_p95_alert_within_two_cycles() {
    let dir = common::tmp();
    let (_server, url) = python_http(&[]);
    let (code, j, out) = run_seed(
        dir.path(),
        "seed-latency.yaml",
        &[("url: http://127.0.0.1:8931/mcp", format!("url: {url}"))],
    );
    assert_eq!(code, 1, "deviated: the probe's P95 tolerance broke\n{out}");
    support::valid_journal(&j);
    let d = &j["detection"];
    assert_eq!(
        d["reasons"]["latency"].as_u64().map(|n| n > 0),
        Some(true),
        "{d:#}"
    );
    // Two cycles of the 1 s interval (±10 %) plus the 2 s the first slow probe takes.
    assert!(ms(d, "tta_ms") >= 2_000.0, "{d:#}");
    assert!(ms(d, "tta_ms") < 2.0 * 1_100.0 + 2_000.0 + 3_000.0, "{d:#}");
    assert!(ms(d, "ttrn_ms") < 20_000.0, "{d:#}");
}

/// Experiment 2: the server's dependency (an MCP server behind a brownout relay) is refused;
/// the server degrades — `lookup` answers isError, `/health` says 503 with a reason — and
/// comes back when the dependency does.
#[test]
fn a_refused_dependency_degrades_the_server_and_it_recovers() {
    let dir = common::tmp();
    let (dep_url, dep_relay, admin) = {
        let (g, url) = brownout_http(&["--admin", "127.0.0.1:0", "--", brownout(), "fixture"]);
        let admin = common::http::admin_url(&g);
        (url, g, admin)
    };
    let port = free_port();
    let mut cmd = Command::new(python());
    cmd.arg(repo().join("peers/python/dependent_server.py"))
        .args(["--port", &port.to_string(), "--dependency", &dep_url]);
    let mut server: Guard = spawn(cmd);
    wait_port(port, &mut server);
    let health = format!("http://127.0.0.1:{port}/health");
    assert_eq!(
        support::http(&format!("http://127.0.0.1:{port}"), "GET", "/health").0,
        200
    );
    // Poll /health while the experiment runs: it must say 503 with a reason at some point.
    let poll = std::thread::spawn(move || {
        let mut seen = Vec::new();
        for _ in 0..60 {
            let out = Command::new(brownout())
                .args([
                    "probe",
                    "--kind",
                    "http",
                    &health,
                    "--json",
                    "--timeout",
                    "3s",
                ])
                .output()
                .expect("probe");
            seen.push(String::from_utf8_lossy(&out.stdout).into_owned());
            // The pace of a sampler that runs beside the experiment, not a wait for state.
            std::thread::sleep(Duration::from_millis(250));
        }
        seen
    });
    let (code, j, out) = run_seed(
        dir.path(),
        "seed-dependency.yaml",
        &[
            (
                "url: http://127.0.0.1:8932/mcp",
                format!("url: http://127.0.0.1:{port}/mcp"),
            ),
            ("admin: http://127.0.0.1:8934", format!("admin: {admin}")),
        ],
    );
    let seen = poll.join().expect("poll");
    assert_eq!(code, 1, "deviated: lookups failed while refused\n{out}");
    support::valid_journal(&j);
    let d = &j["detection"];
    assert!(d["reasons"]["tool_error"].as_u64().is_some(), "{d:#}");
    assert!(ms(d, "ttd_ms") < 4_000.0, "{d:#}");
    assert!(ms(d, "tta_ms") < 8_000.0, "{d:#}");
    assert!(ms(d, "ttr_ms") < 10_000.0, "{d:#}");
    let degraded = seen
        .iter()
        .any(|l| l.contains("http_status(503)") && l.contains("dependency refused"));
    assert!(degraded, "/health never said 503 with the reason: {seen:?}");
    // The dependency's relay holds no process for the refused connections.
    drop(server);
    drop(dep_relay);
}
