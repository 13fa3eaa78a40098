//! Helpers for the tests of `brownout mcp`: run an agent (the official Python SDK's client,
//! peers/python/agent.py) against it over stdio or HTTP, a remote relay as the target (so
//! faults and calls are seen from the target's side), experiments, the audit log.
#![allow(dead_code)]

use crate::common::{brownout, python, repo};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A test's own store, audit log and approvals file.
pub struct Env {
    pub dir: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Env {
        Env {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }
    pub fn store(&self) -> PathBuf {
        self.dir.path().join("store.sqlite")
    }
    pub fn audit(&self) -> PathBuf {
        self.dir.path().join("audit.jsonl")
    }
    pub fn approvals(&self) -> PathBuf {
        self.dir.path().join("approvals.txt")
    }
    /// `brownout mcp` with this env's store, audit log and approvals file, and `extra`.
    pub fn server(&self, extra: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = vec![
            brownout().into(),
            "mcp".into(),
            "--store".into(),
            self.store().display().to_string(),
            "--audit".into(),
            self.audit().display().to_string(),
            "--approvals".into(),
            self.approvals().display().to_string(),
        ];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    }
    /// A policy file in this env.
    pub fn policy(&self, text: &str) -> String {
        let p = self.dir.path().join("policy.yaml");
        std::fs::write(&p, text).expect("write policy");
        p.display().to_string()
    }
    /// Every audit entry so far.
    pub fn audit_entries(&self) -> Vec<Value> {
        std::fs::read_to_string(self.audit())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

/// Run the agent script over stdio against `server` (a `brownout mcp` command line).
pub fn agent_stdio(script: &Value, server: &[String], extra: &[&str]) -> Value {
    let mut cmd = Command::new(python());
    cmd.arg(repo().join("peers/python/agent.py"))
        .arg("--script")
        .arg(script.to_string())
        .args(extra)
        .arg("--")
        .args(server);
    run_agent(cmd)
}

/// Run the agent script over streamable HTTP.
pub fn agent_http(script: &Value, url: &str, extra: &[&str]) -> Value {
    let mut cmd = Command::new(python());
    cmd.arg(repo().join("peers/python/agent.py"))
        .arg("--script")
        .arg(script.to_string())
        .arg("--url")
        .arg(url)
        .args(extra);
    run_agent(cmd)
}

/// Run an agent command (agent.py or a variant), its one JSON document, which must say it
/// completed.
pub fn run_agent(mut cmd: Command) -> Value {
    let out = cmd.output().expect("run the agent");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "the agent printed no JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(
        doc["completed"],
        true,
        "{doc:#}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    doc
}

/// The structured content of op `i` (which must have succeeded).
pub fn sc(doc: &Value, i: usize) -> Value {
    let op = &doc["ops"][i];
    assert_eq!(op["ok"], true, "op {i}: {op:#}");
    let v = op["result"]["structuredContent"].clone();
    assert!(v.is_object(), "op {i} has no structured content: {op:#}");
    v
}

pub fn call(name: &str, args: Value) -> Value {
    json!({"op": "call_tool", "name": name, "arguments": args})
}

/// A relay already running in front of the fixture, with an admin API: the target of the
/// live tests, whose faults and calls the tests read from its side.
pub struct Remote {
    pub guard: crate::common::http::Guard,
    pub url: String,
    pub admin: String,
}

pub fn remote() -> Remote {
    let (guard, url) = crate::common::http::brownout_http(&[
        "--admin",
        "127.0.0.1:0",
        "--",
        brownout(),
        "fixture",
    ]);
    let admin = crate::common::http::admin_url(&guard);
    Remote { guard, url, admin }
}

impl Remote {
    /// The faults a relay's admin API at `admin` holds.
    pub fn faults_at(admin: &str) -> Vec<String> {
        get(admin, "/faults")["faults"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f["id"].as_str().map(String::from))
            .collect()
    }
    fn get(&self, path: &str) -> Value {
        get(&self.admin, path)
    }
    /// The faults the relay holds now.
    pub fn faults(&self) -> Vec<String> {
        Remote::faults_at(&self.admin)
    }
}

fn get(admin: &str, path: &str) -> Value {
    {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let r = reqwest::get(format!("{admin}{path}")).await.expect("admin");
            r.json::<Value>().await.expect("admin JSON")
        })
    }
}

impl Remote {
    /// Calls the relay has carried.
    pub fn calls(&self) -> u64 {
        self.get("/status")["summary"]["calls"]
            .as_u64()
            .unwrap_or(0)
    }
    /// `tools/call` requests the relay has carried (a start's read-only `initialize` and
    /// `tools/list`, which check the load's tools, are not tool calls).
    pub fn tool_calls(&self) -> u64 {
        self.get("/status")["summary"]["tool_calls"]
            .as_u64()
            .unwrap_or(0)
    }
    /// Wait (30 s at most) until the relay holds no fault.
    pub fn wait_clean(&self) -> bool {
        let until = Instant::now() + Duration::from_secs(30);
        while Instant::now() < until {
            if self.faults().is_empty() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }
}

/// An experiment against `url`/`admin` (the remote relay): a light load on the fixture's
/// search, a latency fault, one stage at `shares`.
pub fn experiment(
    title: &str,
    target: &str,
    labels: &str,
    shares: &[&str],
    gates: &str,
    secs: u32,
) -> String {
    let method: Vec<String> = shares
        .iter()
        .enumerate()
        .map(|(i, s)| format!("  - {{stage: s{i}, duration: {secs}s, sessions: \"{s}\"}}"))
        .collect();
    format!(
        "title: {title}\nlabels: {labels}\ntarget: {target}\nload:\n  sessions: 4\n  workload:\n    name: test agent\n    arrival: {{mode: closed, concurrency: 4}}\n    think_ms: 50\n    steps: [{{calls: [{{tool: search_incidents, arguments: {{query: db}}}}]}}]\n    servers: [{{name: fixture, tools: {{search_incidents: {{latency: {{added_ms: 5}}}}}}}}]\nbaseline: 500ms\nmethod:\n{}\nfaults:\n  - {{id: search-slow, kind: latency, tools: [search_incidents], added_ms: 20}}\ngates: {gates}\n",
        method.join("\n")
    )
}

pub fn remote_target(r: &Remote) -> String {
    format!("{{url: \"{}\", admin: \"{}\"}}", r.url, r.admin)
}

/// `brownout mcp --http 127.0.0.1:0 …`, its URL once it listens.
pub fn http_server(env: &Env, extra: &[&str]) -> (crate::common::http::Guard, String) {
    let args = env.server(&[&["--http", "127.0.0.1:0"], extra].concat());
    let mut cmd = Command::new(&args[0]);
    cmd.args(&args[1..]);
    let g = crate::common::http::spawn(cmd);
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let text = g.stderr_text();
        if let Some(i) = text.find("serving MCP at ") {
            let url = text[i + "serving MCP at ".len()..]
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            return (g, url);
        }
        assert!(
            Instant::now() < until,
            "brownout mcp --http did not start: {text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Validate `value` against a JSON Schema.
pub fn assert_valid(schema: &Value, value: &Value, what: &str) {
    let v = jsonschema::validator_for(schema).expect("schema compiles");
    let errors: Vec<String> = v
        .iter_errors(value)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{what}: {errors:?}\n{value:#}");
}

pub fn path_of(p: &Path) -> String {
    p.display().to_string()
}
