//! `brownout proxy http -- CMD`: a stdio server per HTTP session. Answers reach the POST
//! that asked and only it (whatever a fault did to their bytes), every answer stream ends,
//! sessions end with their process (DELETE, idle), and timed process faults are done.

#[path = "common/child.rs"]
mod child;
mod common;

use child::{call, Session};
use common::{fixture, http::plan_file, tmp};
use serde_json::{json, Value};
use std::time::Duration;

fn args(plan: Option<String>, server: Vec<String>, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    if let Some(p) = plan {
        a.extend(["--plan".to_string(), p]);
    }
    a.push("--".into());
    a.extend(server);
    a
}

fn start(a: &[String]) -> (common::http::Guard, String) {
    let argv: Vec<&str> = a.iter().map(String::as_str).collect();
    common::http::brownout_http(&argv)
}

/// The ids a list of messages (or batches) answers.
fn ids(messages: &[Value]) -> Vec<i64> {
    let mut out: Vec<i64> = messages
        .iter()
        .flat_map(|m| match m {
            Value::Array(items) => items.clone(),
            m => vec![m.clone()],
        })
        .filter_map(|m| m["id"].as_i64())
        .collect();
    out.sort_unstable();
    out
}

/// A `malformed` answer (its id cut away) still goes to the POST that asked, and to no
/// other caller; the caller is not left hanging.
#[tokio::test]
async fn a_malformed_answer_reaches_its_own_caller_only() {
    let dir = tmp();
    let plan = plan_file(
        dir.path(),
        "faults:\n  - {id: broken, kind: malformed, mode: truncate, tools: [echo]}\n  - {id: slow, kind: latency, direction: to_server, added_ms: 1500, tools: [get_incident]}\n",
    );
    let (_relay, url, admin) = child::relay_with_admin(&args(Some(plan), fixture(), &[]));
    let s = Session::start(&url).await;
    // B waits (SSE) while A's broken answer comes back.
    let b = s.send(call(2, "get_incident", json!({"id": "INC-1"})), true);
    let a = async {
        child::wait_pending(&admin, 1).await;
        s.post(call(1, "echo", json!({"message": "hi"})), false, 20)
            .await
    };
    let (b, a) = tokio::join!(async { child::read(b.await, 30).await }, a);
    assert!(a.ended, "the caller of the broken answer hangs: {a:?}");
    assert_eq!(a.status, 200);
    assert!(!a.raw.is_empty(), "the broken answer is delivered: {a:?}");
    assert!(
        serde_json::from_slice::<Value>(&a.raw).is_err(),
        "the answer is the broken bytes: {a:?}"
    );
    assert!(b.ended, "{b:?}");
    assert_eq!(
        ids(&b.messages),
        vec![2],
        "B gets its answer and nothing else: {b:?}"
    );
    assert!(
        b.messages.iter().all(Value::is_object),
        "B got someone else's broken answer: {b:?}"
    );
}

/// A call the engine answers in the server's place (`error` short-circuit) ends its SSE
/// stream, and leaves no route behind (`/status` counts them).
#[tokio::test]
async fn an_error_short_circuit_ends_the_stream_and_leaves_no_route() {
    let dir = tmp();
    let plan = plan_file(
        dir.path(),
        "faults:\n  - {id: fail, kind: error, tools: [echo]}\n",
    );
    let (_relay, url, admin) = child::relay_with_admin(&args(Some(plan), fixture(), &[]));
    let s = Session::start(&url).await;
    let sse = s
        .post(call(1, "echo", json!({"message": "x"})), true, 20)
        .await;
    assert!(
        sse.ended,
        "the SSE stream of a short-circuited call never ends: {sse:?}"
    );
    assert_eq!(ids(&sse.messages), vec![1], "{sse:?}");
    assert!(sse.messages[0]["error"].is_object(), "{sse:?}");
    let js = s
        .post(call(2, "echo", json!({"message": "x"})), false, 20)
        .await;
    assert!(js.ended && js.messages[0]["error"].is_object(), "{js:?}");
    // The same ids again: nothing of the first calls is in flight.
    let again = s
        .post(call(1, "echo", json!({"message": "x"})), false, 20)
        .await;
    assert_eq!(again.messages[0]["error"]["code"], -32603, "{again:?}");
    let status = child::status(&admin).await;
    assert_eq!(status["back"]["routes"], 0, "{status}");
    assert_eq!(status["back"]["processes"], 1, "{status}");
}

