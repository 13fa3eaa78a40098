//! Helpers for the experiment tests: experiment files from parts, running `brownout run`,
//! checking journals against docs/journal.schema.json.
#![allow(dead_code)]

use super::common::{brownout, repo};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// The parts of an experiment file.
pub struct Exp<'a> {
    pub labels: &'a str,
    pub target: &'a str,
    pub workload: &'a str,
    pub sessions: u32,
    pub baseline: &'a str,
    pub method: &'a str,
    pub faults: &'a str,
    pub gates: &'a str,
    pub probes: &'a str,
    pub rollbacks: &'a str,
    pub extra: &'a str,
}

/// A workload against the fixture: search, then get an incident.
pub const FIXTURE_WORKLOAD: &str = "arrival: {mode: closed, concurrency: 16}\nsteps:\n  - calls: [{tool: search_incidents, arguments: {query: db}}]\n  - calls: [{tool: get_incident, arguments: {id: INC-1}}]\nservers:\n  - name: fixture\n    tools:\n      search_incidents: {latency: {added_ms: 2}}\n      get_incident: {latency: {added_ms: 2}}\n";

impl Exp<'static> {
    pub fn fixture_green() -> Exp<'static> {
        Exp {
            labels: "{env: staging}",
            target: "",
            workload: FIXTURE_WORKLOAD,
            sessions: 16,
            baseline: "1s",
            method: "[{stage: canary, duration: 1s, sessions: 10%}, {stage: wider, duration: 1s, sessions: 25%}]",
            faults: "[{kind: latency, tools: [\"search_*\"], added_ms: 1, probability: 0.05}]",
            gates: "[\"error_rate < 5% over 2s\"]",
            probes: "[{probe: mcp, call: {tool: search_incidents, arguments: {query: db}}, tolerance: {success: \">= 99%\", p95: \"< 2s\"}, samples: 5}]",
            rollbacks: "[]",
            extra: "",
        }
    }
}

pub fn fixture_target() -> String {
    format!("{{command: [{}, fixture]}}", brownout())
}

/// The experiment file's text.
pub fn experiment_yaml(e: &Exp) -> String {
    let target = if e.target.is_empty() {
        fixture_target()
    } else {
        e.target.to_string()
    };
    format!(
        "title: a test experiment\nlabels: {}\ntarget: {target}\nsteady_state: {}\nload: {{workload: workload.yaml, sessions: {}}}\nbaseline: {}\nmethod: {}\nfaults: {}\ngates: {}\nrollbacks: {}\nrecovery: {{within: 10s}}\n{}",
        e.labels, e.probes, e.sessions, e.baseline, e.method, e.faults, e.gates, e.rollbacks, e.extra
    )
}

/// Write the experiment (and its workload) in `dir`; the experiment's path.
pub fn write(dir: &Path, text: &str) -> String {
    std::fs::write(dir.join("workload.yaml"), FIXTURE_WORKLOAD).expect("write workload");
    let p = dir.join("exp.yaml");
    std::fs::write(&p, text).expect("write experiment");
    p.display().to_string()
}

/// Run an experiment to its end: (exit code, journal, stdout + stderr).
pub fn run_experiment(dir: &Path, e: &Exp, args: &[&str]) -> (i32, Value, String) {
    let file = write(dir, &experiment_yaml(e));
    std::fs::write(dir.join("workload.yaml"), e.workload).expect("write workload");
    let journal = dir.join("journal.json");
    let _ = std::fs::remove_file(&journal);
    let out = Command::new(brownout())
        .arg("run")
        .arg(&file)
        .arg("--journal")
        .arg(&journal)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run brownout");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let j = std::fs::read_to_string(&journal)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), j, text)
}

/// Assert a journal validates against docs/journal.schema.json.
pub fn valid_journal(j: &Value) {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("docs/journal.schema.json")).expect("schema"),
    )
    .expect("schema json");
    let v = jsonschema::validator_for(&schema).expect("compile schema");
    let errors: Vec<String> = v.iter_errors(j).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "journal invalid: {errors:?}\n{j}");
}

/// A plain HTTP request (loopback, no keep-alive): (status, body).
pub fn http(url: &str, method: &str, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let hostport = url.trim_start_matches("http://").trim_end_matches('/');
    let mut s = std::net::TcpStream::connect(hostport).expect("connect");
    let req = format!("{method} {path} HTTP/1.1\r\nHost: {hostport}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
    s.write_all(req.as_bytes()).expect("write");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let status = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = out
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

/// The ids of the faults a relay's admin API lists.
pub fn remote_faults(admin: &str) -> Vec<String> {
    let (_, body) = http(admin, "GET", "/faults");
    let body = body.trim();
    // A chunked body: the JSON sits between the chunk sizes.
    let json = body
        .find('{')
        .and_then(|i| body.rfind('}').map(|j| &body[i..=j]))
        .unwrap_or("{}");
    let v: Value = serde_json::from_str(json).unwrap_or(Value::Null);
    v["faults"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["id"].as_str().map(str::to_string))
        .collect()
}

/// One tool call through a fresh MCP session at `url`: whether it was answered without error.
pub fn call_once(url: &str, tool: &str, args: Value) -> bool {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    use brownout::probe::spec::{McpProbe, ProbeCall};
    let spec = brownout::probe::ProbeSpec::Mcp(McpProbe {
        url: Some(url.to_string()),
        call: Some(ProbeCall {
            tool: tool.to_string(),
            arguments: args.as_object().cloned().unwrap_or_default(),
        }),
        ..McpProbe::default()
    });
    rt.block_on(brownout::probe::run_once(&spec)).ok
}

/// Start `brownout run` in the background.
pub fn spawn_run(dir: &Path, e: &Exp, args: &[&str]) -> std::process::Child {
    let file = write(dir, &experiment_yaml(e));
    std::fs::write(dir.join("workload.yaml"), e.workload).expect("write workload");
    Command::new(brownout())
        .arg("run")
        .arg(&file)
        .arg("--journal")
        .arg(dir.join("journal.json"))
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn brownout run")
}

pub fn journal(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("journal.json")).expect("journal written");
    serde_json::from_str(&text).expect("journal is JSON")
}

/// Wait (bounded) for a child to exit; its exit code.
pub fn wait_exit(child: &mut std::process::Child, secs: u64) -> i32 {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        if let Ok(Some(s)) = child.try_wait() {
            return s.code().unwrap_or(-1);
        }
        if std::time::Instant::now() > until {
            let _ = child.kill();
            panic!("brownout run did not end within {secs}s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

pub fn signal(child: &std::process::Child, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig).expect("signal");
}

/// Wait (bounded, generous) for a file to appear.
pub fn wait_for_file(p: &Path, secs: u64) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while !p.exists() {
        assert!(
            std::time::Instant::now() < until,
            "{} never appeared",
            p.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Wait until the run's status file says it is in a stage (faults on).
pub fn wait_for_stage(status: &Path) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let v: serde_json::Value = std::fs::read_to_string(status)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        if v["stage"].as_u64().is_some() {
            return;
        }
        assert!(
            std::time::Instant::now() < until,
            "the run never reached a stage"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
