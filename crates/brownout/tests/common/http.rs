//! Helpers for HTTP relay tests: real HTTP peers on free loopback ports, brownout's HTTP
//! relay in front of them, and the Python SDK's HTTP client. Every process is killed when
//! its guard drops.
#![allow(dead_code)]

use super::{brownout, python, repo};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A process killed on drop.
pub struct Guard {
    pub child: Child,
    pub stderr: Arc<Mutex<String>>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Guard {
    /// Stop it as a user would (SIGTERM: what is in flight finishes, the event log is
    /// flushed) and wait up to 20 s for it to exit; killed after that.
    pub fn stop(mut self) -> Option<std::process::ExitStatus> {
        let pid = nix::unistd::Pid::from_raw(self.pid());
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    pub fn stderr_text(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

pub fn wait_port(port: u16, guard: &mut Guard) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    while Instant::now() < deadline {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return;
        }
        if let Ok(Some(status)) = guard.child.try_wait() {
            panic!(
                "peer exited ({status}) before listening: {}",
                guard.stderr_text()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "peer did not listen on {port} within 30 s: {}",
        guard.stderr_text()
    );
}

pub fn spawn(mut cmd: Command) -> Guard {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start a peer");
    let stderr = Arc::new(Mutex::new(String::new()));
    let pipe = child.stderr.take().expect("stderr pipe");
    let sink = Arc::clone(&stderr);
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            if let Ok(mut s) = sink.lock() {
                s.push_str(&line);
                s.push('\n');
            }
        }
    });
    Guard { child, stderr }
}

/// `@modelcontextprotocol/server-everything` over HTTP: `mode` is `streamableHttp` (URL ends
/// in /mcp) or `sse` (URL ends in /sse).
pub fn everything_http(mode: &str) -> (Guard, String) {
    let port = free_port();
    let mut cmd = Command::new(repo().join("peers/npm/node_modules/node/bin/node"));
    cmd.arg(
        repo().join("peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
    )
    .arg(mode)
    .env("PORT", port.to_string());
    let mut g = spawn(cmd);
    wait_port(port, &mut g);
    let path = if mode == "sse" { "/sse" } else { "/mcp" };
    (g, format!("http://127.0.0.1:{port}{path}"))
}

/// The Python SDK test server (peers/python/server.py) over HTTP; `extra` are its flags
/// (`--json-response`, `--stateless`, or `--transport sse`).
pub fn python_http(extra: &[&str]) -> (Guard, String) {
    let port = free_port();
    let mut cmd = Command::new(python());
    cmd.arg(repo().join("peers/python/server.py"));
    if !extra.contains(&"--transport") {
        cmd.args(["--transport", "streamable-http"]);
    }
    cmd.args(extra).args(["--port", &port.to_string()]);
    let sse = extra.contains(&"sse");
    let mut g = spawn(cmd);
    wait_port(port, &mut g);
    let path = if sse { "/sse" } else { "/mcp" };
    (g, format!("http://127.0.0.1:{port}{path}"))
}

/// `brownout proxy http ARGS --listen 127.0.0.1:0`; returns the guard and the URL clients use.
pub fn brownout_http(args: &[&str]) -> (Guard, String) {
    let mut cmd = Command::new(brownout());
    cmd.args(["proxy", "http", "--listen", "127.0.0.1:0"]);
    cmd.args(args);
    let g = spawn(cmd);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = g.stderr_text();
        if let Some(line) = text.lines().find(|l| l.starts_with("brownout: relaying ")) {
            let url = line
                .trim_start_matches("brownout: relaying ")
                .split(" -> ")
                .next()
                .expect("a URL")
                .to_string();
            return (g, url);
        }
        assert!(
            Instant::now() < deadline,
            "brownout did not start listening: {text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Run the Python SDK's HTTP client (peers/python/http_client.py) against `url`.
pub fn py_http(url: &str, flags: &[&str], script: Value) -> Value {
    let out = Command::new(python())
        .arg(repo().join("peers/python/http_client.py"))
        .args([
            "--url",
            url,
            "--timeout",
            "60",
            "--script",
            &script.to_string(),
        ])
        .args(flags)
        .current_dir(repo().join("peers/python"))
        .output()
        .expect("run the Python SDK HTTP client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "client output is not JSON ({e}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Write a plan file in `dir` and return its path as a string.
pub fn plan_file(dir: &std::path::Path, yaml: &str) -> String {
    let p = dir.join("plan.yaml");
    std::fs::write(&p, yaml).expect("write plan");
    p.display().to_string()
}

/// `brownout proxy http` with its admin API on a free loopback port, in front of the
/// built-in fixture: the guard, the MCP URL and the admin URL.
pub fn relay_with_admin() -> (Guard, String, String) {
    let (g, url) = brownout_http(&["--admin", "127.0.0.1:0", "--", super::brownout(), "fixture"]);
    let admin = admin_url(&g);
    (g, url, admin)
}

/// The admin API's URL a relay started with `--admin 127.0.0.1:0` printed.
pub fn admin_url(g: &Guard) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = g.stderr_text();
        if let Some(i) = text.find("admin API on ") {
            let rest = &text[i + "admin API on ".len()..];
            return rest.lines().next().unwrap_or("").trim().to_string();
        }
        assert!(Instant::now() < deadline, "no admin address: {text}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The first JSON-RPC message of a body, JSON or SSE.
pub fn first_message(body: &str) -> Value {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        return v;
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .find_map(|d| serde_json::from_str(d).ok())
        .unwrap_or_else(|| panic!("no message in {body}"))
}

/// `initialize` over raw HTTP on `url` (as any client would); returns the session id the
/// server issued, the answer's body read to its end.
pub async fn open_session(http: &reqwest::Client, url: &str) -> String {
    let init = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(
            serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}})
            .to_string(),
        )
        .send()
        .await
        .expect("initialize");
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .expect("id")
        .to_string();
    let _ = init.bytes().await;
    session
}
