//! Engine behaviour of the HTTP-level kinds and sessions: statuses, rate limits over HTTP,
//! connection modes and stream shapes, session expiry and re-initialization, idle sessions.

use super::tests::{call, engine, ok, plan};
use super::*;

fn status_of(v: &Verdict) -> Option<u16> {
    match &v.http {
        Some(crate::verdict::HttpAction::Status { code, .. }) => Some(*code),
        _ => None,
    }
}

#[test]
fn session_expiry_expires_one_session_for_good() {
    let mut e = engine("faults:\n  - {kind: session_expiry, after_calls: 2}\n");
    let note = br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#;
    for i in 0..2 {
        assert!(e
            .on_message(Side::Client, "a", &call(i, "echo"), Time(i))
            .is_pass());
    }
    let hit = e.on_message(Side::Client, "a", &call(2, "echo"), Time(3));
    assert_eq!(status_of(&hit), Some(404));
    assert_eq!(hit.forward, Forward::Drop, "the server never sees it");
    let reply: serde_json::Value = serde_json::from_slice(&hit.reply[0].bytes).expect("reply");
    assert_eq!(reply["error"]["code"], -32001);
    // Later requests and notifications of that session: 404 without a new draw.
    let later = e.on_message(Side::Client, "a", &call(9, "anything"), Time(4));
    assert_eq!(status_of(&later), Some(404));
    assert_eq!(later.forward, Forward::Drop);
    let n = e.on_message(Side::Client, "a", note, Time(5));
    assert_eq!(status_of(&n), Some(404));
    assert_eq!(n.forward, Forward::Drop);
    assert!(n.reply.is_empty(), "no JSON-RPC answer to a notification");
    // Another session is untouched until its own third call.
    assert!(e
        .on_message(Side::Client, "b", &call(1, "echo"), Time(6))
        .is_pass());
    let r = e.summary().report();
    assert_eq!(
        r.injections.len(),
        1,
        "one injection counted: {:?}",
        r.injections
    );
}

#[test]
fn rate_limit_over_http_is_429_with_retry_after() {
    let mut e = engine("faults:\n  - {kind: rate_limit, rate: 0.5, burst: 1}\n");
    assert!(e
        .on_message(Side::Client, "s", &call(1, "echo"), Time(0))
        .is_pass());
    let v = e.on_message(Side::Client, "s", &call(2, "echo"), Time(0));
    let Some(crate::verdict::HttpAction::Status { code, headers, .. }) = &v.http else {
        panic!("no HTTP status: {v:?}");
    };
    assert_eq!(*code, 429);
    // One token every 2 s: the wait is 2 s.
    assert!(
        headers.contains(&("Retry-After".to_string(), "2".to_string())),
        "{headers:?}"
    );
    assert_eq!(v.reply.len(), 1, "stdio still gets the JSON-RPC error");
}

#[test]
fn connection_modes_and_stream_shapes() {
    use crate::verdict::HttpAction;
    let mut e = engine("faults:\n  - {kind: connection, mode: refuse, tools: [a]}\n  - {kind: connection, mode: stall, tools: [b]}\n  - {kind: connection, mode: reset, tools: [c]}\n  - {kind: connection, mode: drop_stream, after_bytes: 100, tools: [d]}\n  - {kind: slow_stream, gap_ms: 50, tools: [d]}\n  - {kind: bandwidth, bytes_per_sec: 1000, tools: [d]}\n  - {kind: http_status, status: 503, tools: [e]}\n");
    let a = e.on_message(Side::Client, "s", &call(1, "a"), Time(0));
    assert_eq!(a.http, Some(HttpAction::Refuse));
    assert_eq!(a.forward, Forward::Drop);
    let b = e.on_message(Side::Client, "s", &call(2, "b"), Time(0));
    assert_eq!(b.http, Some(HttpAction::Stall));
    assert_eq!(b.forward, Forward::Drop);
    let c = e.on_message(Side::Client, "s", &call(3, "c"), Time(0));
    assert_eq!(c.http, Some(HttpAction::Reset));
    assert_eq!(
        c.forward,
        Forward::Original,
        "a reset call reaches the server"
    );
    let answer = e.on_message(Side::Server, "s", &ok(3), Time(10));
    assert_eq!(answer.forward, Forward::Drop, "and its answer is lost");
    let d = e.on_message(Side::Client, "s", &call(4, "d"), Time(0));
    let shape = d.stream.clone().expect("a stream shape");
    assert_eq!(shape.drop_after_bytes, Some(100));
    assert_eq!(shape.drop_after_events, None);
    assert_eq!(shape.event_gap, Time(50_000));
    assert_eq!(shape.bytes_per_sec, Some(1000));
    assert_eq!(d.forward, Forward::Original);
    let x = e.on_message(Side::Client, "s", &call(5, "e"), Time(0));
    assert_eq!(status_of(&x), Some(503));
}

