//! Engine behaviour through its public face: messages in, verdicts and events out.

use super::*;
use crate::event::Event;
use proptest::prelude::*;

pub(super) fn plan(yaml: &str) -> Plan {
    Plan::from_str_named(yaml, "test.yaml").unwrap_or_else(|e| panic!("{e}"))
}

pub(super) fn call(id: u64, tool: &str) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"message":"hi","env":"prod-eu"}}}}}}"#).into_bytes()
}

pub(super) fn ok(id: u64) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{{\"a\":1,\"b\":[1,2,3]}}"}}],"structuredContent":{{"a":1,"b":[1,2,3]}}}}}}"#).into_bytes()
}

pub(super) fn engine(yaml: &str) -> Engine {
    Engine::new(plan(yaml), EngineConfig::default())
}

fn fault_events(e: &mut Engine) -> Vec<(String, String, u64)> {
    e.drain_events()
        .filter_map(|ev| match ev {
            Event::Fault(f) => Some((f.fault, f.session, f.seq)),
            _ => None,
        })
        .collect()
}

#[test]
fn empty_plan_passes_everything_and_counts_calls() {
    let mut e = engine("faults: []");
    for i in 0..10 {
        assert!(e
            .on_message(Side::Client, "s", &call(i, "echo"), Time(i * 10))
            .is_pass());
        assert!(e
            .on_message(Side::Server, "s", &ok(i), Time(i * 10 + 5))
            .is_pass());
    }
    assert!(e
        .on_message(Side::Client, "s", b"not json", Time(0))
        .is_pass());
    let r = e.summary().report();
    assert_eq!(r.calls, 10);
    assert_eq!(r.outcomes.get("ok"), Some(&10));
    assert!(
        (r.latency_ms.p50 - 0.005).abs() < 0.001,
        "{:?}",
        r.latency_ms
    );
    assert_eq!(e.pending_count(), 0);
}

/// A message that went on untouched is recorded as `on_message` would record it, and no
/// fault decides on it, not even one added between the check and the record.
#[test]
fn a_message_recorded_after_it_went_is_counted_and_never_faulted() {
    let mut e = engine("faults: []");
    assert!(e.untouched("s"));
    assert!(e
        .on_passed(Side::Client, "s", &call(1, "echo"), Time(0))
        .is_pass());
    // A fault that would fail every call arrives before the answer and the next request.
    e.set_plan(plan(
        "faults:\n  - {kind: error, tools: [echo], code: -32050}\n",
    ));
    assert!(
        !e.untouched("s"),
        "a plan with a fault may touch the session"
    );
    assert!(e.on_passed(Side::Server, "s", &ok(1), Time(5)).is_pass());
    assert!(e
        .on_passed(Side::Client, "s", &call(2, "echo"), Time(10))
        .is_pass());
    assert!(e.on_passed(Side::Server, "s", &ok(2), Time(15)).is_pass());
    let r = e.summary().report();
    assert_eq!((r.calls, r.outcomes.get("ok")), (2, Some(&2)), "{r:?}");
    assert!(
        fault_events(&mut e).is_empty(),
        "a fault was counted on a message that went"
    );
    assert_eq!(e.pending_count(), 0, "the answers were correlated");
    // Decided as usual, the same fault acts.
    let v = e.on_message(Side::Client, "s", &call(3, "echo"), Time(20));
    assert_eq!(v.forward, Forward::Drop);
}

/// An expired session is touched even with no fault left: it answers until re-initialized.
#[test]
fn an_expired_session_is_not_untouched() {
    let mut e = engine("faults:\n  - {kind: session_expiry, after_calls: 1}\n");
    assert!(e
        .on_message(Side::Client, "s", &call(1, "echo"), Time(0))
        .is_pass());
    let _ = e.on_message(Side::Server, "s", &ok(1), Time(1));
    let v = e.on_message(Side::Client, "s", &call(2, "echo"), Time(2));
    assert_eq!(v.forward, Forward::Drop, "the session expired");
    e.set_plan(plan("faults: []"));
    assert!(!e.untouched("s"), "the expired session would go untouched");
    assert!(e.untouched("other"));
}

