//! Taint tracking through the engine: a corrupted value passed on is a propagation, a
//! re-fetch is noticing, silence is unobserved, and a run without faults finds nothing.

use super::*;
use crate::event::{Event, TaintEvent};
use serde_json::{json, Value};

pub(super) fn engine(faults: &str) -> Engine {
    let yaml = format!("seed: 3\nfaults:\n{faults}");
    let plan = Plan::from_str_named(&yaml, "t.yaml").unwrap_or_else(|e| panic!("{e}"));
    Engine::new(plan, EngineConfig::default())
}

const CORRUPT: &str = "  - {kind: corrupt, tools: [get_incident], path: /service}\n";

/// Call `tool` with `args`, answered with structured content `sc`; what the client got.
pub(super) fn call(e: &mut Engine, s: &str, id: u64, tool: &str, args: Value, sc: Value) -> Value {
    let req = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                     "params": {"name": tool, "arguments": args}});
    let t = Time::from_millis(id * 100);
    e.on_message(
        Side::Client,
        s,
        &serde_json::to_vec(&req).unwrap_or_default(),
        t,
    );
    let resp = json!({"jsonrpc": "2.0", "id": id, "result": {
        "content": [{"type": "text", "text": sc.to_string()}], "structuredContent": sc}});
    let bytes = serde_json::to_vec(&resp).unwrap_or_default();
    let v = e.on_message(Side::Server, s, &bytes, t + Time(10));
    let out = match v.forward {
        crate::verdict::Forward::Replace(b) => b,
        _ => bytes,
    };
    serde_json::from_slice::<Value>(&out).unwrap_or(Value::Null)["result"]["structuredContent"]
        .clone()
}

pub(super) fn incident(n: u64) -> Value {
    json!({"id": format!("INC-{n}"), "service": format!("svc-{n}-api"), "title": "latency"})
}

pub(super) fn taints(e: &mut Engine) -> Vec<TaintEvent> {
    e.drain_events()
        .filter_map(|ev| match ev {
            Event::Taint(t) => Some(t),
            _ => None,
        })
        .collect()
}

#[test]
fn a_trusting_agent_propagates_every_corrupted_value() {
    let mut e = engine(CORRUPT);
    for n in 1..=50 {
        let got = call(
            &mut e,
            "s",
            n * 2,
            "get_incident",
            json!({"id": format!("INC-{n}")}),
            incident(n),
        );
        assert_ne!(got["service"], incident(n)["service"]);
        call(
            &mut e,
            "s",
            n * 2 + 1,
            "restart_service",
            json!({"service": got["service"]}),
            json!({"ok": true}),
        );
    }
    let s = e.summary().silent();
    assert_eq!((s.altered, s.propagated, s.noticed), (50, 50, 0), "{s:?}");
    let ev = taints(&mut e);
    let p = ev.iter().find(|t| t.class == "propagated").cloned();
    let p = p.unwrap_or_else(|| panic!("no propagated event"));
    assert_eq!(
        (p.from_tool.as_str(), p.to_tool.as_deref()),
        ("get_incident", Some("restart_service"))
    );
    assert_eq!(
        (p.from_pointer.as_deref(), p.to_pointer.as_deref()),
        (Some("/structuredContent/service"), Some("/service"))
    );
    assert!((s.silent_rate - 1.0).abs() < 1e-9);
}

#[test]
fn without_faults_nothing_is_tainted_and_the_untouched_value_is_not_a_finding() {
    let mut e = engine("  []\n");
    for n in 1..=20 {
        let got = call(
            &mut e,
            "s",
            n * 2,
            "get_incident",
            json!({"id": n}),
            incident(n),
        );
        call(
            &mut e,
            "s",
            n * 2 + 1,
            "restart_service",
            json!({"service": got["service"]}),
            json!({}),
        );
    }
    assert_eq!(e.summary().silent().altered, 0);
    assert!(taints(&mut e).is_empty());
}

#[test]
fn a_re_fetch_is_noticed_and_silence_goes_unobserved_after_the_window() {
    let mut e = engine(CORRUPT);
    let args = json!({"id": "INC-7"});
    call(&mut e, "s", 1, "get_incident", args.clone(), incident(7));
    call(&mut e, "s", 2, "get_incident", args, incident(7));
    // A second session ignores its corrupted result.
    call(
        &mut e,
        "t",
        3,
        "get_incident",
        json!({"id": "INC-8"}),
        incident(8),
    );
    e.on_message(
        Side::Client,
        "t",
        br#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#,
        Time::from_millis(120_000),
    );
    // Session `s` said nothing since: the periodic sweep closes its taint.
    e.expire(Time::from_millis(120_000));
    let s = e.summary().silent();
    assert_eq!((s.noticed, s.unobserved, s.propagated), (1, 2, 0), "{s:?}");
}