/// A batch's SSE stream ends once every request of the batch is answered.
#[tokio::test]
async fn a_batch_stream_ends_when_every_request_is_answered() {
    let (_relay, url) = start(&args(None, fixture(), &[]));
    let s = Session::start(&url).await;
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        call(2, "echo", json!({"message": "b"})),
    ]);
    let a = s.post(batch, true, 20).await;
    assert!(a.ended, "the batch's stream never ends: {a:?}");
    assert_eq!(ids(&a.messages), vec![1, 2], "{a:?}");
}

/// Two requests with one id in flight at once in a session: the first gets its own
/// answer, the second is refused with `-32600` (never the other's answer, never a hang).
#[tokio::test]
async fn a_second_request_with_an_id_in_flight_is_refused() {
    let (_relay, url, admin) = child::relay_with_admin(&args(
        None,
        [fixture(), vec!["--delay-ms".into(), "1000".into()]].concat(),
        &[],
    ));
    let s = Session::start(&url).await;
    let first = s.post(call(7, "echo", json!({"message": "first"})), false, 20);
    let second = async {
        child::wait_pending(&admin, 1).await;
        s.post(call(7, "echo", json!({"message": "second"})), false, 20)
            .await
    };
    let (first, second) = tokio::join!(first, second);
    assert!(first.ended, "{first:?}");
    let text = first.messages[0]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(text.contains("first"), "{first:?}");
    assert_eq!(second.messages[0]["error"]["code"], -32600, "{second:?}");
    assert_eq!(second.messages[0]["id"], 7, "{second:?}");
    // Once answered, the id is free again.
    let third = s
        .post(call(7, "echo", json!({"message": "third"})), false, 20)
        .await;
    assert!(third.messages[0]["result"].is_object(), "{third:?}");
}

/// DELETE stops the session's server even when it ignores SIGTERM (TERM, then KILL).
#[tokio::test]
async fn delete_stops_a_server_that_ignores_sigterm() {
    let dir = tmp();
    let (_relay, url) = start(&args(None, child::stubborn(dir.path()), &[]));
    let s = Session::start(&url).await;
    let pid = child::pids(dir.path(), 1)[0];
    assert!(child::alive(pid));
    assert_eq!(s.delete().await, 200);
    assert!(
        child::eventually(20, || !child::alive(pid)).await,
        "the server {pid} outlived its session"
    );
    assert!(child::terms(dir.path()) >= 1, "SIGTERM came first");
}

/// A session abandoned without DELETE is ended after `--session-idle` seconds, and its
/// server is stopped.
#[tokio::test]
async fn an_abandoned_session_is_reaped() {
    let dir = tmp();
    let (relay, url) = start(&args(
        None,
        child::stubborn(dir.path()),
        &["--session-idle", "1"],
    ));
    let s = Session::start(&url).await;
    let pid = child::pids(dir.path(), 1)[0];
    assert!(
        child::eventually(30, || !child::alive(pid)).await,
        "the abandoned session's server {pid} is still there"
    );
    let r = s.send(call(1, "echo", json!({})), false).await;
    assert_eq!(r.status(), 404);
    assert!(
        relay.stderr_text().contains("idle"),
        "{}",
        relay.stderr_text()
    );
}

/// A timed process fault (`at_ms`) is done to the session's server, not only counted.
#[tokio::test]
async fn a_timed_process_fault_signals_the_session_server() {
    let dir = tmp();
    let plan = plan_file(
        dir.path(),
        "faults:\n  - {id: term, kind: process, action: kill, signal: TERM, at_ms: 1500}\n",
    );
    let (_relay, url) = start(&args(Some(plan), child::stubborn(dir.path()), &[]));
    let _s = Session::start(&url).await;
    assert!(
        child::eventually(30, || child::terms(dir.path()) >= 1).await,
        "the server never got the timed SIGTERM"
    );
}