#[test]
fn request_errors_short_circuit() {
    let mut e = engine(
        "faults:\n  - kind: error\n    tools: [restart_*]\n    code: -32050\n    message: nope\n",
    );
    let v = e.on_message(Side::Client, "s", &call(1, "restart_service"), Time(0));
    assert_eq!(v.forward, Forward::Drop, "the server never sees it");
    let reply: serde_json::Value = serde_json::from_slice(&v.reply[0].bytes).expect("json");
    assert_eq!(reply["error"]["code"], -32050);
    assert_eq!(reply["id"], 1);
    assert!(e
        .on_message(Side::Client, "s", &call(2, "echo"), Time(0))
        .is_pass());
    assert_eq!(e.summary().report().outcomes.get("error"), Some(&1));
}

#[test]
fn latency_lands_on_the_response_and_is_counted() {
    let mut e = engine("faults:\n  - kind: latency\n    added_ms: 250\n");
    assert!(e
        .on_message(Side::Client, "s", &call(1, "echo"), Time(0))
        .is_pass());
    let v = e.on_message(Side::Server, "s", &ok(1), Time(1000));
    assert_eq!(v.delay, Time::from_millis(250));
    assert_eq!(
        v.forward,
        Forward::Original,
        "a delayed message keeps its bytes"
    );
    assert_eq!(e.summary().report().calls, 0, "recorded when it is due");
    e.finish(Time::from_millis(5000));
    let r = e.summary().report();
    assert!((r.latency_ms.p50 - 251.0).abs() < 1.0, "{:?}", r.latency_ms);
}

#[test]
fn response_faults_mutate_what_the_client_gets() {
    let mut e = engine("faults:\n  - kind: schema_drift\n    mutation: retype\n    path: /a\n");
    e.on_message(Side::Client, "s", &call(1, "get"), Time(0));
    let v = e.on_message(Side::Server, "s", &ok(1), Time(1));
    let Forward::Replace(bytes) = v.forward else {
        panic!("mutated")
    };
    let out: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
    assert_eq!(out["result"]["structuredContent"]["a"], "1");
    assert_eq!(
        out["result"]["content"][0]["text"],
        r#"{"a":"1","b":[1,2,3]}"#
    );
    let calls: Vec<_> = e
        .drain_events()
        .filter_map(|ev| {
            if let Event::Call(c) = ev {
                Some(c)
            } else {
                None
            }
        })
        .collect();
    assert!(calls[0].mutated);
    assert_eq!(calls[0].faults, vec![e.plan().faults[0].id.clone()]);
}

#[test]
fn phantom_tools_are_listed_and_fail() {
    let mut e =
        engine("faults:\n  - kind: registry\n    action: phantom\n    phantom_name: ghost\n");
    e.on_message(
        Side::Client,
        "s",
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        Time(0),
    );
    let v = e.on_message(
        Side::Server,
        "s",
        br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#,
        Time(1),
    );
    let Forward::Replace(bytes) = v.forward else {
        panic!("list rewritten")
    };
    assert!(String::from_utf8_lossy(&bytes).contains("\"ghost\""));
    let v = e.on_message(Side::Client, "s", &call(2, "ghost"), Time(2));
    assert_eq!(v.forward, Forward::Drop);
    assert!(String::from_utf8_lossy(&v.reply[0].bytes).contains("Unknown tool: ghost"));
    assert!(e
        .on_message(Side::Client, "s", &call(3, "echo"), Time(2))
        .is_pass());
}

#[test]
fn process_kill_after_calls_fires_once() {
    let mut e = engine("faults:\n  - kind: process\n    after_calls: 2\n    signal: KILL\n");
    let kills: Vec<usize> = (0..6)
        .map(|i| {
            e.on_message(Side::Client, "s", &call(i, "echo"), Time(0))
                .process
                .len()
        })
        .collect();
    assert_eq!(kills, vec![0, 0, 1, 0, 0, 0]);
}

