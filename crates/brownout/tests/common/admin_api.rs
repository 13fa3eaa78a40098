//! Helpers of the admin API tests: a relay with an admin API, raw HTTP requests to it,
//! `brownout faults`.
#![allow(dead_code)]

use super::common::*;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// Start the relay in front of the fixture with an admin API; returns it and the API's URL.
pub fn relay_with_admin(dir: &std::path::Path, plan: &str, extra: &[&str]) -> (Wire, String) {
    let mut cmd = through(dir, plan, &fixture());
    for (at, a) in (3..).zip(["--admin", "127.0.0.1:0"].iter().chain(extra)) {
        cmd.insert(at, a.to_string());
    }
    let mut w = Wire::spawn(&cmd);
    let until = Instant::now() + Duration::from_secs(10);
    let url = loop {
        let text = w.stderr_text();
        if let Some(i) = text.find("admin API on ") {
            let rest = &text[i + "admin API on ".len()..];
            break rest.lines().next().unwrap_or("").trim().to_string();
        }
        assert!(Instant::now() < until, "no admin address: {text}");
        std::thread::sleep(Duration::from_millis(20));
    };
    w.send(INIT);
    assert!(w.recv_json(5000).is_some());
    (w, url)
}

/// `brownout faults …`: exit code, stdout, stderr.
pub fn faults(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(brownout())
        .arg("faults")
        .args(args)
        .env_remove("BROWNOUT_ADMIN_TOKEN")
        .output()
        .expect("run brownout faults");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

pub fn echo(w: &mut Wire, id: u64) -> Value {
    w.send(&tool_call(id, "echo", json!({"message": "hi"})));
    let v = w.recv_json(5000).expect("an answer");
    assert_eq!(v["id"], id, "{v}");
    v
}

/// A raw HTTP/1.1 request (what any HTTP client would send); returns status and body. A
/// body goes as `application/yaml` (plan syntax).
pub fn http(url: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let addr = url.trim_start_matches("http://");
    let host = format!("Host: {addr}");
    if body.is_empty() && method == "GET" {
        raw(url, method, path, &[&host], body)
    } else {
        raw(
            url,
            method,
            path,
            &[&host, "Content-Type: application/yaml"],
            body,
        )
    }
}

/// A raw HTTP/1.1 request with exactly these header lines.
pub fn raw(url: &str, method: &str, path: &str, headers: &[&str], body: &str) -> (u16, String) {
    let addr = url.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    write!(
        s,
        "{head}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    (status, body)
}

/// Initialize a session over raw HTTP and call `add` `n` times; the JSON answers.
pub fn raw_add_calls(url: &str, n: u64) -> Vec<Value> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let http = reqwest::Client::new();
        let post = |body: Value, session: Option<String>| {
            let mut r = http
                .post(url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(body.to_string());
            if let Some(s) = session {
                r = r.header("mcp-session-id", s);
            }
            r.send()
        };
        let init = post(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"}}}),
            None,
        )
        .await
        .expect("initialize");
        let sid = init.headers()["mcp-session-id"]
            .to_str()
            .expect("id")
            .to_string();
        let _ = post(
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            Some(sid.clone()),
        )
        .await;
        let mut out = Vec::new();
        for i in 1..=n {
            let r = post(
                json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                       "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}),
                Some(sid.clone()),
            )
            .await
            .expect("call");
            out.push(r.json::<Value>().await.expect("a JSON answer"));
        }
        out
    })
}

/// The ids of the running faults, through the API.
pub fn fault_ids(url: &str) -> Vec<String> {
    let (status, body) = http(url, "GET", "/faults", "");
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).expect("json");
    v["faults"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| f["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

pub const ONE_FAULT: &str =
    "faults:\n  - {id: e1, kind: error, phase: request, tools: [echo], code: -32011}\n";
