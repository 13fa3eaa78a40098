//! Shared helpers for brownout's integration tests: where the binary and the third-party
//! peers are, and how to drive a session through the relay with a real client.
#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn brownout() -> &'static str {
    env!("CARGO_BIN_EXE_brownout")
}

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repo root")
}

fn need(p: PathBuf) -> String {
    assert!(p.exists(), "{} is missing: run scripts/setup-peers (scripts/test does it)", p.display());
    p.display().to_string()
}

/// The Python of the test venv (official `mcp` SDK).
pub fn python() -> String {
    need(repo().join("target/peers/venv/bin/python"))
}

/// `@modelcontextprotocol/server-everything` in stdio mode.
pub fn everything() -> Vec<String> {
    vec![need(repo().join("peers/npm/node_modules/node/bin/node")), need(repo().join("peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js")), "stdio".into()]
}

/// A server on the official Python SDK.
pub fn python_server() -> Vec<String> {
    vec![python(), repo().join("peers/python/server.py").display().to_string()]
}

/// brownout's own fixture server.
pub fn fixture() -> Vec<String> {
    vec![brownout().into(), "fixture".into()]
}

/// A temporary directory that lives as long as the test.
pub fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

/// `brownout proxy stdio --plan PLAN --events EVENTS -- SERVER…` with the plan written to `dir`.
pub fn through(dir: &Path, plan: &str, server: &[String]) -> Vec<String> {
    let plan_path = dir.join("plan.yaml");
    std::fs::write(&plan_path, plan).expect("write plan");
    let mut cmd = vec![brownout().to_string(), "proxy".into(), "stdio".into(), "--quiet".into(), "--plan".into(), plan_path.display().to_string(), "--events".into(), dir.join("events.jsonl").display().to_string(), "--".into()];
    cmd.extend(server.iter().cloned());
    cmd
}

/// The event log a `through` session wrote.
pub fn events(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("events.jsonl")).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

pub fn fault_events<'a>(events: &'a [Value], fault: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == "fault" && e["fault"] == fault).collect()
}

/// Run the official Python SDK client (peers/python/client.py) on a script of operations
/// against `server` (a command line); returns its JSON report.
pub fn py_client(script: Value, server: &[String]) -> Value {
    let out = Command::new(python())
        .arg(repo().join("peers/python/client.py"))
        .args(["--timeout", "60", "--script", &script.to_string(), "--"])
        .args(server)
        .output()
        .expect("run the Python SDK client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("client output is not JSON ({e}): {stdout}\nstderr: {}", String::from_utf8_lossy(&out.stderr)))
}

/// The ops of a client report, with timings removed (for comparing sessions).
pub fn without_timings(mut v: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.remove("elapsed_ms");
                m.remove("command");
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

pub fn op(report: &Value, i: usize) -> &Value {
    &report["ops"][i]
}