#[test]
fn timed_process_faults() {
    let mut e =
        engine("faults:\n  - kind: process\n    action: pause\n    at_ms: 500\n    pause_ms: 20\n");
    assert_eq!(e.next_timer(), Some(Time::from_millis(500)));
    assert!(e.on_timer("s", Time::from_millis(100)).is_empty());
    assert_eq!(
        e.on_timer("s", Time::from_millis(500)),
        vec![ProcessAction::Pause(Time::from_millis(20))]
    );
    assert_eq!(e.next_timer(), None);
}

#[test]
fn dying_servers_fail_calls_in_flight() {
    let mut e = engine("faults: []");
    e.on_message(Side::Client, "s", &call(7, "echo"), Time(0));
    e.on_message(Side::Client, "s", &call(8, "echo"), Time(0));
    let failed = e.fail_pending("s", "the MCP server exited (signal 9)", Time(5));
    assert_eq!(failed.len(), 2);
    let v: serde_json::Value = serde_json::from_slice(&failed[0].reply).expect("json");
    assert_eq!(v["id"], 7);
    assert!(v["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("server exited"));
    assert_eq!(e.pending_count(), 0);
}

#[test]
fn batches_are_split_and_rejoined() {
    let mut e = engine("faults:\n  - kind: error\n    tools: [bad]\n");
    let batch = format!(
        "[{},{}]",
        String::from_utf8_lossy(&call(1, "bad")),
        String::from_utf8_lossy(&call(2, "good"))
    );
    let v = e.on_message(Side::Client, "s", batch.as_bytes(), Time(0));
    let Forward::Replace(fwd) = v.forward else {
        panic!("rebuilt batch")
    };
    let fwd: serde_json::Value = serde_json::from_slice(&fwd).expect("json");
    assert_eq!(fwd.as_array().map(Vec::len), Some(1));
    assert_eq!(fwd[0]["params"]["name"], "good");
    let reply: serde_json::Value = serde_json::from_slice(&v.reply[0].bytes).expect("json");
    assert_eq!(reply[0]["id"], 1);
}

#[test]
fn selectors_count_per_session() {
    let mut e = engine("faults:\n  - kind: drop\n    every_nth: 3\n    max_injections: 2\n    arguments: {env: {regex: '^prod'}}\n");
    let dropped: Vec<bool> = (0..12)
        .map(|i| {
            e.on_message(Side::Client, "s", &call(i, "echo"), Time(0));
            e.on_message(Side::Server, "s", &ok(i), Time(0)).forward == Forward::Drop
        })
        .collect();
    let hits: Vec<usize> = dropped
        .iter()
        .enumerate()
        .filter(|(_, d)| **d)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(hits, vec![2, 5]);
}

#[test]
fn probability_is_honoured_statistically() {
    let mut e = engine("seed: 11\nfaults:\n  - kind: error\n    probability: 0.1\n");
    let n = 20_000u64;
    let hit = (0..n)
        .filter(|i| {
            e.on_message(Side::Client, "s", &call(*i, "echo"), Time(0))
                .forward
                == Forward::Drop
        })
        .count();
    // σ = sqrt(n p (1-p)) ≈ 42; allow 5σ.
    assert!((hit as f64 - 2000.0).abs() < 212.0, "{hit}");
}

#[test]
fn rate_limit_is_a_token_bucket() {
    let mut e = engine("faults:\n  - kind: rate_limit\n    rate: 10\n    burst: 2\n");
    let limited: Vec<bool> = [0u64, 0, 0, 50, 100, 100]
        .iter()
        .enumerate()
        .map(|(i, ms)| {
            !e.on_message(
                Side::Client,
                "s",
                &call(i as u64, "echo"),
                Time::from_millis(*ms),
            )
            .reply
            .is_empty()
        })
        .collect();
    assert_eq!(limited, vec![false, false, true, true, false, true]);
}

#[test]
fn notifications_can_be_dropped() {
    let mut e = engine("faults:\n  - kind: drop\n    methods: ['notifications/progress']\n");
    let v = e.on_message(
        Side::Server,
        "s",
        br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
        Time(0),
    );
    assert_eq!(v.forward, Forward::Drop);
    let v = e.on_message(
        Side::Server,
        "s",
        br#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#,
        Time(0),
    );
    assert!(v.is_pass());
}

const PLAN_AB: &str = "seed: 5\nfaults:\n  - {id: a, kind: error, probability: 0.3}\n  - {id: b, kind: latency, added_ms: 5, probability: 0.5, correlation: {mode: burst, mean_burst_calls: 3}}\n";
const PLAN_ACB: &str = "seed: 5\nfaults:\n  - {id: a, kind: error, probability: 0.3}\n  - {id: c, kind: drop, probability: 0.4}\n  - {id: b, kind: latency, added_ms: 5, probability: 0.5, correlation: {mode: burst, mean_burst_calls: 3}}\n";

/// Run calls of several sessions in a given interleaving; return each fault's decisions.
fn run(plan_text: &str, order: &[usize], calls_per_session: u64) -> Vec<(String, String, u64)> {
    let mut e = engine(plan_text);
    let mut next = [0u64; 4];
    for &s in order {
        let i = next[s];
        if i >= calls_per_session {
            continue;
        }
        next[s] += 1;
        let session = format!("session-{s}");
        e.on_message(Side::Client, &session, &call(i, "echo"), Time(0));
        e.on_message(Side::Server, &session, &ok(i), Time(0));
    }
    let mut out = fault_events(&mut e);
    out.sort();
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The same seed and the same client behaviour give the same decisions, however the
    /// sessions' messages interleave.
    #[test]
    fn interleaving_never_changes_decisions(order in proptest::collection::vec(0usize..4, 40..200)) {
        let canonical: Vec<usize> = (0..4).flat_map(|s| std::iter::repeat_n(s, 50)).collect();
        let mut full = order.clone();
        full.extend(canonical.iter());
        prop_assert_eq!(run(PLAN_AB, &full, 30), run(PLAN_AB, &canonical, 30));
    }

    /// Adding a fault never changes another fault's decisions.
    #[test]
    fn adding_a_fault_keeps_the_others(order in proptest::collection::vec(0usize..4, 40..200)) {
        let with_c: Vec<_> = run(PLAN_ACB, &order, 30).into_iter().filter(|(f, _, _)| f != "c").collect();
        prop_assert_eq!(with_c, run(PLAN_AB, &order, 30));
    }

    /// A malformed or arbitrary message never panics the engine and passes through.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let mut e = engine(PLAN_AB);
        let _ = e.on_message(Side::Client, "s", &bytes, Time(0));
        let _ = e.on_message(Side::Server, "s", &bytes, Time(0));
    }
}

#[test]
fn a_new_plan_keeps_the_state_of_faults_it_keeps() {
    let capped = "faults:\n  - {id: capped, kind: error, tools: [echo], max_injections: 2}\n";
    let mut e = engine(capped);
    let injected = |e: &mut Engine, id: u64| {
        let v = e.on_message(Side::Client, "s", &call(id, "echo"), Time(id));
        if v.is_pass() {
            // Answer it, so nothing stays pending.
            e.on_message(Side::Server, "s", &ok(id), Time(id));
            false
        } else {
            true
        }
    };
    assert!(injected(&mut e, 1));
    assert!(injected(&mut e, 2));
    assert!(!injected(&mut e, 3));
    // The same fault beside a new one: its cap is still spent.
    e.set_plan(plan(&format!(
        "{capped}  - {{id: other, kind: latency, tools: [search], added_ms: 5}}\n"
    )));
    assert!(!injected(&mut e, 4));
    // A fault under a new id starts fresh.
    e.set_plan(plan(
        "faults:\n  - {id: capped-again, kind: error, tools: [echo], max_injections: 2}\n",
    ));
    assert!(injected(&mut e, 5));
}