#[test]
fn taints_are_per_session() {
    let mut e = engine(CORRUPT);
    let got = call(
        &mut e,
        "a",
        1,
        "get_incident",
        json!({"id": 1}),
        incident(1),
    );
    call(
        &mut e,
        "b",
        2,
        "restart_service",
        json!({"service": got["service"]}),
        json!({}),
    );
    assert_eq!(e.summary().silent().propagated, 0);
}

#[test]
fn cancellation_is_noticing_and_finish_closes_what_is_left() {
    let mut e = engine(CORRUPT);
    call(
        &mut e,
        "s",
        1,
        "get_incident",
        json!({"id": 1}),
        incident(1),
    );
    // A cancel of a request nobody has in flight says nothing.
    let cancel = |id: u64| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#
        )
    };
    e.on_message(
        Side::Client,
        "s",
        cancel(99).as_bytes(),
        Time::from_millis(250),
    );
    assert_eq!(e.summary().silent().noticed, 0);
    // The agent starts something after the changed result, then gives it up: noticed.
    let req = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"search","arguments":{}}}"#;
    e.on_message(Side::Client, "s", req, Time::from_millis(260));
    e.on_message(
        Side::Client,
        "s",
        cancel(5).as_bytes(),
        Time::from_millis(300),
    );
    call(
        &mut e,
        "u",
        2,
        "get_incident",
        json!({"id": 2}),
        incident(2),
    );
    e.finish(Time::from_millis(400));
    let s = e.summary().silent();
    assert_eq!(
        (s.altered, s.noticed, s.unobserved, s.pending),
        (2, 1, 1, 0),
        "{s:?}"
    );
}

#[test]
fn an_agent_that_calls_with_a_stale_schema_s_renamed_parameter_acted_on_it() {
    let mut e = engine("  - {kind: registry, action: stale_schema, tools: [restart_service]}\n");
    let list = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"restart_service","inputSchema":{"type":"object","properties":{"service":{"type":"string"}}}}]}}"#;
    e.on_message(
        Side::Client,
        "s",
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        Time(1),
    );
    let v = e.on_message(Side::Server, "s", list, Time(2));
    let got: Value = match v.forward {
        crate::verdict::Forward::Replace(b) => serde_json::from_slice(&b).unwrap_or_default(),
        _ => Value::Null,
    };
    let props = got["result"]["tools"][0]["inputSchema"]["properties"].clone();
    let renamed = props
        .as_object()
        .and_then(|m| m.keys().next().cloned())
        .unwrap_or_default();
    assert_ne!(renamed, "service", "the schema went stale: {got}");
    call(
        &mut e,
        "s",
        2,
        "restart_service",
        json!({renamed.clone(): "checkout"}),
        json!({}),
    );
    let s = e.summary().silent();
    assert_eq!((s.altered, s.propagated), (1, 1), "{s:?}");
    let ev = taints(&mut e);
    let p = ev
        .iter()
        .find(|t| t.class == "propagated")
        .cloned()
        .unwrap_or_else(|| panic!("{ev:?}"));
    assert_eq!(p.from_tool, "tools/list");
    assert_eq!(
        p.to_pointer.as_deref(),
        Some(format!("/{renamed}").as_str())
    );
}

#[test]
fn a_held_changed_result_taints_only_once_the_client_gets_it() {
    let plan = "  - {kind: corrupt, tools: [get_incident], path: /service}\n  - {kind: latency, added_ms: 10000, tools: [get_incident]}\n";
    let mut e = engine(plan);
    call(
        &mut e,
        "s",
        1,
        "get_incident",
        json!({"id": "INC-1"}),
        incident(1),
    );
    // The client gives up on the held call before its answer is due: it never saw the
    // changed result, so its cancelling noticed nothing, and nothing was altered for it.
    e.on_message(
        Side::Client,
        "s",
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
        Time::from_millis(1000),
    );
    e.finish(Time::from_millis(2000));
    let s = e.summary().silent();
    assert_eq!((s.altered, s.noticed, s.unobserved), (0, 0, 0), "{s:?}");

    // Delivered at last: the taint is kept from then on.
    let mut e = engine(plan);
    call(
        &mut e,
        "s",
        1,
        "get_incident",
        json!({"id": "INC-1"}),
        incident(1),
    );
    e.finish(Time::from_millis(20_000));
    let s = e.summary().silent();
    assert_eq!((s.altered, s.unobserved), (1, 1), "{s:?}");
}
