//! Shared helpers for brownout's integration tests: where the binary and the third-party
//! peers are, and how to drive a session through the relay with a real client.
#![allow(dead_code)]

pub mod http;
pub mod upstream;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn brownout() -> &'static str {
    env!("CARGO_BIN_EXE_brownout")
}

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root")
}

fn need(p: PathBuf) -> String {
    assert!(
        p.exists(),
        "{} is missing: run scripts/setup-peers (scripts/test does it)",
        p.display()
    );
    p.display().to_string()
}

/// The Python of the test venv (official `mcp` SDK).
pub fn python() -> String {
    need(repo().join("target/peers/venv/bin/python"))
}

/// `@modelcontextprotocol/server-everything` in stdio mode.
pub fn everything() -> Vec<String> {
    vec![
        need(repo().join("peers/npm/node_modules/node/bin/node")),
        need(
            repo().join(
                "peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
            ),
        ),
        "stdio".into(),
    ]
}

/// A server on the official Python SDK.
pub fn python_server() -> Vec<String> {
    vec![
        python(),
        repo().join("peers/python/server.py").display().to_string(),
    ]
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
    let mut cmd = vec![
        brownout().to_string(),
        "proxy".into(),
        "stdio".into(),
        "--quiet".into(),
        "--plan".into(),
        plan_path.display().to_string(),
        "--events".into(),
        dir.join("events.jsonl").display().to_string(),
        "--".into(),
    ];
    cmd.extend(server.iter().cloned());
    cmd
}

/// The event log a `through` session wrote.
pub fn events(dir: &Path) -> Vec<Value> {
    events_at(&dir.join("events.jsonl"))
}

/// The records of an event log (`--events FILE`), one JSON value per line.
pub fn events_at(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

pub fn fault_events<'a>(events: &'a [Value], fault: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == "fault" && e["fault"] == fault)
        .collect()
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
    serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "client output is not JSON ({e}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
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

/// A process driven line by line over its stdin/stdout, with timeouts (wire-level tests).
pub struct Wire {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
    pub stderr: std::sync::Arc<std::sync::Mutex<String>>,
    stderr_reader: Option<std::thread::JoinHandle<()>>,
}

impl Wire {
    pub fn spawn(cmd: &[String]) -> Wire {
        use std::io::BufRead;
        use std::process::Stdio;
        let mut child = Command::new(&cmd[0])
            .args(&cmd[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        let stderr_pipe = child.stderr.take().expect("stderr");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let e2 = std::sync::Arc::clone(&stderr);
        let stderr_reader = std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr_pipe).lines() {
                let Ok(line) = line else { break };
                let mut s = e2.lock().unwrap_or_else(|p| p.into_inner());
                s.push_str(&line);
                s.push('\n');
            }
        });
        Wire {
            child,
            stdin,
            lines,
            stderr,
            stderr_reader: Some(stderr_reader),
        }
    }

    pub fn send(&mut self, line: &str) {
        use std::io::Write;
        let w = self.stdin.as_mut().expect("stdin open");
        w.write_all(line.as_bytes()).expect("write");
        w.write_all(b"\n").expect("write");
        w.flush().expect("flush");
    }

    pub fn recv(&self, timeout_ms: u64) -> Option<String> {
        self.lines
            .recv_timeout(std::time::Duration::from_millis(timeout_ms))
            .ok()
    }

    /// The next line that parses as JSON, as a value.
    pub fn recv_json(&self, timeout_ms: u64) -> Option<Value> {
        self.recv(timeout_ms)
            .and_then(|l| serde_json::from_str(&l).ok())
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Wait for exit (at most `secs`); kills it and panics on a hang.
    pub fn wait(&mut self, secs: u64) -> std::process::ExitStatus {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        loop {
            if let Ok(Some(s)) = self.child.try_wait() {
                // The process is gone; its stderr may still be in the pipe. Read it all
                // (unless a grandchild keeps the pipe open: then give it a moment).
                if let Some(r) = self.stderr_reader.take() {
                    let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
                    while !r.is_finished() && std::time::Instant::now() < until {
                        std::thread::sleep(std::time::Duration::from_millis(5));
                    }
                }
                return s;
            }
            if std::time::Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("process did not exit within {secs}s");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    pub fn stderr_text(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for Wire {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The MCP handshake lines a client sends first.
pub const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"wire-test","version":"1"}}}"#;
pub const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

pub fn tool_call(id: u64, tool: &str, args: Value) -> String {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}}).to_string()
}

/// A server that writes every line it reads back, unchanged (for byte-for-byte checks).
pub fn mirror() -> Vec<String> {
    vec![
        python(),
        "-u".into(),
        "-c".into(),
        "import sys\nfor line in sys.stdin:\n    sys.stdout.write(line)\n    sys.stdout.flush()\n"
            .into(),
    ]
}

/// A validator for one definition of one MCP protocol version's official JSON Schema
/// (`crates/brownout/tests/data/mcp-schema/<version>/schema.json`, kept in the repository).
pub fn mcp_schema_validator(version: &str, def: &str) -> jsonschema::Validator {
    let path = repo()
        .join("crates/brownout/tests/data/mcp-schema")
        .join(version)
        .join("schema.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut doc: Value = serde_json::from_str(&text).expect("schema JSON");
    let defs = if doc.get("$defs").is_some() {
        "$defs"
    } else {
        "definitions"
    };
    doc["$ref"] = serde_json::json!(format!("#/{defs}/{def}"));
    jsonschema::validator_for(&doc).expect("compile")
}
