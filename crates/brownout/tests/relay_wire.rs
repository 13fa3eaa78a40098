//! The stdio relay on the wire: bytes, order, limits, lifecycle, and the delivery faults
//! (duplicate, reorder, malformed, list_changed) as raw lines a client receives.

mod common;
use common::*;
use serde_json::{json, Value};

#[test]
fn unmodified_messages_pass_byte_for_byte_and_in_order() {
    let dir = tmp();
    let mut w = Wire::spawn(&through(dir.path(), "faults: []", &mirror()));
    let mut sent = Vec::new();
    for i in 0..200 {
        // Odd spacing, key order, unknown fields, escapes: all must survive untouched.
        let line = format!(
            r#"{{ "id" :{i},"jsonrpc":"2.0" , "method":"tools/call","params":{{"name":"echo","arguments":{{"m":"\u00e9\"{i}"}}}},"x-unknown":[1, 2.50, null]}}"#
        );
        w.send(&line);
        sent.push(line);
    }
    w.send(r#"{"jsonrpc":"2.0","method":"notifications/whatever","params":{"zz":true}}"#);
    sent.push(r#"{"jsonrpc":"2.0","method":"notifications/whatever","params":{"zz":true}}"#.into());
    let got: Vec<String> = (0..sent.len()).filter_map(|_| w.recv(5000)).collect();
    assert_eq!(got, sent);
}

#[test]
fn a_delayed_message_never_blocks_the_others() {
    let dir = tmp();
    let plan = "faults:\n  - {kind: latency, tools: [fetch_logs], added_ms: 1500}\n";
    let mut w = Wire::spawn(&through(dir.path(), plan, &fixture()));
    w.send(INIT);
    assert!(w.recv_json(5000).is_some());
    w.send(&tool_call(
        1,
        "fetch_logs",
        json!({"service": "a", "lines": 1}),
    ));
    w.send(&tool_call(2, "echo", json!({"message": "fast"})));
    let first = w.recv_json(5000).expect("an answer");
    assert_eq!(
        first["id"], 2,
        "the fast call overtakes the delayed one: {first}"
    );
    assert_eq!(w.recv_json(5000).expect("the delayed answer")["id"], 1);
}

#[test]
fn oversized_messages_get_a_clear_error_and_nothing_else_is_lost() {
    let dir = tmp();
    let mut cmd = through(dir.path(), "faults: []", &fixture());
    cmd.insert(3, "--max-message-bytes".into());
    cmd.insert(4, "300".into());
    let mut w = Wire::spawn(&cmd);
    w.send(&tool_call(9, "echo", json!({"message": "x".repeat(1000)})));
    w.send(&tool_call(10, "echo", json!({"message": "small"})));
    let e = w.recv_json(5000).expect("error");
    assert_eq!(e["id"], 9);
    assert_eq!(e["error"]["code"], -32600);
    assert!(e["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("over the limit of 300 bytes"));
    assert_eq!(
        w.recv_json(5000).expect("next")["result"]["content"][0]["text"],
        "small"
    );
    // A server answer over the limit: its caller gets the error.
    w.send(&tool_call(
        11,
        "fetch_logs",
        json!({"service": "a", "lines": 50}),
    ));
    let e = w.recv_json(5000).expect("error for the big answer");
    assert_eq!(e["id"], 11);
    assert_eq!(e["error"]["code"], -32600);
    assert!(w.stderr_text().contains("over the limit"));
}

#[test]
fn eof_from_the_client_ends_with_the_servers_status() {
    let dir = tmp();
    let server = vec![
        python(),
        "-c".into(),
        "import sys\nsys.stdin.read()\nsys.exit(3)".into(),
    ];
    let mut w = Wire::spawn(&through(dir.path(), "faults: []", &server));
    w.close_stdin();
    assert_eq!(w.wait(10).code(), Some(3));
}

#[test]
fn sigterm_stops_the_server() {
    let dir = tmp();
    let mut w = Wire::spawn(&through(dir.path(), "faults: []", &fixture()));
    w.send(INIT);
    assert!(w.recv_json(5000).is_some());
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(w.pid() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("signal");
    let status = w.wait(10);
    // A stop asked for is a success (as with `proxy http`); the server got SIGTERM.
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(
        w.stderr_text()
            .contains("the server ended (killed by SIGTERM)"),
        "{}",
        w.stderr_text()
    );
}

#[test]
fn a_bad_plan_stops_brownout_before_the_server_starts() {
    let dir = tmp();
    let marker = dir.path().join("server-started");
    let server = vec![
        python(),
        "-c".into(),
        format!("open({:?}, 'w').write('x')", marker.display().to_string()),
    ];
    let mut w = Wire::spawn(&through(
        dir.path(),
        "faults:\n  - kind: latency\n    added_ms: -5\n",
        &server,
    ));
    assert_eq!(w.wait(10).code(), Some(2));
    assert!(
        w.stderr_text()
            .contains("plan.yaml:3:15: `faults[0].added_ms`"),
        "{}",
        w.stderr_text()
    );
    assert!(!marker.exists());
    let mut cmd = through(dir.path(), "faults: []", &server);
    let i = cmd.iter().position(|a| a == "--plan").expect("--plan") + 1;
    cmd[i] = dir.path().join("missing.yaml").display().to_string();
    let mut w = Wire::spawn(&cmd);
    assert_eq!(w.wait(10).code(), Some(2));
    assert!(
        w.stderr_text().contains("cannot read plan"),
        "{}",
        w.stderr_text()
    );
    assert!(!marker.exists());
}

#[test]
fn the_summary_and_the_event_log_describe_the_run() {
    let dir = tmp();
    let plan = "faults:\n  - {id: boom, kind: error, tools: [echo], every_nth: 2}\n";
    let mut cmd = through(dir.path(), plan, &fixture());
    cmd.retain(|a| a != "--quiet");
    let mut w = Wire::spawn(&cmd);
    w.send(INIT);
    w.recv_json(5000);
    for i in 1..=4 {
        w.send(&tool_call(i, "echo", json!({"message": "x"})));
        w.recv_json(5000);
    }
    w.close_stdin();
    assert_eq!(w.wait(10).code(), Some(0));
    let err = w.stderr_text();
    assert!(err.contains("calls: 5"), "{err}");
    assert!(
        err.contains("boom") && err.contains("error") && err.contains("p99"),
        "{err}"
    );
    let ev = events(dir.path());
    assert_eq!(fault_events(&ev, "boom").len(), 2);
    let calls: Vec<&Value> = ev.iter().filter(|e| e["type"] == "call").collect();
    assert_eq!(calls.len(), 5);
    for c in &calls {
        for key in [
            "t_ms",
            "session",
            "seq",
            "method",
            "latency_ms",
            "outcome",
            "faults",
        ] {
            assert!(c.get(key).is_some(), "call event lacks {key}: {c}");
        }
    }
    assert_eq!(calls.iter().filter(|c| c["outcome"] == "error").count(), 2);
}

#[test]
fn duplicates_reorders_and_list_changed_reach_the_client() {
    let dir = tmp();
    let plan = "faults:\n  - {kind: duplicate, tools: [echo], copies: 2}\n  - {kind: reorder, tools: [get_incident]}\n  - {kind: registry, action: list_changed, tools: [fetch_logs]}\n";
    let mut w = Wire::spawn(&through(dir.path(), plan, &fixture()));
    w.send(INIT);
    w.recv_json(5000);
    w.send(&tool_call(1, "echo", json!({"message": "twice"})));
    let copies: Vec<Value> = (0..3).filter_map(|_| w.recv_json(3000)).collect();
    assert_eq!(copies.len(), 3, "the answer and two copies");
    assert!(copies.iter().all(|c| c["id"] == 1));
    w.send(&tool_call(2, "get_incident", json!({"id": "INC-1"})));
    assert!(w.recv(300).is_none(), "held behind the next message");
    w.send(&tool_call(3, "search_incidents", json!({"query": "q"})));
    let order: Vec<Value> = (0..2)
        .filter_map(|_| w.recv_json(3000))
        .map(|v| v["id"].clone())
        .collect();
    assert_eq!(order, vec![json!(3), json!(2)]);
    w.send(&tool_call(
        4,
        "fetch_logs",
        json!({"service": "a", "lines": 1}),
    ));
    let answer = w.recv_json(3000).expect("answer");
    assert_eq!(answer["id"], 4);
    assert_eq!(
        w.recv_json(3000).expect("notification")["method"],
        "notifications/tools/list_changed"
    );
}

#[test]
fn malformed_modes_break_the_wire_as_named() {
    let dir = tmp();
    let plan = "faults:\n  - {kind: malformed, mode: invalid_utf8, tools: [echo]}\n  - {kind: malformed, mode: mismatched_id, tools: [get_incident]}\n  - {kind: malformed, mode: wrong_version, tools: [search_incidents]}\n";
    let mut w = Wire::spawn(&through(dir.path(), plan, &fixture()));
    w.send(INIT);
    w.recv_json(5000);
    w.send(&tool_call(1, "echo", json!({"message": "x"})));
    assert!(
        w.recv(3000).is_none(),
        "invalid UTF-8 is not a line a UTF-8 reader accepts"
    );
    let mut w = Wire::spawn(&through(dir.path(), plan, &fixture()));
    w.send(INIT);
    w.recv_json(5000);
    w.send(&tool_call(2, "get_incident", json!({"id": "INC-1"})));
    let v = w.recv_json(3000).expect("json");
    assert_ne!(v["id"], 2, "{v}");
    w.send(&tool_call(3, "search_incidents", json!({"query": "q"})));
    let v = w.recv_json(3000).expect("json");
    assert_eq!(v["jsonrpc"], "1.0");
}

#[test]
fn notifications_and_server_requests_pass_both_ways() {
    let dir = tmp();
    let mut w = Wire::spawn(&through(dir.path(), "faults: []", &everything()));
    w.send(INIT);
    let init = w.recv_json(10_000).expect("initialize answer");
    assert_eq!(
        init["result"]["serverInfo"]["name"], "mcp-servers/everything",
        "{init}"
    );
    w.send(INITIALIZED);
    w.send(&tool_call(1, "echo", json!({"message": "hi"})));
    let mut seen = None;
    for _ in 0..20 {
        match w.recv_json(5000) {
            Some(v) if v["id"] == 1 => {
                seen = Some(v);
                break;
            }
            Some(_) => continue, // server notifications pass through too
            None => break,
        }
    }
    let v = seen.expect("answer to echo");
    assert!(
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("hi"),
        "{v}"
    );
}

#[test]
fn timed_process_faults_kill_the_server_on_schedule() {
    let dir = tmp();
    let plan = "faults:\n  - {kind: process, action: kill, signal: TERM, at_ms: 300}\n";
    let mut w = Wire::spawn(&through(dir.path(), plan, &fixture()));
    w.send(INIT);
    assert!(w.recv_json(5000).is_some());
    assert_eq!(
        w.wait(10).code(),
        Some(128 + 15),
        "the fixture was killed by SIGTERM at 300 ms"
    );
    let ev = events(dir.path());
    assert_eq!(
        ev.iter()
            .filter(|e| e["kind"] == "process" && e["method"] == "(timer)")
            .count(),
        1,
        "{ev:?}"
    );
}

/// A request whose `arguments` hold an `id` of their own, before the caller's id.
fn oversized_with_a_nested_id(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"echo","arguments":{{"id":"not-the-caller","message":"{}"}}}},"id":{id}}}"#,
        "x".repeat(1000)
    )
}

