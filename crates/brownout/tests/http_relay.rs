//! The HTTP relay against real peers: the official Python SDK (client and server, JSON and
//! SSE answers, the stateless 2026-07-28 protocol, legacy HTTP+SSE) and
//! `@modelcontextprotocol/server-everything` (streamable HTTP and legacy SSE), every
//! protocol version on the wire, any front to any back, and the listener's safety rules.

mod common;

use common::http::{
    brownout_http, everything_http, first_message, plan_file, py_http, python_http,
};
use common::{brownout, fixture, py_client, python, repo, tmp, without_timings};
use serde_json::{json, Value};

const ADD: &str = r#"[{"op":"list_tools"},{"op":"call_tool","name":"add","arguments":{"a":2,"b":3}},{"op":"call_tool","name":"echo","arguments":{"message":"hi"}}]"#;

fn script(s: &str) -> Value {
    serde_json::from_str(s).expect("script JSON")
}

/// Through brownout with an empty plan, a Python SDK client sees exactly what it sees
/// directly, for a server answering SSE and one answering JSON.
#[test]
fn python_client_sees_the_same_session_through_brownout_sse_and_json() {
    for flags in [&[][..], &["--json-response"][..]] {
        let (_server, direct) = python_http(flags);
        let (_relay, through) = brownout_http(&["--upstream", &direct]);
        let a = py_http(&direct, &[], script(ADD));
        let b = py_http(&through, &[], script(ADD));
        assert_eq!(a["completed"], true, "{a}");
        assert_eq!(
            a["ops"][1]["result"]["structuredContent"],
            json!({"result": 5}),
            "{a}"
        );
        let strip = |mut v: Value| {
            v.as_object_mut().map(|m| m.remove("url"));
            without_timings(v)
        };
        assert_eq!(strip(a), strip(b), "server flags {flags:?}");
    }
}

/// A fault that claims to change a payload changes it, as the client sees it: schema drift
/// on `add` over HTTP makes the SDK reject the result against the tool's outputSchema;
/// an `error` fault on `echo` reaches the client as an error.
#[test]
fn message_faults_act_over_http_as_on_stdio() {
    let dir = tmp();
    let plan = plan_file(
        dir.path(),
        "seed: 7\nfaults:\n  - {id: drift, kind: schema_drift, tools: [add], mutation: retype}\n  - {id: boom, kind: error, tools: [echo], code: -32050, message: injected}\n",
    );
    for flags in [&[][..], &["--json-response"][..]] {
        let (_server, direct) = python_http(flags);
        let (_relay, through) = brownout_http(&["--upstream", &direct, "--plan", &plan]);
        let r = py_http(&through, &[], script(ADD));
        assert_eq!(r["ops"][0]["ok"], true, "{r}");
        let add = &r["ops"][1];
        let drifted =
            add["ok"] == false || add["result"]["structuredContent"] != json!({"result": 5});
        assert!(drifted, "schema drift did not reach the client: {add}");
        let echo = &r["ops"][2];
        assert_eq!(echo["ok"], false, "{echo}");
        assert_eq!(echo["error"]["code"], -32050, "{echo}");
    }
}

/// The stateless protocol (2026-07-28: no handshake, no session) passes through, faults
/// included; the session key is then the client's connection.
#[test]
fn stateless_2026_07_28_passes_and_takes_faults() {
    let dir = tmp();
    let plan = plan_file(
        dir.path(),
        "faults:\n  - {kind: error, tools: [echo], code: -32051, message: stateless fault}\n",
    );
    let (_server, direct) = python_http(&["--stateless", "--json-response"]);
    let (_relay, through) = brownout_http(&["--upstream", &direct, "--plan", &plan]);
    let r = py_http(&through, &["--mode", "2026-07-28"], script(ADD));
    assert_eq!(r["protocol_version"], "2026-07-28", "{r}");
    assert_eq!(
        r["ops"][1]["result"]["structuredContent"],
        json!({"result": 5}),
        "{r}"
    );
    assert_eq!(r["ops"][2]["error"]["code"], -32051, "{r}");
}

