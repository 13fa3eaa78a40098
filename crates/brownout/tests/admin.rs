//! Live fault control of a running stdio relay through its admin API and `brownout faults`,
//! with every change observed from the client's side of the relay.

mod common;
use common::*;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// Start the relay in front of the fixture with an admin API; returns it and the API's URL.
fn relay_with_admin(dir: &std::path::Path, plan: &str, extra: &[&str]) -> (Wire, String) {
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
fn faults(args: &[&str]) -> (i32, String, String) {
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

fn echo(w: &mut Wire, id: u64) -> Value {
    w.send(&tool_call(id, "echo", json!({"message": "hi"})));
    let v = w.recv_json(5000).expect("an answer");
    assert_eq!(v["id"], id, "{v}");
    v
}

/// A raw HTTP/1.1 request (what any HTTP client would send); returns status and body. A
/// body goes as `application/yaml` (plan syntax).
fn http(url: &str, method: &str, path: &str, body: &str) -> (u16, String) {
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
fn raw(url: &str, method: &str, path: &str, headers: &[&str], body: &str) -> (u16, String) {
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

#[test]
fn faults_are_added_listed_expired_removed_and_cleared_on_a_running_relay() {
    let dir = tmp();
    let (mut w, url) = relay_with_admin(dir.path(), "faults: []\n", &[]);
    assert!(echo(&mut w, 1).get("result").is_some());

    // Add with a TTL: the client sees the fault at once, and no more after it expires.
    let (code, out, err) = faults(&[
        "add",
        "--admin",
        &url,
        "--ttl",
        "1s",
        "{id: no-echo, kind: error, phase: request, tools: [echo], code: -32042}",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("added no-echo"), "{out}");
    let (_, listed, _) = faults(&["list", "--admin", &url, "--json"]);
    let listed: Value = serde_json::from_str(&listed).expect("json");
    assert_eq!(listed["faults"][0]["id"], "no-echo");
    assert!(listed["faults"][0]["expires_in_s"]
        .as_f64()
        .is_some_and(|s| s <= 1.0));
    assert_eq!(echo(&mut w, 2)["error"]["code"], -32042);
    let until = Instant::now() + Duration::from_secs(10);
    while !w.stderr_text().contains("fault `no-echo` expired") {
        assert!(Instant::now() < until, "{}", w.stderr_text());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(echo(&mut w, 3).get("result").is_some());

    // A fault with a typo is refused with the key named, and nothing changes.
    let (code, _, err) = faults(&["add", "--admin", &url, "{kind: latency, added_msec: 5}"]);
    assert_eq!(code, 1);
    assert!(err.contains("added_msec"), "{err}");

    // Add two, remove one by id, clear the rest.
    for f in [
        "{id: a, kind: error, phase: request, tools: [echo], code: -32001}",
        "{id: b, kind: latency, tools: [fetch_logs], added_ms: 1}",
    ] {
        assert_eq!(faults(&["add", "--admin", &url, f]).0, 0);
    }
    assert_eq!(echo(&mut w, 4)["error"]["code"], -32001);
    let (code, out, _) = faults(&["rm", "--admin", &url, "a"]);
    assert_eq!((code, out.trim()), (0, "removed a"));
    assert!(echo(&mut w, 5).get("result").is_some());
    assert_eq!(faults(&["rm", "--admin", &url, "a"]).0, 1);
    let (code, out, _) = faults(&["list", "--admin", &url]);
    assert_eq!(code, 0);
    assert!(out.contains("b ") && !out.contains("a "), "{out}");
    assert_eq!(faults(&["clear", "--admin", &url]).0, 0);
    let (_, out, _) = faults(&["list", "--admin", &url]);
    assert!(out.contains("no faults"), "{out}");
}

#[test]
fn put_plan_replaces_atomically_and_an_invalid_plan_changes_nothing() {
    let dir = tmp();
    let plan = "faults:\n  - {id: e1, kind: error, phase: request, tools: [echo], code: -32011}\n";
    let (mut w, url) = relay_with_admin(dir.path(), plan, &[]);
    assert_eq!(echo(&mut w, 1)["error"]["code"], -32011);
    let (status, body) = http(
        &url,
        "PUT",
        "/plan",
        "faults:\n  - {kind: error, probability: 1.5}\n",
    );
    assert_eq!(status, 422, "{body}");
    assert!(
        body.contains("plan.yaml:2:") && body.contains("probability"),
        "{body}"
    );
    assert_eq!(echo(&mut w, 2)["error"]["code"], -32011);
    let (status, body) = http(
        &url,
        "PUT",
        "/plan",
        "faults:\n  - {id: e2, kind: error, phase: request, tools: [echo], code: -32022}\n",
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(echo(&mut w, 3)["error"]["code"], -32022);
    let (status, body) = http(&url, "GET", "/status", "");
    assert_eq!(status, 200);
    let v: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(v["faults"], 1);
    assert!(
        v["summary"]["calls"].as_u64().is_some_and(|n| n >= 3),
        "{v}"
    );
    assert!(v["uptime_s"].as_f64().is_some());
}

#[test]
fn a_token_is_required_when_set_and_never_echoed() {
    let dir = tmp();
    let (w, url) = relay_with_admin(
        dir.path(),
        "faults: []\n",
        &["--admin-token", "s3cret-t0ken"],
    );
    let (code, _, err) = faults(&["list", "--admin", &url]);
    assert_eq!(code, 1, "{err}");
    let (code, _, err) = faults(&["list", "--admin", &url, "--token", "wrong"]);
    assert_eq!(code, 1, "{err}");
    let (code, out, err) = faults(&["list", "--admin", &url, "--token", "s3cret-t0ken"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("no faults"));
    assert!(!w.stderr_text().contains("s3cret-t0ken"));
}

#[test]
fn beyond_loopback_without_a_token_is_refused_before_the_server_starts() {
    let dir = tmp();
    let marker = dir.path().join("started");
    let server = vec![
        "sh".to_string(),
        "-c".into(),
        format!("touch {}; cat", marker.display()),
    ];
    let mut cmd = through(dir.path(), "faults: []\n", &server);
    cmd.insert(3, "--admin".into());
    cmd.insert(4, "0.0.0.0:0".into());
    let mut w = Wire::spawn(&cmd);
    assert_ne!(w.wait(10).code(), Some(0));
    assert!(
        w.stderr_text().contains("beyond loopback"),
        "{}",
        w.stderr_text()
    );
    assert!(!marker.exists());
}

#[test]
fn an_unreachable_admin_api_exits_2() {
    let (code, _, err) = faults(&["list", "--admin", "http://127.0.0.1:9"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot reach"), "{err}");
}

#[test]
fn metrics_show_calls_injections_and_live_eta_per_tool() {
    let dir = tmp();
    let plan = "seed: 3\nfaults:\n  - {id: drift, kind: schema_drift, tools: [get_incident], mutation: retype, path: /severity, every_nth: 2}\n";
    let (mut w, url) = relay_with_admin(dir.path(), plan, &[]);
    w.send(r#"{"jsonrpc":"2.0","id":100,"method":"tools/list"}"#);
    assert!(w.recv_json(5000).is_some());
    for i in 1..=8 {
        w.send(&tool_call(i, "get_incident", json!({"id": "INC-1"})));
        assert!(w.recv_json(5000).is_some());
    }
    let (status, text) = http(&url, "GET", "/metrics", "");
    assert_eq!(status, 200);
    let value = |line_start: &str| -> f64 {
        text.lines()
            .find(|l| l.starts_with(line_start))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no `{line_start}` in\n{text}"))
    };
    // Every second call drifted: the client got 8 answers, 4 of them schema-invalid.
    assert_eq!(
        value(r#"brownout_calls_total{method="tools/call",tool="get_incident",outcome="ok"}"#),
        8.0
    );
    assert_eq!(
        value(r#"brownout_injections_total{fault="drift",kind="schema_drift"}"#),
        4.0
    );
    assert_eq!(
        value(r#"brownout_tool_availability{tool="get_incident"}"#),
        1.0
    );
    assert_eq!(
        value(r#"brownout_tool_correctness{tool="get_incident"}"#),
        0.5
    );
    assert_eq!(value(r#"brownout_tool_eta{tool="get_incident"}"#), 0.5);
    assert_eq!(
        value(r#"brownout_schema_violations_total{tool="get_incident"}"#),
        4.0
    );
    assert_eq!(
        value(
            r#"brownout_call_latency_seconds_bucket{le="+Inf",method="tools/call",tool="get_incident"}"#
        ),
        8.0
    );
    assert_eq!(value("brownout_faults_active"), 1.0);
    assert!(text.trim_end().ends_with("# EOF"), "{text}");
}

/// The same live control on the HTTP relay: a fault added from the CLI acts on the next
/// HTTP client's calls, expires by its TTL, and `/metrics` shows live ETA per tool.
#[test]
fn the_http_relay_is_steered_live_and_shows_eta() {
    use common::http::{brownout_http, py_http, python_http};
    let (_server, direct) = python_http(&["--json-response"]);
    let (relay, url) = brownout_http(&["--upstream", &direct, "--admin", "127.0.0.1:0"]);
    let admin = relay
        .stderr_text()
        .lines()
        .find_map(|l| l.strip_prefix("brownout: admin API on "))
        .map(|s| s.trim().to_string())
        .expect("admin address printed");
    let calls = json!([
        {"op": "call_tool", "name": "add", "arguments": {"a": 1, "b": 1}},
        {"op": "call_tool", "name": "add", "arguments": {"a": 2, "b": 2}},
    ]);
    let before = py_http(&url, &[], calls.clone());
    assert_eq!(before["ops"][0]["ok"], true, "{before}");
    let (code, out, err) = faults(&[
        "add",
        "--admin",
        &admin,
        "--ttl",
        "3s",
        "{id: live, kind: error, tools: [add], code: -32070, message: live fault}",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    // Raw HTTP right away (a Python client's start-up could outlast a short TTL on a busy
    // machine): two calls, both hit.
    let during = raw_add_calls(&url, 2);
    for answer in &during {
        assert_eq!(answer["error"]["code"], -32070, "{answer}");
    }
    let (code, out, _) = faults(&["list", "--admin", &admin, "--json"]);
    assert_eq!(code, 0);
    assert!(out.contains("\"live\""), "{out}");
    let (status, metrics) = http(&admin, "GET", "/metrics", "");
    assert_eq!(status, 200);
    let eta = metrics
        .lines()
        .find(|l| l.starts_with(r#"brownout_tool_eta{tool="add"}"#))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no ETA for add: {metrics}"));
    assert!((eta - 0.5).abs() < 1e-9, "2 of 4 calls failed: ETA {eta}");
    // The fault leaves by itself.
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, out, _) = faults(&["list", "--admin", &admin, "--json"]);
        if !out.contains("\"live\"") {
            break;
        }
        assert!(Instant::now() < until, "the fault did not expire: {out}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let after = py_http(&url, &[], calls);
    assert_eq!(
        after["ops"][0]["ok"], true,
        "the fault expired by its TTL: {after}"
    );
}

/// Initialize a session over raw HTTP and call `add` `n` times; the JSON answers.
fn raw_add_calls(url: &str, n: u64) -> Vec<Value> {
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
fn fault_ids(url: &str) -> Vec<String> {
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

const ONE_FAULT: &str =
    "faults:\n  - {id: e1, kind: error, phase: request, tools: [echo], code: -32011}\n";

/// A web page can send a `text/plain` POST to loopback without a preflight, and make its
/// own host name resolve to 127.0.0.1: neither may steer the relay.
#[test]
fn cross_site_requests_and_untyped_bodies_are_refused() {
    let dir = tmp();
    let (mut w, url) = relay_with_admin(dir.path(), ONE_FAULT, &[]);
    let addr = url.trim_start_matches("http://").to_string();
    let host = format!("Host: {addr}");
    let fault = r#"{"id": "evil", "kind": "error", "tools": ["*"], "code": -32666}"#;

    // The classic cross-site form post: text/plain, foreign Origin.
    let (status, body) = raw(
        &url,
        "POST",
        "/faults",
        &[
            &host,
            "Origin: https://evil.example",
            "Content-Type: text/plain",
        ],
        fault,
    );
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("evil.example"), "{body}");
    // DNS rebinding: the page's own name, now pointing at loopback.
    let (status, body) = raw(
        &url,
        "POST",
        "/faults",
        &["Host: evil.example", "Content-Type: application/json"],
        fault,
    );
    assert_eq!(status, 421, "{body}");
    // Even from loopback, a body must say what it is.
    for ct in [
        "Content-Type: text/plain",
        "Content-Type: application/x-www-form-urlencoded",
    ] {
        let (status, body) = raw(&url, "POST", "/faults", &[&host, ct], fault);
        assert_eq!(status, 415, "{ct}: {body}");
        assert!(body.contains("application/json"), "{body}");
    }
    let (status, body) = raw(&url, "POST", "/faults", &[&host], fault);
    assert_eq!(status, 415, "{body}");
    let (status, body) = raw(
        &url,
        "PUT",
        "/plan",
        &[&host, "Content-Type: text/plain"],
        "faults: []\n",
    );
    assert_eq!(status, 415, "{body}");
    assert_eq!(fault_ids(&url), ["e1"]);
    assert_eq!(echo(&mut w, 1)["error"]["code"], -32011);
    // A foreign Origin cannot even read.
    let (status, _) = raw(
        &url,
        "GET",
        "/faults",
        &[&host, "Origin: https://evil.example"],
        "",
    );
    assert_eq!(status, 403);

    // What a local tool sends passes: JSON as JSON, plans as YAML, TOML or JSON, a loopback
    // Origin too.
    let (status, body) = raw(
        &url,
        "POST",
        "/faults",
        &[
            &host,
            "Origin: http://localhost:3000",
            "Content-Type: application/json; charset=utf-8",
        ],
        r#"{"id": "j", "kind": "latency", "tools": ["fetch_logs"], "added_ms": 1}"#,
    );
    assert_eq!(status, 201, "{body}");
    let (status, body) = raw(
        &url,
        "POST",
        "/faults",
        &[&host, "Content-Type: application/json"],
        "{id: not-json, kind: latency, added_ms: 1}",
    );
    assert_eq!(status, 422, "YAML labelled JSON: {body}");
    let (status, body) = raw(
        &url,
        "PUT",
        "/plan",
        &[&host, "Content-Type: application/toml"],
        "[[faults]]\nid = \"t\"\nkind = \"error\"\nphase = \"request\"\ntools = [\"echo\"]\ncode = -32033\n",
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(echo(&mut w, 2)["error"]["code"], -32033);
    let (status, body) = raw(
        &url,
        "PUT",
        "/plan",
        &[&host, "Content-Type: application/json"],
        r#"{"faults": [{"id": "j2", "kind": "error", "phase": "request", "tools": ["echo"], "code": -32044}]}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(echo(&mut w, 3)["error"]["code"], -32044);
}

/// A TTL too large for a `Duration` or an `Instant` is refused with a reason; the relay
/// lives on.
#[test]
fn out_of_range_ttls_are_refused_and_the_relay_lives() {
    let dir = tmp();
    let (mut w, url) = relay_with_admin(dir.path(), ONE_FAULT, &[]);
    let fault = "{id: t, kind: latency, tools: [fetch_logs], added_ms: 1}";
    for ttl in [
        "1000000000000000000000000000000",
        "10000000000000000000s",
        "99999999999h",
        "1e30",
        "-5s",
        "NaN",
    ] {
        let (status, body) = http(&url, "POST", &format!("/faults?ttl={ttl}"), fault);
        assert_eq!(status, 422, "ttl={ttl}: {body}");
        assert!(body.contains("ttl"), "{body}");
    }
    let (status, body) = http(&url, "POST", "/faults?ttl=99999999999h", fault);
    assert!(status == 422 && body.contains("out of range"), "{body}");
    assert_eq!(fault_ids(&url), ["e1"]);
    assert_eq!(echo(&mut w, 1)["error"]["code"], -32011);
    // The CLI says so before it asks the relay, with exit 2 (bad input).
    let (code, _, err) = faults(&["add", "--admin", &url, "--ttl", "1e30", fault]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("ttl"), "{err}");
    let (code, _, err) = faults(&[
        "add",
        "--admin",
        &url,
        "--ttl",
        "10000000000000000000000",
        fault,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("out of range"), "{err}");
    assert_eq!(fault_ids(&url), ["e1"]);
}

/// An empty body, `null` or `{}` is not "no faults": the running plan stays, and only
/// `faults: []` clears it. An unknown `?format=` is refused, naming the formats.
#[test]
fn empty_plans_and_unknown_formats_keep_the_running_plan() {
    let dir = tmp();
    let (mut w, url) = relay_with_admin(dir.path(), ONE_FAULT, &[]);
    for body in ["", "null", "{}", "\n", "# nothing\n", "seed: 3\n"] {
        let (status, said) = http(&url, "PUT", "/plan", body);
        assert_eq!(status, 422, "{body:?}: {said}");
        assert!(said.contains("faults: []"), "{said}");
        assert_eq!(fault_ids(&url), ["e1"], "after {body:?}");
    }
    for body in ["", "null", "{}"] {
        let (status, said) = raw(
            &url,
            "PUT",
            "/plan",
            &[
                &format!("Host: {}", url.trim_start_matches("http://")),
                "Content-Type: application/json",
            ],
            body,
        );
        assert_eq!(status, 422, "JSON {body:?}: {said}");
    }
    let (status, said) = http(&url, "POST", "/faults", "");
    assert_eq!(status, 422, "{said}");
    let (status, said) = http(&url, "PUT", "/plan?format=xml", "faults: []\n");
    assert_eq!(status, 400, "{said}");
    assert!(
        said.contains("xml") && said.contains("yaml") && said.contains("toml"),
        "{said}"
    );
    assert_eq!(fault_ids(&url), ["e1"]);
    assert_eq!(echo(&mut w, 1)["error"]["code"], -32011);
    // Saying so clears it.
    let (status, said) = http(&url, "PUT", "/plan", "faults: []\n");
    assert_eq!(status, 200, "{said}");
    assert!(fault_ids(&url).is_empty());
    assert!(echo(&mut w, 2).get("result").is_some());
}

/// 80 KB of block-style nesting: refused as a plan (422), not a stack overflow; the relay
/// lives. (Needs the plan parser's nesting cap from brownout-core.)
#[test]
fn a_deeply_nested_plan_is_refused_and_the_relay_lives() {
    let dir = tmp();
    let (mut w, url) = relay_with_admin(dir.path(), ONE_FAULT, &[]);
    // `- - - - …`: block sequences nested 40,000 deep in 80 KB.
    let deep = format!("faults:\n{}x\n", "- ".repeat(40_000));
    let (status, said) = http(&url, "PUT", "/plan", &deep);
    assert_eq!(status, 422, "{said}");
    assert_eq!(fault_ids(&url), ["e1"]);
    assert_eq!(echo(&mut w, 1)["error"]["code"], -32011);
}

/// Slowloris: a client that trickles its headers, sends none at all, or never finishes its
/// body is cut off (within a generous bound), and the API keeps answering others meanwhile.
#[test]
fn slow_clients_are_cut_off_and_others_are_served() {
    let dir = tmp();
    let (_w, url) = relay_with_admin(dir.path(), ONE_FAULT, &[]);
    let addr = url.trim_start_matches("http://").to_string();
    // What each slow client sends before it stalls.
    let stalls = [
        String::new(),
        format!("GET /status HTTP/1.1\r\nHost: {addr}\r\nX-Slow: a"),
        format!(
            "POST /faults HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/yaml\r\nContent-Length: 100\r\n\r\n{{kind: lat"
        ),
    ];
    let slow: Vec<_> = stalls
        .into_iter()
        .map(|sent| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut s = std::net::TcpStream::connect(&addr).expect("connect");
                s.write_all(sent.as_bytes()).expect("write");
                s.set_read_timeout(Some(Duration::from_secs(60)))
                    .expect("timeout");
                let start = Instant::now();
                let mut got = Vec::new();
                // EOF (or a reset) ends the read; a timeout means the server kept it open.
                let result = s.read_to_end(&mut got);
                let timed_out = result.as_ref().is_err_and(|e| {
                    matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    )
                });
                (
                    sent,
                    timed_out,
                    start.elapsed(),
                    String::from_utf8_lossy(&got).to_string(),
                )
            })
        })
        .collect();
    // Meanwhile the API answers.
    std::thread::sleep(Duration::from_millis(500));
    let (status, body) = http(&url, "GET", "/status", "");
    assert_eq!(status, 200, "{body}");
    for t in slow {
        let (sent, timed_out, took, got) = t.join().expect("thread");
        assert!(
            !timed_out,
            "a client that sent {sent:?} was kept for {took:?}: {got}"
        );
        if sent.contains("Content-Length") {
            assert!(got.contains(" 408 "), "{got}");
        }
    }
    assert_eq!(fault_ids(&url), ["e1"]);
}

/// A large plan is parsed and compiled off the relay's thread and outside the engine's
/// lock: calls keep being answered while `PUT /plan` works (before, every call waited for
/// the whole compile).
#[test]
fn a_large_plan_does_not_stop_traffic_while_it_compiles() {
    let dir = tmp();
    let (mut w, url) = relay_with_admin(dir.path(), ONE_FAULT, &[]);
    let mut plan = String::from(
        "faults:\n  - {id: e2, kind: error, phase: request, tools: [echo], code: -32022}\n",
    );
    for i in 0..3000 {
        plan.push_str(&format!(
            "  - {{id: f{i}, kind: latency, tools: [nothing_{i}], added_ms: 5}}\n"
        ));
    }
    let put = {
        let url = url.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            let (status, body) = http(&url, "PUT", "/plan", &plan);
            (status, body, start.elapsed())
        })
    };
    let mut slowest = Duration::ZERO;
    let mut id = 100;
    while !put.is_finished() {
        let start = Instant::now();
        echo(&mut w, id);
        slowest = slowest.max(start.elapsed());
        id += 1;
        std::thread::sleep(Duration::from_millis(10));
    }
    let (status, body, took) = put.join().expect("PUT");
    assert_eq!(status, 200, "{body}");
    assert_eq!(echo(&mut w, 1)["error"]["code"], -32022);
    // Only meaningful when the compile took a while on this machine.
    if took > Duration::from_secs(1) {
        assert!(
            slowest < took / 2,
            "a call waited {slowest:?} while the plan took {took:?}"
        );
    }
}

/// `GET /faults` shows the seed in force: `--seed` over the plan's own.
#[test]
fn the_listed_seed_is_the_one_in_force() {
    let dir = tmp();
    let (mut w, url) = relay_with_admin(
        dir.path(),
        "seed: 1\nfaults:\n  - {id: slow, kind: latency, added_ms: 1}\n",
        &["--seed", "99"],
    );
    let (code, body) = http(&url, "GET", "/faults", "");
    assert_eq!(code, 200, "{body}");
    let v: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(v["seed"], 99, "{v}");
    w.close_stdin();
    let _ = w.wait(10);
}