#[test]
fn oversized_errors_answer_the_top_level_id_not_a_nested_one() {
    let dir = tmp();
    // The server's answer to any line: over the limit, with a nested `id` first.
    let big = format!(
        r#"{{"jsonrpc":"2.0","result":{{"content":[{{"type":"text","id":"nested","text":"{}"}}]}},"id":5}}"#,
        "y".repeat(1000)
    );
    let server = vec![
        "sh".to_string(),
        "-c".to_string(),
        format!("while read line; do echo '{big}'; done"),
    ];
    let mut cmd = through(dir.path(), "faults: []", &server);
    cmd.insert(3, "--max-message-bytes".into());
    cmd.insert(4, "300".into());
    let mut w = Wire::spawn(&cmd);
    w.send(&oversized_with_a_nested_id(9));
    let e = w.recv_json(5000).expect("error");
    assert_eq!(e["id"], 9, "the caller, not arguments.id: {e}");
    assert_eq!(e["error"]["code"], -32600);
    w.send(r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#);
    let e = w.recv_json(5000).expect("error for the big answer");
    assert_eq!(e["id"], 5, "the caller, not result.content[0].id: {e}");
    assert_eq!(e["error"]["code"], -32600);
}

#[tokio::test(flavor = "multi_thread")]
async fn oversized_client_messages_get_an_error_with_an_upstream_too() {
    let (url, calls) = upstream::start(false).await;
    let cmd: Vec<String> = [
        brownout(),
        "proxy",
        "stdio",
        "--quiet",
        "--max-message-bytes",
        "300",
        "--upstream",
        &url,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut w = Wire::spawn(&cmd);
    w.send(&oversized_with_a_nested_id(12));
    let e = tokio::task::block_in_place(|| w.recv_json(10_000)).expect("an error, not silence");
    assert_eq!(e["id"], 12, "{e}");
    assert_eq!(e["error"]["code"], -32600);
    assert!(e["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("over the limit of 300 bytes"));
    assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 0);
}

#[test]
fn a_timeout_that_drops_after_a_hold_holds_first() {
    let dir = tmp();
    let plan = "faults:\n  - {id: hold, kind: timeout, tools: [echo], hold_ms: 700, then: drop}\n";
    let mut w = Wire::spawn(&through(dir.path(), plan, &fixture()));
    w.send(INIT);
    assert!(w.recv_json(5000).is_some());
    w.send(&tool_call(1, "echo", json!({"message": "held"})));
    assert!(w.recv(1500).is_none(), "held, then dropped: never answered");
    w.send(&tool_call(2, "get_incident", json!({"id": "INC-1"})));
    assert_eq!(w.recv_json(5000).expect("others pass")["id"], 2);
    w.close_stdin();
    assert_eq!(w.wait(10).code(), Some(0));
    let ev = events(dir.path());
    let f = fault_events(&ev, "hold");
    assert_eq!(f.len(), 1, "{ev:?}");
    assert!(f[0]["action"]
        .as_str()
        .unwrap_or_default()
        .contains("held 700ms, then dropped"));
    let call = ev
        .iter()
        .find(|e| e["type"] == "call" && e["id"] == 1)
        .expect("the call event");
    assert_eq!(call["outcome"], "dropped", "{call}");
    let waited = call["latency_ms"].as_f64().unwrap_or_default();
    assert!(
        waited >= 700.0,
        "the client waited the hold for nothing: {call}"
    );
    let at = call["t_ms"].as_f64().unwrap_or_default();
    let hit = f[0]["t_ms"].as_f64().unwrap_or_default();
    assert!(
        at >= hit + 700.0,
        "given up when the hold ended: {call} {}",
        f[0]
    );
}

/// An answer held or delayed past the end of the run never reached the client: it is
/// counted unanswered at the end, not "ok" at a time after brownout stopped.
#[test]
fn an_answer_held_past_the_end_of_the_run_is_unanswered() {
    let dir = tmp();
    let plan =
        "faults:\n  - {id: hold, kind: timeout, tools: [echo], hold_ms: 10000, then: deliver}\n";
    let mut cmd = through(dir.path(), plan, &fixture());
    cmd.retain(|a| a != "--quiet");
    let mut w = Wire::spawn(&cmd);
    w.send(INIT);
    assert!(w.recv_json(5000).is_some());
    w.send(&tool_call(1, "echo", json!({"message": "held"})));
    assert!(w.recv(500).is_none(), "held");
    w.close_stdin();
    assert_eq!(w.wait(10).code(), Some(0));
    let ev = events(dir.path());
    let call = ev
        .iter()
        .find(|e| e["type"] == "call" && e["id"] == 1)
        .unwrap_or_else(|| panic!("the call event: {ev:?}"));
    assert_eq!(call["outcome"], "unanswered", "{call}");
    let at = call["t_ms"].as_f64().unwrap_or_default();
    assert!(at < 10_000.0, "recorded when the run ended: {call}");
    let err = w.stderr_text();
    assert!(err.contains("unanswered 1"), "{err}");
    assert!(!err.contains("ok 2"), "{err}");
}

/// Run `calls` echo calls through `cmd`; returns (the ids answered with an error, stderr).
fn echo_session(cmd: &[String], calls: u64) -> (Vec<u64>, String) {
    let mut w = Wire::spawn(cmd);
    w.send(INIT);
    assert!(w.recv_json(5000).is_some());
    w.send(r#"{"jsonrpc":"2.0","id":"l","method":"tools/list"}"#);
    assert!(w.recv_json(5000).is_some());
    let mut failed = Vec::new();
    for i in 1..=calls {
        w.send(&tool_call(i, "echo", json!({"message": "x"})));
        let v = w.recv_json(5000).expect("answer");
        if v.get("error").is_some() {
            failed.push(i);
        }
    }
    w.close_stdin();
    assert_eq!(w.wait(10).code(), Some(0));
    (failed, w.stderr_text())
}

const COIN: &str = "seed: SEED\nfaults:\n  - {id: coin, kind: error, tools: [echo], probability: 0.5}\n  - {id: never, kind: latency, tools: [nothing_has_this_name], added_ms: 5}\n";

#[test]
fn seed_on_the_command_line_overrides_the_plans() {
    let dir = tmp();
    let (with_7, _) = echo_session(
        &through(dir.path(), &COIN.replace("SEED", "7"), &fixture()),
        30,
    );
    let (with_1, _) = echo_session(
        &through(dir.path(), &COIN.replace("SEED", "1"), &fixture()),
        30,
    );
    assert_ne!(with_7, with_1, "the two seeds draw differently");
    let mut cmd = through(dir.path(), &COIN.replace("SEED", "1"), &fixture());
    cmd.insert(3, "--seed".into());
    cmd.insert(4, "7".into());
    let (overridden, _) = echo_session(&cmd, 30);
    assert_eq!(overridden, with_7, "--seed 7 replays the seed-7 run");
}

#[test]
fn the_summary_has_tool_lines_protocol_requests_apart_and_every_fault() {
    let dir = tmp();
    let mut cmd = through(dir.path(), &COIN.replace("SEED", "7"), &fixture());
    cmd.retain(|a| a != "--quiet");
    let (failed, err) = echo_session(&cmd, 10);
    assert!(
        err.contains("calls: 12 (10 tool calls + 2 protocol requests: initialize 1, tools/list 1)"),
        "{err}"
    );
    assert!(err.contains("tools:\n  echo "), "{err}");
    let never = err
        .lines()
        .find(|l| l.trim_start().starts_with("never"))
        .unwrap_or_else(|| panic!("every fault is listed: {err}"));
    assert!(
        never.contains("latency") && never.trim_end().ends_with(" 0"),
        "{never}"
    );

    let mut cmd = through(dir.path(), &COIN.replace("SEED", "7"), &fixture());
    cmd.retain(|a| a != "--quiet");
    cmd.insert(3, "--json".into());
    let (_, err) = echo_session(&cmd, 10);
    let last = err.lines().last().unwrap_or_default();
    let v: Value = serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {err}"));
    let s = &v["summary"];
    assert_eq!(s["calls"], 12, "{s}");
    assert_eq!(s["tool_calls"], 10, "{s}");
    assert_eq!(s["methods"]["initialize"], 1, "{s}");
    assert_eq!(s["tools"]["echo"]["calls"], 10, "{s}");
    assert_eq!(s["tools"]["echo"]["outcomes"]["error"], failed.len(), "{s}");
    assert_eq!(s["injections"]["coin"]["count"], failed.len(), "{s}");
    assert_eq!(s["injections"]["never"]["count"], 0, "{s}");
    assert!(
        !err.contains("brownout summary"),
        "JSON instead of text: {err}"
    );
}

#[test]
fn a_fault_that_matches_no_advertised_tool_is_warned_about_after_tools_list() {
    let dir = tmp();
    let plan = "faults:\n  - {id: typo, kind: latency, tools: [fetch_log], added_ms: 5}\n  - {id: fine, kind: error, tools: ['fetch_*'], probability: 0}\n";
    let mut cmd = through(dir.path(), plan, &fixture());
    cmd.retain(|a| a != "--quiet");
    let (_, err) = echo_session(&cmd, 1);
    let warning = err
        .lines()
        .find(|l| l.contains("warning: fault `typo`"))
        .unwrap_or_else(|| panic!("no warning: {err}"));
    assert!(
        warning.contains("matches none of the 5 tools the server advertises")
            && warning.contains("did you mean `fetch_logs`?"),
        "{warning}"
    );
    assert!(!err.contains("fault `fine`"), "{err}");
    let ev = events(dir.path());
    let cov: Vec<&Value> = ev.iter().filter(|e| e["type"] == "coverage").collect();
    assert_eq!(cov.len(), 1, "{ev:?}");
    assert_eq!(cov[0]["fault"], "typo");
    assert_eq!(cov[0]["did_you_mean"], "fetch_logs");
    // The summary lists both, never injected.
    assert!(
        err.lines()
            .any(|l| l.trim_start().starts_with("typo") && l.trim_end().ends_with(" 0")),
        "{err}"
    );
}