/// server-everything in streamable HTTP mode, through brownout, with the Python SDK client.
#[test]
fn server_everything_streamable_http_through_brownout() {
    let (_server, direct) = everything_http("streamableHttp");
    let dir = tmp();
    let plan = plan_file(
        dir.path(),
        "faults:\n  - {kind: error, tools: [get-sum], code: -32052, message: sum fault}\n",
    );
    let (_relay, through) = brownout_http(&["--upstream", &direct, "--plan", &plan]);
    let ops = script(
        r#"[{"op":"list_tools"},{"op":"call_tool","name":"echo","arguments":{"message":"über"}},{"op":"call_tool","name":"get-sum","arguments":{"a":1,"b":2}}]"#,
    );
    let r = py_http(&through, &[], ops);
    let names: Vec<&str> = r["ops"][0]["result"]["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(names.contains(&"echo") && names.contains(&"get-sum"), "{r}");
    let echoed = r["ops"][1]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(echoed.contains("über"), "{r}");
    assert_eq!(r["ops"][2]["error"]["code"], -32052, "{r}");
}

/// Legacy HTTP+SSE (2024-11-05): brownout rewrites the `endpoint` event, the client posts
/// through brownout, answers arrive on the stream, and short-circuit faults answer there too.
#[test]
fn legacy_sse_everything_and_python_through_brownout() {
    let dir = tmp();
    let plan = plan_file(
        dir.path(),
        "faults:\n  - {kind: error, tools: [get-sum, add], code: -32053, message: legacy fault}\n",
    );
    let (_e, everything) = everything_http("sse");
    let (_p, python_sse) = python_http(&["--transport", "sse"]);
    for (upstream, tool, args) in [
        (&everything, "get-sum", json!({"a": 1, "b": 2})),
        (&python_sse, "add", json!({"a": 1, "b": 2})),
    ] {
        let (relay, through) = brownout_http(&["--upstream", upstream, "--plan", &plan]);
        assert!(through.ends_with("/sse"), "{through}");
        let ops = json!([
            {"op": "call_tool", "name": "echo", "arguments": {"message": "legacy"}},
            {"op": "call_tool", "name": tool, "arguments": args},
        ]);
        let r = py_http(&through, &["--sse"], ops);
        assert_eq!(r["completed"], true, "{r}\n{}", relay.stderr_text());
        let text = r["ops"][0]["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("");
        assert!(text.contains("legacy"), "{r}");
        assert_eq!(r["ops"][1]["error"]["code"], -32053, "{r}");
    }
}

/// Raw HTTP, one protocol version at a time, against server-everything through brownout:
/// initialize negotiates the version, the session id passes, notifications get 202, a call
/// is answered, the GET stream opens, DELETE ends the session.
#[tokio::test]
async fn every_protocol_version_on_the_wire() {
    let (_server, direct) = everything_http("streamableHttp");
    let (_relay, through) = brownout_http(&["--upstream", &direct]);
    let http = reqwest::Client::new();
    for version in ["2025-03-26", "2025-06-18", "2025-11-25"] {
        let post = |body: Value, session: Option<String>| {
            let mut r = http
                .post(&through)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", version)
                .body(body.to_string());
            if let Some(s) = session {
                r = r.header("mcp-session-id", s);
            }
            r.send()
        };
        let init = post(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": version, "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"}}}),
            None,
        )
        .await
        .expect("initialize");
        assert_eq!(init.status(), 200, "{version}");
        let session = init
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
            .expect("a session id passes through");
        let body = init.text().await.expect("body");
        let answer = first_message(&body);
        assert_eq!(answer["result"]["protocolVersion"], version, "{body}");

        let note = post(
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            Some(session.clone()),
        )
        .await
        .expect("initialized");
        assert_eq!(note.status(), 202, "{version}");

        let call = post(
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "echo", "arguments": {"message": version}}}),
            Some(session.clone()),
        )
        .await
        .expect("call");
        assert_eq!(call.status(), 200);
        let body = call.text().await.expect("body");
        let answer = first_message(&body);
        assert_eq!(answer["id"], 2, "{body}");
        assert!(answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains(version));

        let stream = http
            .get(&through)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", version)
            .send()
            .await
            .expect("GET stream");
        assert_eq!(stream.status(), 200, "{version}");
        assert!(stream.headers()["content-type"]
            .to_str()
            .unwrap_or("")
            .starts_with("text/event-stream"));
        drop(stream);

        let del = http
            .delete(&through)
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", version)
            .send()
            .await
            .expect("DELETE");
        assert!(del.status().is_success(), "{version}: {}", del.status());
        let after = post(
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
            Some(session.clone()),
        )
        .await
        .expect("after delete");
        // server-everything answers an unknown session with 400 (the spec says 404): what
        // matters here is that brownout passed the DELETE on and the server forgot it.
        assert!(
            after.status().is_client_error(),
            "a deleted session is gone ({version})"
        );
    }
}

