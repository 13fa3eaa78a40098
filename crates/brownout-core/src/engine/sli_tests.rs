//! The correctness SLI: a result a fault drifted or truncated is not correct, with or
//! without an advertised `outputSchema`.

use super::*;

fn run(yaml: &str, list: &str) -> (u64, u64, u64) {
    let plan = Plan::from_str_named(yaml, "test.yaml").unwrap_or_else(|e| panic!("{e}"));
    let mut e = Engine::new(plan, EngineConfig::default());
    let _ = e.on_message(
        Side::Client,
        "s",
        br#"{"jsonrpc":"2.0","id":0,"method":"tools/list"}"#,
        Time(0),
    );
    let _ = e.on_message(Side::Server, "s", list.as_bytes(), Time(1));
    for i in 1..=4u64 {
        let c = format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"echo"}}}}"#
        );
        let _ = e.on_message(Side::Client, "s", c.as_bytes(), Time(i * 10));
        let r = format!(
            r#"{{"jsonrpc":"2.0","id":{i},"result":{{"content":[{{"type":"text","text":"{{\"a\":1,\"b\":\"hello world\"}}"}}],"structuredContent":{{"a":1,"b":"hello world"}}}}}}"#
        );
        let _ = e.on_message(Side::Server, "s", r.as_bytes(), Time(i * 10 + 1));
    }
    // Delayed answers are recorded when they are due: end the run well after.
    e.finish(Time(10_000_000));
    let (_, _, s) = e
        .slis()
        .series()
        .find(|(m, t, _)| *m == "tools/call" && *t == "echo")
        .unwrap_or_else(|| panic!("no echo series"));
    (s.responded, s.correct, s.schema_violations)
}

const NO_SCHEMA: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}}"#;
const LOOSE_SCHEMA: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"},"outputSchema":{"type":"object"}}]}}"#;

#[test]
fn drifted_and_truncated_results_are_not_correct() {
    for list in [NO_SCHEMA, LOOSE_SCHEMA] {
        for yaml in [
            "faults:\n  - kind: schema_drift\n    every_nth: 2\n",
            "faults:\n  - kind: partial_result\n    every_nth: 2\n",
        ] {
            // Every second call altered: 4 answered, 2 correct, no schema caught it.
            assert_eq!(run(yaml, list), (4, 2, 0), "{yaml} with {list}");
        }
    }
}

#[test]
fn untouched_results_stay_correct() {
    assert_eq!(
        run("faults:\n  - kind: latency\n    added_ms: 5\n", NO_SCHEMA),
        (4, 4, 0)
    );
}
