//! `corrupt` through the engine: the client gets a changed value, and the result still
//! validates against the tool's advertised `outputSchema`.

use crate::event::Event;
use crate::{Engine, EngineConfig, Plan, Side, Time};
use serde_json::{json, Value};

const SCHEMA: &str = r#"{"type":"object","required":["id","service","severity","state"],
 "properties":{"id":{"type":"string","pattern":"^INC-[0-9]{4}$"},"service":{"type":"string"},
 "owner":{"type":"string"},"severity":{"type":"integer","minimum":1,"maximum":5},
 "state":{"enum":["open","closed","resolved"]}},"additionalProperties":false}"#;

fn engine(fault: &str) -> Engine {
    let yaml = format!("seed: 9\nfaults:\n  - kind: corrupt\n    tools: [get_incident]\n{fault}");
    let plan = Plan::from_str_named(&yaml, "t.yaml").unwrap_or_else(|e| panic!("{e}"));
    let mut e = Engine::new(plan, EngineConfig::default());
    let list = format!(
        r#"{{"jsonrpc":"2.0","id":0,"result":{{"tools":[{{"name":"get_incident","inputSchema":{{"type":"object"}},"outputSchema":{}}}]}}}}"#,
        SCHEMA.replace('\n', "")
    );
    e.on_message(
        Side::Client,
        "s",
        br#"{"jsonrpc":"2.0","id":0,"method":"tools/list"}"#,
        Time(0),
    );
    e.on_message(Side::Server, "s", list.as_bytes(), Time(1));
    e
}

/// One call of get_incident answered with `sc`; the result as the client got it.
fn call(e: &mut Engine, id: u64, sc: &Value) -> Value {
    let req = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"get_incident","arguments":{{"id":"{}"}}}}}}"#,
        sc["id"].as_str().unwrap_or("INC-0000")
    );
    e.on_message(Side::Client, "s", req.as_bytes(), Time(id * 10));
    let resp = json!({"jsonrpc": "2.0", "id": id, "result": {
        "content": [{"type": "text", "text": sc.to_string()}], "structuredContent": sc}});
    let bytes = serde_json::to_vec(&resp).unwrap_or_default();
    let v = e.on_message(Side::Server, "s", &bytes, Time(id * 10 + 1));
    let out = match v.forward {
        crate::verdict::Forward::Replace(b) => b,
        _ => bytes,
    };
    serde_json::from_slice(&out).unwrap_or(Value::Null)
}

fn incident(n: u32, service: &str) -> Value {
    json!({"id": format!("INC-{n:04}"), "service": service, "owner": "team-billing",
           "severity": 3, "state": "open"})
}

fn valid(v: &Value) -> bool {
    let schema: Value = serde_json::from_str(SCHEMA).unwrap_or_default();
    jsonschema::validator_for(&schema).is_ok_and(|s| s.is_valid(v))
}

#[test]
fn perturb_changes_the_value_keeps_the_schema_and_mirrors_the_text() {
    for (path, field) in [
        ("/severity", "severity"),
        ("/state", "state"),
        ("/id", "id"),
    ] {
        let mut e = engine(&format!("    path: {path}\n"));
        for n in 1..20 {
            let sent = incident(1000 + n, "payments-api");
            let got = call(&mut e, u64::from(n), &sent);
            let sc = &got["result"]["structuredContent"];
            assert_ne!(sc[field], sent[field], "{path} unchanged");
            assert!(valid(sc), "{path}: {sc} breaks the schema");
            let text: Value =
                serde_json::from_str(got["result"]["content"][0]["text"].as_str().unwrap_or(""))
                    .unwrap_or_default();
            assert_eq!(&text, sc, "the text tells the same story");
        }
    }
}

#[test]
fn swap_takes_another_value_of_the_result_and_stale_an_earlier_one() {
    let mut e = engine("    path: /service\n    mode: swap\n");
    let got = call(&mut e, 1, &incident(1001, "payments-api"));
    let svc = got["result"]["structuredContent"]["service"].clone();
    assert!(
        svc == json!("team-billing") || svc == json!("INC-1001"),
        "{svc}"
    );

    let mut e = engine("    path: /service\n    mode: stale\n");
    let first = call(&mut e, 1, &incident(1001, "payments-api"));
    assert_eq!(
        first["result"]["structuredContent"]["service"], "payments-api",
        "nothing earlier to go stale with"
    );
    let second = call(&mut e, 2, &incident(1002, "search-api"));
    assert_eq!(
        second["result"]["structuredContent"]["service"],
        "payments-api"
    );
    let injected = e
        .summary()
        .report()
        .injections
        .values()
        .map(|i| i.count)
        .sum::<u64>();
    assert_eq!(injected, 1, "the pass-through first call is not counted");
}

#[test]
fn a_drawn_leaf_is_distinctive_and_replays_from_the_seed() {
    let run = || {
        let mut e = engine("");
        (1..30)
            .map(|n| call(&mut e, n, &incident(1000 + n as u32, "payments-api")))
            .collect::<Vec<_>>()
    };
    let a = run();
    assert_eq!(a, run(), "same seed, same corruption");
    for got in &a {
        let sc = &got["result"]["structuredContent"];
        assert!(valid(sc));
        // The small severity and the enum state are not distinctive: never drawn.
        assert_eq!(sc["severity"], 3);
        assert_eq!(sc["state"], "open");
    }
    let changed = a
        .iter()
        .filter(|g| g["result"]["structuredContent"]["service"] != "payments-api")
        .count();
    assert!(changed > 0);
}

#[test]
fn the_fault_event_says_what_changed_without_the_values() {
    let mut e = engine("    path: /service\n");
    call(&mut e, 1, &incident(1001, "payments-api"));
    let action = e
        .drain_events()
        .find_map(|ev| match ev {
            Event::Fault(f) => Some(f.action),
            _ => None,
        })
        .unwrap_or_default();
    assert!(
        action.contains("`/service`") && action.contains("still valid"),
        "{action}"
    );
    assert!(!action.contains("payments"), "{action}");
}

#[test]
fn a_relative_path_is_refused() {
    let err = Plan::from_str_named("faults:\n  - kind: corrupt\n    path: service\n", "t.yaml")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("JSON pointer"), "{err}");
}

#[test]
fn an_enumerated_value_in_text_only_json_does_not_taint() {
    // No structuredContent: corrupt changes the JSON in the text, still against the
    // outputSchema, whose `enum` makes `state` one of a few everybody uses.
    let mut e = engine("    path: /state\n");
    let sc = incident(1042, "payments-api");
    let req = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get_incident","arguments":{"id":"INC-1042"}}}"#;
    e.on_message(Side::Client, "s", req.as_bytes(), Time(50));
    let resp = json!({"jsonrpc": "2.0", "id": 5, "result": {
        "content": [{"type": "text", "text": sc.to_string()}]}});
    let bytes = serde_json::to_vec(&resp).unwrap_or_default();
    let v = e.on_message(Side::Server, "s", &bytes, Time(51));
    assert!(matches!(v.forward, crate::verdict::Forward::Replace(_)));
    let altered: Vec<_> = e
        .drain_events()
        .filter_map(|ev| match ev {
            Event::Taint(t) if t.class == "altered" => Some(t),
            _ => None,
        })
        .collect();
    assert_eq!(altered.len(), 1);
    assert_eq!(altered[0].values, Some(0), "an enum member taints nothing");
}