/// SSE event ids pass untouched, so a client can resume a stream with `Last-Event-ID`.
#[tokio::test]
async fn event_ids_pass_and_streams_resume() {
    let (_server, direct) = everything_http("streamableHttp");
    let (_relay, through) = brownout_http(&["--upstream", &direct]);
    let http = reqwest::Client::new();
    let init = http
        .post(&through)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}})
            .to_string(),
        )
        .send()
        .await
        .expect("initialize");
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .expect("id")
        .to_string();
    let body = init.text().await.expect("body");
    let ids: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("id:"))
        .map(str::trim)
        .collect();
    assert!(
        !ids.is_empty(),
        "the server's event ids reach the client: {body}"
    );
    // Resume from the first id: the server replays what followed it, through brownout.
    let mut resumed = http
        .get(&through)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("last-event-id", ids[0])
        .send()
        .await
        .expect("resume");
    assert_eq!(resumed.status(), 200);
    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    while !seen.contains("protocolVersion") {
        match tokio::time::timeout_at(deadline, resumed.chunk()).await {
            Ok(Ok(Some(c))) => seen.push_str(&String::from_utf8_lossy(&c)),
            _ => break,
        }
    }
    assert!(
        seen.contains("protocolVersion"),
        "the replayed initialize answer comes through the resumed stream: {seen:?}"
    );
}

/// DNS-rebinding protection and limits, with clear errors.
#[tokio::test]
async fn origin_host_and_limits_are_enforced() {
    let (_server, direct) = python_http(&["--json-response"]);
    let (_relay, through) = brownout_http(&["--upstream", &direct, "--max-body-bytes", "1000"]);
    let http = reqwest::Client::new();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string();
    let req = || {
        http.post(&through)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
    };
    let evil = req()
        .header("origin", "https://evil.example")
        .body(init.clone())
        .send()
        .await
        .expect("send");
    assert_eq!(evil.status(), 403);
    assert!(evil.text().await.unwrap_or_default().contains("Origin"));
    let rebound = req()
        .header("host", "evil.example:80")
        .body(init.clone())
        .send()
        .await
        .expect("send");
    assert_eq!(rebound.status(), 421);
    let ok = req()
        .header("origin", "http://localhost:5173")
        .body(init.clone())
        .send()
        .await
        .expect("send");
    assert_eq!(ok.status(), 200);
    // Bad bytes are the server's to judge: passed on, its 4xx comes back, brownout lives on.
    let garbage = req().body("{not json").send().await.expect("send");
    assert!(garbage.status().is_client_error(), "{}", garbage.status());
    let again = req().body(init.clone()).send().await.expect("send");
    assert_eq!(again.status(), 200, "the relay survived the garbage");
    let big = req()
        .body(format!("{{\"pad\":\"{}\"}}", "x".repeat(5000)))
        .send()
        .await
        .expect("send");
    assert_eq!(big.status(), 413);
    assert!(big.text().await.unwrap_or_default().contains("limit"));
    let huge_header = req()
        .header("x-pad", "y".repeat(70 * 1024))
        .body(init)
        .send()
        .await
        .expect("send");
    assert_eq!(huge_header.status(), 431);
}

