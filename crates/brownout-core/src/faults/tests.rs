//! The kind registry: every kind in [`KINDS`] has a schema, checks, a live effect, a
//! simulated effect and a section in the docs.

use super::*;
use crate::event::Event;
use crate::{Engine, EngineConfig, Plan, Side};

#[test]
fn every_kind_has_a_schema_and_compiles_its_example() {
    let mut g = SchemaGenerator::default();
    for k in KINDS {
        let schema = k.params_schema(&mut g);
        assert!(schema.as_value().is_object(), "{}", k.name);
        let example: Value = serde_json::from_str(k.example).expect("example is JSON");
        let effect = k
            .compile(example)
            .unwrap_or_else(|e| panic!("{}: {e}", k.name));
        assert_eq!(effect.kind(), k.name);
        assert!(
            effect.check().is_empty(),
            "{}: example fails its checks",
            k.name
        );
    }
    assert_eq!(kind_names().len(), KINDS.len());
    assert!(kind_info("latency").is_some());
    assert!(kind_info("nope").is_none());
    let mut names = kind_names();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), KINDS.len(), "kind names are unique");
}

/// The example of `k` as a one-fault plan (YAML flow mappings are JSON).
fn plan_of(k: &KindInfo) -> Plan {
    let text = format!(
        "faults:\n  - {}\n",
        k.example
            .replacen('{', &format!("{{\"kind\": \"{}\", ", k.name), 1)
            .replace(", }", "}")
    );
    Plan::from_str_named(&text, "p.yaml").unwrap_or_else(|e| panic!("{}: {e}", k.name))
}

const LIST: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"m":{"type":"string"}}}}]}}"#;
const CALL: &[u8] =
    br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}"#;
const ANSWER: &[u8] = br#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"{\"a\":\"hello\"}"}],"structuredContent":{"a":"hello"}}}"#;

#[test]
fn every_kind_acts_live_and_says_what_it_did() {
    for k in KINDS {
        let mut e = Engine::new(plan_of(k), EngineConfig::default());
        let _ = e.on_message(
            Side::Client,
            "s",
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            Time(0),
        );
        let _ = e.on_message(Side::Server, "s", LIST, Time(1));
        for _ in 0..2 {
            let _ = e.on_message(Side::Client, "s", CALL, Time(2));
            let _ = e.on_message(Side::Server, "s", ANSWER, Time(3));
        }
        let acted = e
            .drain_events()
            .any(|ev| matches!(ev, Event::Fault(f) if f.kind == k.name && !f.action.is_empty()));
        let timed = e.plan().faults[0].effect.timer().is_some();
        assert!(
            acted || timed,
            "{}: no live effect on a list and a call",
            k.name
        );
    }
}

#[test]
fn every_kind_has_a_simulated_effect_or_says_it_has_none() {
    // Kinds the simulator does not model (real processes, real bytes, message order), and
    // a registry that only hides a tool from the list (its calls still reach the server).
    let unmodelled = ["duplicate", "reorder", "process", "bandwidth", "registry"];
    for k in KINDS {
        let mut e = Engine::new(plan_of(k), EngineConfig::default());
        let modelled = (0..2)
            .map(|_| e.on_simulated_call("s", "echo", Time(0)).injected)
            .sum::<u32>()
            > 0;
        assert_eq!(modelled, !unmodelled.contains(&k.name), "{}", k.name);
    }
}

#[test]
fn the_docs_describe_every_kind() {
    let docs = include_str!("../../../../docs/plans.md");
    for k in KINDS {
        let heading = format!("### `{}` [{}]", k.name, k.default_direction.as_str());
        assert!(docs.contains(&heading), "docs/plans.md has no `{heading}`");
    }
}

#[test]
fn each_kind_says_what_others_used_to_know_by_its_name() {
    for name in super::kind_names() {
        let info = super::kind_info(name).expect("a registered kind");
        let v: serde_json::Value = serde_json::from_str(info.example).expect("the example");
        let e = info.compile(v).expect("the example compiles");
        assert_eq!(e.signals_process(), name == "process", "{name}");
        assert_eq!(e.selects_unlisted_tools(), name == "registry", "{name}");
        assert_eq!(e.breaks_output_schema(), name == "schema_drift", "{name}");
    }
}