/// The same against a real peer (server-everything over stdio): a broken answer reaches
/// only its caller, a short-circuited call's SSE stream ends, and no route is left.
#[tokio::test]
async fn answers_reach_their_callers_with_server_everything() {
    let dir = tmp();
    let plan = plan_file(
        dir.path(),
        "faults:\n  - {id: broken, kind: malformed, mode: truncate, tools: [echo]}\n  - {id: slow, kind: latency, direction: to_server, added_ms: 1500, tools: [get-sum]}\n  - {id: fail, kind: error, tools: [get-env]}\n",
    );
    let (_relay, url, admin) =
        child::relay_with_admin(&args(Some(plan), common::everything(), &[]));
    let s = Session::start(&url).await;
    let b = s.send(call(2, "get-sum", json!({"a": 1, "b": 2})), true);
    let a = async {
        child::wait_pending(&admin, 1).await;
        s.post(call(1, "echo", json!({"message": "hi"})), true, 20)
            .await
    };
    let (b, a) = tokio::join!(async { child::read(b.await, 30).await }, a);
    assert!(a.ended, "{a:?}");
    assert_eq!(a.messages.len(), 1, "{a:?}");
    assert!(a.messages[0].is_string(), "A gets the broken answer: {a:?}");
    assert!(b.ended, "{b:?}");
    assert_eq!(
        ids(&b.messages),
        vec![2],
        "B gets its answer and nothing else: {b:?}"
    );
    let c = s.post(call(3, "get-env", json!({})), true, 20).await;
    assert!(
        c.ended,
        "the short-circuited call's stream never ends: {c:?}"
    );
    assert!(c.messages[0]["error"].is_object(), "{c:?}");
    let status = child::status(&admin).await;
    assert_eq!(status["back"]["routes"], 0, "{status}");
}

/// A request a `malformed` fault made unreadable: the server's error (with a null id)
/// reaches the POST that sent it; the JSON caller is not left hanging.
#[tokio::test]
async fn the_error_for_an_unreadable_request_reaches_its_caller() {
    let dir = tmp();
    let plan = plan_file(
        dir.path(),
        "faults:\n  - {id: broken, kind: malformed, mode: truncate, direction: to_server, tools: [echo]}\n",
    );
    let (_relay, url) = start(&args(Some(plan), fixture(), &[]));
    let s = Session::start(&url).await;
    let a = s
        .post(call(1, "echo", json!({"message": "hi"})), false, 20)
        .await;
    assert!(a.ended, "the caller of an unreadable request hangs: {a:?}");
    assert_eq!(a.messages[0]["error"]["code"], -32700, "{a:?}");
    let b = s
        .post(
            call(2, "search_incidents", json!({"query": "db"})),
            false,
            20,
        )
        .await;
    assert!(b.messages[0]["result"].is_object(), "{b:?}");
}

/// A server that rewrites a numeric id's text (Python's json answers `1e2` as `100.0`)
/// still answers the call that asked, and the route ends: ids compare by value.
#[tokio::test]
async fn an_id_the_server_rewrites_still_reaches_its_caller() {
    let dir = tmp();
    let (_relay, url) = start(&args(None, child::stubborn(dir.path()), &[]));
    let s = Session::start(&url).await;
    let send = s
        .http
        .post(&s.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &s.id)
        .header("mcp-protocol-version", "2025-11-25")
        .body(r#"{"jsonrpc":"2.0","id":1e2,"method":"tools/list"}"#)
        .send();
    let resp = tokio::time::timeout(Duration::from_secs(20), send)
        .await
        .expect("an answer, not a hang")
        .expect("POST");
    let a = child::read(resp, 20).await;
    assert_eq!(a.status, 200);
    assert!(a.ended, "the answer ends");
    assert_eq!(a.messages.len(), 1, "{:?}", a.messages);
    assert_eq!(
        a.messages[0]["id"].as_f64(),
        Some(100.0),
        "{:?}",
        a.messages
    );
}

/// An `initialize` a fault refuses never reached its server: the session it would have made
/// ends at once, so refused clients cannot pile up processes until `--max-sessions`.
#[tokio::test]
async fn a_refused_initialize_leaves_no_process_behind() {
    let dir = tmp();
    let plan = plan_file(
        dir.path(),
        "faults:\n  - {id: refuse, kind: connection, mode: refuse, methods: [\"*\"]}\n",
    );
    let (_relay, url, admin) =
        child::relay_with_admin(&args(Some(plan), fixture(), &["--max-sessions", "3"]));
    let http = reqwest::Client::new();
    for _ in 0..6 {
        let r = http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(child::initialize(0).to_string())
            .send()
            .await;
        assert!(
            r.is_err(),
            "refused: the connection closes unanswered: {r:?}"
        );
    }
    // The processes end a moment later (SIGTERM, then the grace period).
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let status = child::status(&admin).await;
        if status["back"]["processes"] == 0 && status["sessions"] == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "refused sessions still hold processes: {status}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