/// Listening beyond loopback needs an explicit flag.
#[test]
fn listening_beyond_loopback_needs_a_flag() {
    let out = std::process::Command::new(brownout())
        .args([
            "proxy",
            "http",
            "--listen",
            "0.0.0.0:0",
            "--upstream",
            "http://127.0.0.1:9/mcp",
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--allow-remote"), "{err}");
}

/// HTTP front, stdio back: a stdio-only server served over streamable HTTP, one process per
/// session; faults act; a session's server dying gives its caller a clear error.
#[test]
fn a_stdio_server_served_over_http() {
    let dir = tmp();
    let plan = plan_file(
        dir.path(),
        "faults:\n  - {kind: error, tools: [restart_service], code: -32054, message: stdio-back fault}\n",
    );
    let mut args = vec!["--plan".to_string(), plan];
    args.push("--".into());
    args.extend(fixture());
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let (relay, url) = brownout_http(&argv);
    let ops = json!([
        {"op": "list_tools"},
        {"op": "call_tool", "name": "echo", "arguments": {"message": "over http"}},
        {"op": "call_tool", "name": "restart_service", "arguments": {"service": "db"}},
    ]);
    let r = py_http(&url, &[], ops.clone());
    assert_eq!(r["completed"], true, "{r}\n{}", relay.stderr_text());
    let names = r["ops"][0]["result"]["tools"].to_string();
    assert!(names.contains("search_incidents"), "{r}");
    assert!(r["ops"][1]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .contains("over http"));
    assert_eq!(r["ops"][2]["error"]["code"], -32054, "{r}");
    // A second client gets its own session (and server process) and works as well.
    let r2 = py_http(&url, &[], ops);
    assert_eq!(r2["ops"][1]["ok"], true, "{r2}");
}

/// stdio front, HTTP back: a stdio client reaches an HTTP server through the faults.
#[test]
fn a_stdio_client_reaches_an_http_server() {
    let (_server, direct) = python_http(&[]);
    let dir = tmp();
    let plan = plan_file(
        dir.path(),
        "faults:\n  - {kind: error, tools: [echo], code: -32055, message: stdio-front fault}\n",
    );
    let relay = vec![
        brownout().to_string(),
        "proxy".into(),
        "stdio".into(),
        "--quiet".into(),
        "--plan".into(),
        plan,
        "--upstream".into(),
        direct,
    ];
    let r = py_client(script(ADD), &relay);
    assert_eq!(r["completed"], true, "{r}");
    assert_eq!(
        r["ops"][1]["result"]["structuredContent"],
        json!({"result": 5}),
        "{r}"
    );
    assert_eq!(r["ops"][2]["error"]["code"], -32055, "{r}");
    let _ = (python(), repo());
}

/// With a stdio back, sessions (processes) are bounded: beyond `--max-sessions` a new
/// `initialize` gets 503 with a clear error; ending a session with DELETE frees its place.
#[tokio::test]
async fn stdio_back_sessions_are_bounded() {
    let mut args = vec!["--max-sessions".to_string(), "1".into(), "--".into()];
    args.extend(fixture());
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let (_relay, url) = brownout_http(&argv);
    let http = reqwest::Client::new();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    .to_string();
    let post = || {
        http.post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(init.clone())
            .send()
    };
    let first = post().await.expect("first");
    assert_eq!(first.status(), 200);
    let session = first.headers()["mcp-session-id"]
        .to_str()
        .expect("id")
        .to_string();
    let answer: Value = first.json().await.expect("JSON answer");
    assert_eq!(
        answer["result"]["serverInfo"]["name"], "brownout-fixture",
        "{answer}"
    );
    let second = post().await.expect("second");
    assert_eq!(second.status(), 503);
    assert!(second
        .text()
        .await
        .unwrap_or_default()
        .contains("--max-sessions"));
    let del = http
        .delete(&url)
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("DELETE");
    assert_eq!(del.status(), 200);
    // The process ends, then the place is free again.
    let mut status = 0;
    for _ in 0..50 {
        status = post().await.expect("third").status().as_u16();
        if status == 200 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(status, 200);
}

/// Auth and MCP headers reach the server untouched, and the token appears nowhere in
/// brownout's output or its event log.
#[tokio::test]
async fn auth_and_mcp_headers_pass_untouched_and_are_never_logged() {
    let dir = tmp();
    let events = dir.path().join("events.jsonl");
    let (upstream_url, _) = common::upstream::start(false).await;
    let plan = plan_file(
        dir.path(),
        "faults:\n  - {kind: latency, tools: [headers], added_ms: 1}\n",
    );
    let (relay, url) = brownout_http(&[
        "--upstream",
        &upstream_url,
        "--plan",
        &plan,
        "--events",
        &events.display().to_string(),
    ]);
    let secret = "Bearer s3cr3t-t0ken-value";
    let resp = reqwest::Client::new()
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", secret)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "headers")
        .header("x-custom", "kept")
        .body(
            json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                     "params": {"name": "headers", "arguments": {}}})
            .to_string(),
        )
        .send()
        .await
        .expect("call");
    assert_eq!(resp.status(), 200);
    let answer: Value = resp.json().await.expect("JSON");
    let seen = &answer["result"]["structuredContent"];
    assert_eq!(seen["authorization"], secret, "{answer}");
    assert_eq!(seen["mcp-protocol-version"], "2026-07-28");
    assert_eq!(seen["mcp-method"], "tools/call");
    assert_eq!(seen["mcp-name"], "headers");
    assert_eq!(seen["x-custom"], "kept");
    assert!(
        seen.get("accept-encoding").is_none(),
        "dropped on the way up: {seen}"
    );
    assert!(!relay.stderr_text().contains("s3cr3t"), "a token on stderr");
    // Stopped, not killed: a SIGKILL can land before the event log is written out.
    assert!(relay.stop().is_some_and(|s| s.success()), "the relay stops");
    let log = std::fs::read_to_string(&events).unwrap_or_default();
    assert!(log.contains("latency"), "the event log was written: {log}");
    assert!(!log.contains("s3cr3t"), "a token in the event log");
}

/// A server-to-client request (sampling) crosses brownout both ways over streamable HTTP:
/// server-everything asks the Python SDK client to sample in the middle of a tool call, the
/// client's answer is POSTed back through brownout, and the tool's result carries it.
#[test]
fn server_to_client_requests_cross_brownout() {
    let (_server, direct) = everything_http("streamableHttp");
    let (relay, through) = brownout_http(&["--upstream", &direct]);
    let ops = json!([{"op": "call_tool", "name": "trigger-sampling-request",
                      "arguments": {"prompt": "hello", "maxTokens": 20}}]);
    let r = py_http(
        &through,
        &["--sampling-reply", "sampled-through-brownout"],
        ops,
    );
    let text = r["ops"][0]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(
        text.contains("sampled-through-brownout"),
        "{r}\n{}",
        relay.stderr_text()
    );
}

/// HTTP front, stdio back: a session's server dying (a `process` fault kills it while a call
/// is in flight) gives the caller a clear error; the session is then gone (404) and a new
/// `initialize` starts a new process that works.
#[tokio::test]
async fn a_dying_stdio_server_behind_http_fails_its_callers_clearly() {
    let dir = tmp();
    let plan = plan_file(
        dir.path(),
        "faults:\n  - {kind: process, action: kill, signal: KILL, tools: [restart_service], max_injections: 1}\n",
    );
    let mut args = vec!["--plan".to_string(), plan, "--".into()];
    args.extend(fixture());
    args.extend(["--delay-ms".to_string(), "300".into()]);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let (_relay, url) = brownout_http(&argv);
    let http = reqwest::Client::new();
    let post = |body: Value, session: Option<String>| {
        let mut r = http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(body.to_string());
        if let Some(s) = session {
            r = r.header("mcp-session-id", s);
        }
        r.send()
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let first = post(init.clone(), None).await.expect("initialize");
    let session = first.headers()["mcp-session-id"]
        .to_str()
        .expect("id")
        .to_string();
    // A slow call in flight, then the call that kills the server.
    let slow = post(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "echo", "arguments": {"message": "in flight"}}}),
        Some(session.clone()),
    );
    let kill = post(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "restart_service", "arguments": {"service": "db"}}}),
        Some(session.clone()),
    );
    let (slow, kill) = tokio::join!(slow, kill);
    for (id, resp) in [(1, slow), (2, kill)] {
        let answer: Value = resp.expect("answered").json().await.expect("JSON");
        assert_eq!(answer["id"], id, "{answer}");
        let msg = answer["error"]["message"].as_str().unwrap_or("");
        assert!(
            msg.contains("exited before answering"),
            "call {id}: {answer}"
        );
    }
    let gone = post(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
        Some(session.clone()),
    )
    .await
    .expect("after");
    assert_eq!(gone.status(), 404, "the dead session is gone");
    let again = post(init, None).await.expect("initialize again");
    assert_eq!(again.status(), 200);
    assert_ne!(
        again.headers()["mcp-session-id"].to_str().unwrap_or(""),
        session
    );
}