#[test]
fn a_typo_in_an_http_kind_names_the_key() {
    let err = Plan::from_str_named("faults:\n  - {kind: http_status, statsu: 401}\n", "p.yaml")
        .expect_err("typo");
    assert!(err.to_string().contains("statsu"), "{err}");
}

#[test]
fn idle_sessions_are_forgotten_and_busy_ones_kept() {
    let config = EngineConfig {
        idle_session_ttl: Some(Time(1_000_000)),
        ..EngineConfig::default()
    };
    let mut e = Engine::new(plan("faults: []"), config);
    e.on_message(Side::Client, "idle", &call(1, "echo"), Time(0));
    e.on_message(Side::Server, "idle", &ok(1), Time(10));
    e.on_message(Side::Client, "busy", &call(1, "echo"), Time(0));
    e.on_message(Side::Server, "busy", &ok(1), Time(1_500_000));
    assert_eq!(e.session_count(), 2);
    e.expire(Time(2_000_000));
    assert_eq!(
        e.session_count(),
        1,
        "the idle session is forgotten, the busy one kept"
    );
    e.end_session("busy", Time(2_000_001));
    assert_eq!(e.session_count(), 0);
    assert_eq!(e.summary().report().calls, 2, "their calls still count");
}

fn initialize(id: u64) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#).into_bytes()
}

const INITIALIZED: &[u8] = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

#[test]
fn initializing_again_starts_an_expired_session_afresh() {
    // The stdio relay has one session key for good: a new initialize is its new session.
    let mut e = engine("faults:\n  - {kind: session_expiry, after_calls: 1}\n");
    assert!(e
        .on_message(Side::Client, "stdio", &initialize(0), Time(0))
        .is_pass());
    assert!(e
        .on_message(Side::Client, "stdio", INITIALIZED, Time(0))
        .is_pass());
    assert!(
        e.on_message(Side::Client, "stdio", &call(1, "echo"), Time(1))
            .is_pass(),
        "after_calls: 1 (the initialize is not counted)"
    );
    assert_eq!(
        status_of(&e.on_message(Side::Client, "stdio", &call(2, "echo"), Time(2))),
        Some(404)
    );
    assert_eq!(
        status_of(&e.on_message(Side::Client, "stdio", &call(3, "echo"), Time(3))),
        Some(404)
    );
    let again = e.on_message(Side::Client, "stdio", &initialize(4), Time(4));
    assert!(
        again.is_pass(),
        "the initialize reaches the server: {again:?}"
    );
    assert!(e
        .on_message(Side::Client, "stdio", INITIALIZED, Time(4))
        .is_pass());
    // Counters start again: one free call, then the session expires once more.
    assert!(e
        .on_message(Side::Client, "stdio", &call(5, "echo"), Time(5))
        .is_pass());
    assert_eq!(
        status_of(&e.on_message(Side::Client, "stdio", &call(6, "echo"), Time(6))),
        Some(404)
    );
}

#[test]
fn an_initialize_is_never_expired() {
    let mut e = engine("faults:\n  - {kind: session_expiry}\n");
    assert!(e
        .on_message(Side::Client, "s", &initialize(1), Time(0))
        .is_pass());
    let list = br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let v = e.on_message(Side::Client, "s", list, Time(1));
    assert_eq!(status_of(&v), Some(404), "every other method is looked at");
    assert_eq!(v.forward, Forward::Drop);
}

#[test]
fn an_expiry_overrides_an_earlier_short_circuit() {
    let mut e = engine("faults:\n  - {kind: error, code: -32050}\n  - {kind: session_expiry}\n");
    let v = e.on_message(Side::Client, "s", &call(1, "echo"), Time(0));
    assert_eq!(status_of(&v), Some(404));
    let reply: serde_json::Value = serde_json::from_slice(&v.reply[0].bytes).expect("reply");
    assert_eq!(reply["error"]["code"], -32001);
    assert_eq!(
        status_of(&e.on_message(Side::Client, "s", &call(2, "echo"), Time(1))),
        Some(404),
        "and the session stays expired"
    );
}

