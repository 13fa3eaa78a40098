//! Helpers for `proxy http -- CMD` tests: a raw streamable-HTTP client session (JSON and
//! SSE answers read by hand, so a hang or a misrouted message is visible), a stubborn
//! stdio server that ignores SIGTERM and notes it, and process checks.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// A stdio MCP server in Python that writes its pid to argv[1], notes every SIGTERM in
/// argv[2] (and otherwise ignores it), and answers every request with an empty result.
pub const STUBBORN: &str = r#"
import json, os, signal, sys
pidfile, sigfile = sys.argv[1], sys.argv[2]
def on_term(*_):
    with open(sigfile, "a") as f:
        f.write("TERM\n")
signal.signal(signal.SIGTERM, on_term)
with open(pidfile, "a") as f:
    f.write(f"{os.getpid()}\n")
for line in sys.stdin:
    try:
        m = json.loads(line)
    except Exception:
        continue
    if not isinstance(m, dict) or "id" not in m or "method" not in m:
        continue
    result = {}
    if m["method"] == "initialize":
        result = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "stubborn", "version": "1"}}
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": result}), flush=True)
"#;

/// The command line of the stubborn server, with its files in `dir`.
pub fn stubborn(dir: &Path) -> Vec<String> {
    let script = dir.join("stubborn.py");
    std::fs::write(&script, STUBBORN).expect("write the server");
    vec![
        crate::common::python(),
        script.display().to_string(),
        dir.join("pids").display().to_string(),
        dir.join("signals").display().to_string(),
    ]
}

/// The pids the stubborn servers in `dir` wrote, waiting up to 30 s for `n` of them.
pub fn pids(dir: &Path, n: usize) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(dir.join("pids")).unwrap_or_default();
        let pids: Vec<i32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
        if pids.len() >= n || Instant::now() > deadline {
            return pids;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// SIGTERMs the stubborn servers in `dir` received.
pub fn terms(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("signals"))
        .unwrap_or_default()
        .lines()
        .count()
}

/// Whether a process is alive (a zombie is not).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// Wait up to `secs` for `f` to hold.
pub async fn eventually(secs: u64, f: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    f()
}

/// A client session over raw HTTP.
pub struct Session {
    pub http: reqwest::Client,
    pub url: String,
    pub id: String,
}

/// What a POST's answer brought: its JSON-RPC messages, and whether it ended (within
/// the time allowed).
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub messages: Vec<Value>,
    /// The raw body of a JSON answer.
    pub raw: Vec<u8>,
    pub ended: bool,
}

pub fn initialize(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
}

pub fn call(id: u64, tool: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}})
}

impl Session {
    /// `initialize` and `notifications/initialized`.
    pub async fn start(url: &str) -> Session {
        let http = reqwest::Client::new();
        let r = http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(initialize(0).to_string())
            .send()
            .await
            .expect("initialize");
        assert_eq!(r.status(), 200, "initialize: {:?}", r.text().await);
        let id = r.headers()["mcp-session-id"]
            .to_str()
            .expect("a session id")
            .to_string();
        let _ = r.bytes().await;
        let s = Session {
            http,
            url: url.to_string(),
            id,
        };
        let r = s
            .send(
                json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                false,
            )
            .await;
        assert_eq!(r.status(), 202);
        s
    }

    /// POST a message; `sse` says whether the client takes an SSE answer.
    pub async fn send(&self, body: Value, sse: bool) -> reqwest::Response {
        let accept = if sse {
            "application/json, text/event-stream"
        } else {
            "application/json"
        };
        self.http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", accept)
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.to_string())
            .send()
            .await
            .expect("POST")
    }

    /// POST and read the whole answer, giving up after `secs`.
    pub async fn post(&self, body: Value, sse: bool, secs: u64) -> Answer {
        let resp = tokio::time::timeout(Duration::from_secs(secs), self.send(body, sse)).await;
        match resp {
            Ok(resp) => read(resp, secs).await,
            Err(_) => Answer {
                status: 0,
                messages: Vec::new(),
                raw: Vec::new(),
                ended: false,
            },
        }
    }

    pub async fn delete(&self) -> u16 {
        self.http
            .delete(&self.url)
            .header("mcp-session-id", &self.id)
            .send()
            .await
            .expect("DELETE")
            .status()
            .as_u16()
    }
}

/// Read an answer (JSON or SSE) to its end, or until `secs` have passed.
pub async fn read(mut resp: reqwest::Response, secs: u64) -> Answer {
    let status = resp.status().as_u16();
    let sse = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("text/event-stream"));
    let mut raw = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    let ended = loop {
        match tokio::time::timeout_at(deadline, resp.chunk()).await {
            Ok(Ok(Some(c))) => raw.extend_from_slice(&c),
            Ok(Ok(None)) => break true,
            Ok(Err(_)) => break true,
            Err(_) => break false,
        }
    };
    let messages = if sse {
        String::from_utf8_lossy(&raw)
            .split("\n\n")
            .filter_map(|ev| {
                let data: Vec<&str> = ev
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                (!data.is_empty()).then(|| data.join("\n"))
            })
            .map(|d| serde_json::from_str(&d).unwrap_or(Value::String(d)))
            .collect()
    } else if raw.is_empty() {
        Vec::new()
    } else {
        vec![serde_json::from_slice(&raw)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&raw).into_owned()))]
    };
    Answer {
        status,
        messages,
        raw,
        ended,
    }
}

/// `brownout proxy http --admin 127.0.0.1:0 ARGS`: the relay, its URL and its admin URL.
pub fn relay_with_admin(args: &[String]) -> (crate::common::http::Guard, String, String) {
    let mut all = vec!["--admin".to_string(), "127.0.0.1:0".into()];
    all.extend(args.iter().cloned());
    let argv: Vec<&str> = all.iter().map(String::as_str).collect();
    let (g, url) = crate::common::http::brownout_http(&argv);
    let admin = g
        .stderr_text()
        .lines()
        .find_map(|l| l.strip_prefix("brownout: admin API on "))
        .expect("the admin address")
        .trim()
        .to_string();
    (g, url, admin)
}

/// The relay's `/status`.
pub async fn status(admin: &str) -> Value {
    reqwest::get(format!("{admin}/status"))
        .await
        .expect("GET /status")
        .json()
        .await
        .expect("status JSON")
}

/// Wait (30 s at most) until the relay's engine holds at least `n` requests waiting for
/// their answers (`/status` `pending`): the calls sent before are in flight.
pub async fn wait_pending(admin: &str, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let s = status(admin).await;
        if s["pending"].as_u64().unwrap_or(0) >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "never {n} requests in flight: {s}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
