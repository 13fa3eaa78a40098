//! Replies the engine makes, and messages it rewrites, carry the caller's id as written.

use super::*;

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
