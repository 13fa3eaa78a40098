//! Ids: replies the engine makes, and messages it rewrites, carry the caller's id as
//! written; an unnamed fault's default id, and so its decisions, do not move when other
//! faults come and go.

use super::*;
use crate::event::Event;
use proptest::prelude::*;

fn plan(yaml: &str) -> Plan {
    Plan::from_str_named(yaml, "test.yaml").unwrap_or_else(|e| panic!("{e}"))
}

const IDS: [&str; 5] = [
    "1e2",
    "12345678901234567890123",
    "-0",
    r#""a\"b\\c\u00e9""#,
    r#""\u0031""#,
];

fn call(raw_id: &str) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":{raw_id},"method":"tools/call","params":{{"name":"echo","arguments":{{}}}}}}"#).into_bytes()
}

/// The raw text of the top-level `id` of a reply (for numbers), or its decoded value.
fn id_text(reply: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct R<'a> {
        #[serde(borrow)]
        id: &'a RawValue,
    }
    let r: R<'_> = serde_json::from_slice(reply).unwrap_or_else(|e| panic!("{e}: {reply:?}"));
    r.id.get().to_string()
}

fn same_id(sent: &str, got: &str) {
    if sent.starts_with('"') {
        let a: String = serde_json::from_str(sent).expect("string id");
        let b: String = serde_json::from_str(got).expect("string id back");
        assert_eq!(a, b, "string id {sent} came back {got}");
    } else {
        assert_eq!(sent, got, "numeric id came back rewritten");
    }
}

fn short_circuit(yaml: &str, calls: usize) {
    for raw in IDS {
        let mut e = Engine::new(plan(yaml), EngineConfig::default());
        let mut reply = None;
        for _ in 0..calls {
            let v = e.on_message(Side::Client, "s", &call(raw), Time(0));
            reply = v.reply.first().map(|o| o.bytes.clone());
        }
        let reply = reply.unwrap_or_else(|| panic!("no short-circuit for {yaml}"));
        same_id(raw, &id_text(&reply));
    }
}

#[test]
fn injected_errors_keep_the_id_text() {
    short_circuit("faults:\n  - kind: error\n", 1);
    short_circuit("faults:\n  - kind: error\n    tool_error: true\n", 1);
}

#[test]
fn rate_limit_answers_keep_the_id_text() {
    short_circuit(
        "faults:\n  - kind: rate_limit\n    rate: 0\n    burst: 1\n",
        2,
    );
}

#[test]
fn expired_sessions_keep_the_id_text() {
    short_circuit("faults:\n  - kind: session_expiry\n", 1);
    // The second call finds the session expired already.
    short_circuit("faults:\n  - kind: session_expiry\n", 2);
}

#[test]
fn other_short_circuits_keep_the_id_text() {
    short_circuit("faults:\n  - kind: http_status\n", 1);
    short_circuit("faults:\n  - kind: connection\n    mode: refuse\n", 1);
    short_circuit(
        "faults:\n  - kind: registry\n    action: remove\n    tools: [echo]\n",
        1,
    );
}

#[test]
fn rewritten_responses_keep_the_id_text() {
    for yaml in [
        "faults:\n  - kind: error\n    phase: response\n",
        "faults:\n  - kind: schema_drift\n",
        "faults:\n  - kind: malformed\n    mode: wrong_version\n",
    ] {
        for raw in IDS {
            let mut e = Engine::new(plan(yaml), EngineConfig::default());
            let _ = e.on_message(Side::Client, "s", &call(raw), Time(0));
            let answer = format!(
                r#"{{"jsonrpc":"2.0","id":{raw},"result":{{"content":[{{"type":"text","text":"{{\"a\":1}}"}}],"structuredContent":{{"a":1,"b":"x"}}}}}}"#
            );
            let v = e.on_message(Side::Server, "s", answer.as_bytes(), Time(5));
            let Forward::Replace(out) = &v.forward else {
                panic!("{yaml}: not rewritten: {v:?}");
            };
            same_id(raw, &id_text(out));
        }
    }
}

#[test]
fn failed_calls_keep_the_id_text() {
    for raw in IDS {
        let mut e = Engine::new(plan("faults: []"), EngineConfig::default());
        let _ = e.on_message(Side::Client, "s", &call(raw), Time(0));
        let failed = e.fail_pending("s", "the server exited", Time(1));
        assert_eq!(failed.len(), 1);
        same_id(raw, &id_text(&failed[0].reply));
    }
}

/// A fault that never short-circuits, so it cannot hide the target's decisions.
fn other(kind: u8, n: u32) -> String {
    match kind % 3 {
        0 => format!(
            "  - kind: latency\n    added_ms: {}\n    probability: 0.5\n",
            10 + n
        ),
        1 => format!("  - kind: duplicate\n    copies: {}\n", 1 + n % 5),
        _ => format!("  - kind: reorder\n    max_hold_ms: {n}\n"),
    }
}

const TARGET: &str = "  - kind: latency\n    added_ms: 7\n    probability: 0.5\n";

/// The target's id and the calls (seq) it hit, over 60 calls in two sessions.
fn target_run(before: &[(u8, u32)], after: &[(u8, u32)]) -> (String, Vec<(String, u64)>) {
    let mut text = String::from("seed: 9\nfaults:\n");
    before
        .iter()
        .for_each(|(k, n)| text.push_str(&other(*k, *n)));
    text.push_str(TARGET);
    after
        .iter()
        .for_each(|(k, n)| text.push_str(&other(*k, *n)));
    let mut e = Engine::new(plan(&text), EngineConfig::default());
    let id = e.plan().faults[before.len()].id.clone();
    for i in 0..60u64 {
        let s = if i % 2 == 0 { "a" } else { "b" };
        let c = format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"echo"}}}}"#
        );
        let _ = e.on_message(Side::Client, s, c.as_bytes(), Time(i));
        let r = format!(r#"{{"jsonrpc":"2.0","id":{i},"result":{{}}}}"#);
        let _ = e.on_message(Side::Server, s, r.as_bytes(), Time(i + 1));
    }
    let hits = e
        .drain_events()
        .filter_map(|ev| match ev {
            Event::Fault(f) if f.fault == id => Some((f.session, f.seq)),
            _ => None,
        })
        .collect();
    (id, hits)
}

proptest! {
    #[test]
    fn other_faults_never_move_an_unnamed_fault(
        before in proptest::collection::vec((any::<u8>(), 0u32..500), 0..6),
        after in proptest::collection::vec((any::<u8>(), 0u32..500), 0..6),
    ) {
        let alone = target_run(&[], &[]);
        prop_assert!(!alone.1.is_empty(), "the target fires sometimes");
        prop_assert_eq!(target_run(&before, &after), alone);
    }
}

#[test]
fn two_identical_unnamed_faults_coexist_in_order() {
    let text = format!("faults:\n{TARGET}{TARGET}");
    let p = plan(&text);
    assert_eq!(p.faults[1].id, format!("{}-2", p.faults[0].id));
    assert_ne!(
        p.faults[0].id_hash, p.faults[1].id_hash,
        "independent draws"
    );
}
