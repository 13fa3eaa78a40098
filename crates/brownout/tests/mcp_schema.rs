//! Every message brownout makes itself is valid MCP, checked against the official JSON
//! Schemas in `crates/brownout/tests/data/mcp-schema/<version>/schema.json`.

mod common;
use brownout_core::{Engine, EngineConfig, Plan, Side, Time};
use common::*;
use serde_json::{json, Value};

/// A validator for one definition of one protocol version's schema.
fn validator(version: &str, def: &str) -> jsonschema::Validator {
    mcp_schema_validator(version, def)
}

fn engine(plan: &str) -> Engine {
    Engine::new(
        Plan::from_str_named(plan, "t.yaml").expect("plan"),
        EngineConfig::default(),
    )
}

/// Messages brownout writes: short-circuit errors, tool errors, rate limits, unknown-tool
/// answers, relay errors for dying servers, registry rewrites and list_changed.
fn brownout_made() -> Vec<(&'static str, Value)> {
    let call = |id: u64, tool: &str| tool_call(id, tool, json!({"message": "x"}));
    let mut out = Vec::new();
    let mut e = engine("faults:\n  - {kind: error, tools: [a], code: -32001, message: m, data: {why: test}}\n  - {kind: error, tools: [b], tool_error: true}\n  - {kind: rate_limit, tools: [c], rate: 0.001, burst: 1}\n  - {kind: registry, action: phantom, phantom_name: ghost}\n  - {kind: registry, action: list_changed, tools: [d]}\n");
    let reply = |v: &brownout_core::Verdict| -> Value {
        serde_json::from_slice(&v.reply[0].bytes).expect("json")
    };
    out.push((
        "error",
        reply(&e.on_message(Side::Client, "s", call(1, "a").as_bytes(), Time(0))),
    ));
    out.push((
        "tool error",
        reply(&e.on_message(Side::Client, "s", call(2, "b").as_bytes(), Time(0))),
    ));
    e.on_message(Side::Client, "s", call(3, "c").as_bytes(), Time(0));
    out.push((
        "rate limit",
        reply(&e.on_message(Side::Client, "s", call(4, "c").as_bytes(), Time(0))),
    ));
    out.push((
        "unknown tool",
        reply(&e.on_message(Side::Client, "s", call(5, "ghost").as_bytes(), Time(0))),
    ));
    e.on_message(
        Side::Client,
        "s",
        br#"{"jsonrpc":"2.0","id":6,"method":"tools/list"}"#,
        Time(0),
    );
    let v = e.on_message(Side::Server, "s", br#"{"jsonrpc":"2.0","id":6,"result":{"resultType":"complete","tools":[{"name":"x","inputSchema":{"type":"object"}}]}}"#, Time(0));
    let brownout_core::verdict::Forward::Replace(list) = v.forward else {
        panic!("list rewritten")
    };
    out.push((
        "tools/list with a phantom",
        serde_json::from_slice(&list).expect("json"),
    ));
    e.on_message(Side::Client, "s", call(7, "d").as_bytes(), Time(0));
    let v = e.on_message(
        Side::Server,
        "s",
        br#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","content":[]}}"#,
        Time(0),
    );
    out.push((
        "list_changed",
        serde_json::from_slice(&v.extra[0].bytes).expect("json"),
    ));
    e.on_message(Side::Client, "s", call(8, "z").as_bytes(), Time(0));
    let failed = e.fail_pending(
        "s",
        "the MCP server exited before answering (exit status 1)",
        Time(0),
    );
    out.push((
        "server died",
        serde_json::from_slice(&failed[0].reply).expect("json"),
    ));
    out
}

#[test]
fn brownout_made_messages_are_valid_in_every_protocol_version() {
    let msgs = brownout_made();
    assert_eq!(msgs.len(), 7);
    for version in [
        "2024-11-05",
        "2025-03-26",
        "2025-06-18",
        "2025-11-25",
        "2026-07-28",
    ] {
        let v = validator(version, "JSONRPCMessage");
        for (what, m) in &msgs {
            let errors: Vec<String> = v.iter_errors(m).map(|e| e.to_string()).collect();
            assert!(
                errors.is_empty(),
                "{version}: {what} is not a valid JSONRPCMessage: {m}\n{errors:?}"
            );
        }
    }
}

#[test]
fn brownout_made_results_match_their_result_types() {
    let msgs = brownout_made();
    let find = |name: &str| {
        msgs.iter()
            .find(|(w, _)| *w == name)
            .map(|(_, m)| m.clone())
            .expect("message")
    };
    for version in ["2025-06-18", "2025-11-25"] {
        let call_result = validator(version, "CallToolResult");
        assert!(
            call_result.is_valid(&find("tool error")["result"]),
            "{version}"
        );
        let list = validator(version, "ListToolsResult");
        assert!(
            list.is_valid(&find("tools/list with a phantom")["result"]),
            "{version}"
        );
        let note = validator(version, "ToolListChangedNotification");
        assert!(note.is_valid(&find("list_changed")), "{version}");
    }
}

#[test]
fn the_fixture_speaks_valid_mcp() {
    let mut w = Wire::spawn(&fixture());
    let v = validator("2025-11-25", "JSONRPCMessage");
    let result = validator("2025-11-25", "CallToolResult");
    w.send(INIT);
    w.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    let init = w.recv_json(5000).expect("init");
    let list = w.recv_json(5000).expect("list");
    assert!(v.is_valid(&init) && v.is_valid(&list));
    assert!(
        validator("2025-11-25", "InitializeResult").is_valid(&init["result"]),
        "{init}"
    );
    assert!(
        validator("2025-11-25", "ListToolsResult").is_valid(&list["result"]),
        "{list}"
    );
    for (i, (tool, args)) in [
        ("echo", json!({"message": "a"})),
        ("search_incidents", json!({"query": "q"})),
        ("get_incident", json!({"id": "I"})),
        ("fetch_logs", json!({"service": "s"})),
        ("restart_service", json!({"service": "s"})),
        ("echo", json!({})),
    ]
    .iter()
    .enumerate()
    {
        w.send(&tool_call(10 + i as u64, tool, args.clone()));
        let r = w.recv_json(5000).expect("answer");
        assert!(v.is_valid(&r), "{r}");
        assert!(result.is_valid(&r["result"]), "{r}");
    }
}
