//! One engine in front of several servers (`crate::session_key`): a fault's `servers`
//! selector, the blast radius drawn per agent, and taints that cross servers with the agent
//! that carries them — but never between agents.

use super::silent_tests::{engine, incident, taints};
use super::*;
use crate::session_key::namespaced;
use serde_json::{json, Value};

/// Call `tool` on session `s` at `ms` (a multiple of 100), answered with structured content
/// `sc`; what the client got (the silent tests' call, whose ids are tenths of a second).
fn call(e: &mut Engine, s: &str, ms: u64, tool: &str, args: Value, sc: Value) -> Value {
    super::silent_tests::call(e, s, ms / 100, tool, args, sc)
}

const CORRUPT_INCIDENTS: &str =
    "  - {kind: corrupt, tools: [get_incident], servers: [incidents], path: /service}\n";

#[test]
fn a_fault_naming_servers_acts_only_on_their_sessions() {
    let mut e = engine(CORRUPT_INCIDENTS);
    let on = namespaced("incidents", "label:a");
    let other = namespaced("ops", "label:a");
    let got = call(&mut e, &on, 100, "get_incident", json!({}), incident(1));
    assert_ne!(
        got["service"],
        incident(1)["service"],
        "the named server's call"
    );
    let got = call(&mut e, &other, 200, "get_incident", json!({}), incident(2));
    assert_eq!(
        got["service"],
        incident(2)["service"],
        "another server's call"
    );
    // A relay in front of a single server matches no fault that names servers.
    let got = call(
        &mut e,
        "label:a",
        300,
        "get_incident",
        json!({}),
        incident(3),
    );
    assert_eq!(got["service"], incident(3)["service"]);
}

#[test]
fn a_value_corrupted_on_one_server_and_passed_to_another_is_propagated() {
    let mut e = engine(CORRUPT_INCIDENTS);
    let mut at = 0;
    for n in 1..=20 {
        let agent = format!("label:load-{n}");
        at += 100;
        let got = call(
            &mut e,
            &namespaced("incidents", &agent),
            at,
            "get_incident",
            json!({"id": format!("INC-{n}")}),
            incident(n),
        );
        at += 100;
        call(
            &mut e,
            &namespaced("ops", &agent),
            at,
            "restart_service",
            json!({"service": got["service"]}),
            json!({"ok": true}),
        );
    }
    let s = e.summary().silent();
    assert_eq!((s.altered, s.propagated), (20, 20), "{s:?}");
    let ev = taints(&mut e);
    let p = ev.iter().find(|t| t.class == "propagated").cloned();
    let p = p.unwrap_or_else(|| panic!("no propagated event"));
    assert_eq!(
        (p.from_tool.as_str(), p.to_tool.as_deref()),
        ("incidents/get_incident", Some("ops/restart_service"))
    );
    assert_eq!(p.session, "@ops/label:load-1");
    // Each server's tools are counted as the server's.
    let tools: Vec<String> = e
        .slis()
        .series()
        .filter(|(m, _, _)| *m == "tools/call")
        .map(|(_, t, _)| t.to_string())
        .collect();
    assert_eq!(tools, ["incidents/get_incident", "ops/restart_service"]);
}

#[test]
fn another_agent_carrying_the_same_value_is_not_a_propagation() {
    let mut e = engine(CORRUPT_INCIDENTS);
    let got = call(
        &mut e,
        &namespaced("incidents", "label:a"),
        100,
        "get_incident",
        json!({}),
        incident(7),
    );
    // Agent b sends the very value agent a was given: b never saw it from a fault.
    call(
        &mut e,
        &namespaced("ops", "label:b"),
        200,
        "restart_service",
        json!({"service": got["service"]}),
        json!({}),
    );
    // Nor do unlabelled sessions form an agent across servers.
    let got = call(
        &mut e,
        &namespaced("incidents", "http-1"),
        300,
        "get_incident",
        json!({}),
        incident(8),
    );
    call(
        &mut e,
        &namespaced("ops", "http-1"),
        400,
        "restart_service",
        json!({"service": got["service"]}),
        json!({}),
    );
    e.finish(Time::from_millis(500));
    let s = e.summary().silent();
    assert_eq!((s.altered, s.propagated, s.unobserved), (2, 0, 2), "{s:?}");
}

#[test]
fn an_agent_s_taints_outlive_one_server_s_session_and_close_with_its_last() {
    let mut e = engine(CORRUPT_INCIDENTS);
    let inc = namespaced("incidents", "label:a");
    let ops = namespaced("ops", "label:a");
    call(&mut e, &ops, 100, "echo", json!({}), json!({}));
    let got = call(&mut e, &inc, 200, "get_incident", json!({}), incident(3));
    e.end_session(&inc, Time::from_millis(250));
    assert_eq!(e.summary().silent().unobserved, 0, "ops is still open");
    call(
        &mut e,
        &ops,
        300,
        "restart_service",
        json!({"service": got["service"]}),
        json!({}),
    );
    assert_eq!(e.summary().silent().propagated, 1);
    // A second corrupted result, never acted on: it closes when the agent's last session
    // ends.
    call(&mut e, &inc, 400, "get_incident", json!({}), incident(4));
    e.end_session(&inc, Time::from_millis(450));
    assert_eq!(e.summary().silent().unobserved, 0);
    e.end_session(&ops, Time::from_millis(500));
    assert_eq!(e.summary().silent().unobserved, 1);
}

#[test]
fn the_blast_radius_takes_an_agent_on_every_server_or_on_none() {
    let mut e = engine("  - {kind: error, tools: [t], sessions: 0.5, code: -32000, message: x}\n");
    let mut hit = [0u32; 2];
    for n in 0..200 {
        let agent = format!("label:load-{n}");
        let mut errs = [false; 2];
        for (i, server) in ["a", "b"].iter().enumerate() {
            let s = namespaced(server, &agent);
            let req = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                             "params": {"name": "t", "arguments": {}}});
            let v = e.on_message(
                Side::Client,
                &s,
                &serde_json::to_vec(&req).unwrap_or_default(),
                Time::from_millis(n),
            );
            errs[i] = v.forward != crate::verdict::Forward::Original;
        }
        assert_eq!(
            errs[0], errs[1],
            "agent {n} is in the radius on one server only"
        );
        hit[usize::from(errs[0])] += 1;
    }
    assert!(hit[0] > 40 && hit[1] > 40, "about half the agents: {hit:?}");
}