#[test]
fn http_status_answers_both_fronts() {
    let mut e = engine("faults:\n  - {kind: http_status, status: 401, headers: {WWW-Authenticate: 'Bearer realm=\"mcp\"'}}\n");
    let v = e.on_message(Side::Client, "s", &call(3, "echo"), Time(0));
    let Some(crate::verdict::HttpAction::Status { code, headers, .. }) = &v.http else {
        panic!("no HTTP status: {v:?}");
    };
    assert_eq!(*code, 401);
    assert!(headers.contains(&(
        "WWW-Authenticate".to_string(),
        "Bearer realm=\"mcp\"".to_string()
    )));
    assert_eq!(v.forward, Forward::Drop, "the server never sees it");
    let reply: serde_json::Value = serde_json::from_slice(&v.reply[0].bytes).expect("reply");
    assert_eq!(reply["id"], 3);
    assert_eq!(reply["error"]["data"]["http_status"], 401);
    assert_eq!(e.summary().report().outcomes.get("error"), Some(&1));
    assert_eq!(e.pending_count(), 0);
}

#[test]
fn retry_after_is_the_wait_rounded_up_to_a_second() {
    // One token per 2.5 s: the wait after the burst is 2.5 s, so Retry-After is 3.
    let mut e = engine("faults:\n  - {kind: rate_limit, rate: 0.4, burst: 1}\n");
    assert!(e
        .on_message(Side::Client, "s", &call(1, "echo"), Time(0))
        .is_pass());
    let v = e.on_message(Side::Client, "s", &call(2, "echo"), Time(0));
    let Some(crate::verdict::HttpAction::Status {
        code,
        headers,
        body,
    }) = &v.http
    else {
        panic!("no HTTP status: {v:?}");
    };
    assert_eq!(*code, 429);
    assert!(
        headers.contains(&("Retry-After".to_string(), "3".to_string())),
        "{headers:?}"
    );
    assert!(headers.contains(&("Content-Type".to_string(), "application/json".to_string())));
    assert_eq!(body, &v.reply[0].bytes, "the same JSON-RPC error both ways");
    let error: serde_json::Value = serde_json::from_slice(body).expect("json");
    assert_eq!(error["error"]["data"]["retry_after_ms"], 2500);
    // A wait under a second is still `Retry-After: 1`.
    let mut e = engine("faults:\n  - {kind: rate_limit, rate: 10, burst: 1}\n");
    e.on_message(Side::Client, "s", &call(1, "echo"), Time(0));
    let v = e.on_message(Side::Client, "s", &call(2, "echo"), Time(0));
    let Some(crate::verdict::HttpAction::Status { headers, .. }) = &v.http else {
        panic!("no HTTP status: {v:?}");
    };
    assert!(
        headers.contains(&("Retry-After".to_string(), "1".to_string())),
        "{headers:?}"
    );
}

#[test]
fn two_stream_faults_merge() {
    let mut e = engine("faults:\n  - {kind: bandwidth, bytes_per_sec: 1000}\n  - {kind: bandwidth, bytes_per_sec: 250}\n  - {kind: slow_stream, gap_ms: 40}\n  - {kind: slow_stream, gap_ms: 10}\n  - {kind: connection, mode: drop_stream, after_events: 5}\n  - {kind: connection, mode: drop_stream, after_events: 2, after_bytes: 900}\n");
    let v = e.on_message(Side::Client, "s", &call(1, "echo"), Time(0));
    assert_eq!(
        v.stream,
        Some(crate::verdict::StreamShape {
            event_gap: Time::from_millis(40),
            bytes_per_sec: Some(250),
            drop_after_events: Some(2),
            drop_after_bytes: Some(900),
        })
    );
    assert_eq!(v.forward, Forward::Original, "the call still goes on");
    assert_eq!(v.delay, Time::ZERO, "and stdio sees no change");
    // The answer itself is untouched (the HTTP front shapes its bytes).
    assert!(e.on_message(Side::Server, "s", &ok(1), Time(5)).is_pass());
    assert_eq!(e.summary().report().outcomes.get("ok"), Some(&1));
}
