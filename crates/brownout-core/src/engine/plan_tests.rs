//! Installing a plan: faults it keeps keep their state, in time linear in the plan's size.

use super::*;

/// `n` latency faults named `f0`..`f{n-1}` (built directly: no parsing to pay for).
fn many(n: usize, kind_of_first: &str) -> Plan {
    let text = format!("faults:\n  - kind: {kind_of_first}\n    max_injections: 1\n");
    let base = Plan::from_str_named(&text, "p.yaml").unwrap_or_else(|e| panic!("{e}"));
    let mut plan = base.clone();
    plan.faults = (0..n)
        .map(|i| {
            let mut f = base.faults[0].clone();
            f.id = format!("f{i}");
            f.id_hash = crate::rng::hash_str(&f.id);
            f
        })
        .collect();
    plan
}

#[test]
fn the_carry_map_follows_ids_and_kinds() {
    let old = many(5, "drop");
    let mut new = many(5, "drop");
    new.faults.reverse();
    new.faults[0] = many(1, "error").faults[0].clone(); // f0 as an error: a new fault
    new.faults[0].id = "f4".into();
    new.faults[1].id = "new".into();
    let c = carried(&old.faults, &new.faults);
    assert_eq!(c, vec![None, None, Some(2), Some(1), Some(0)]);
}

/// 40,000 faults, installed over a live session, reversed: every fault keeps its own
/// state. Built on [`carried`] (a hash map per install), so the cost is linear; the bound
/// below is only a generous guard, the benchmark measures it.
#[test]
fn a_big_plan_installs_and_keeps_state() {
    let n = 40_000;
    let mut e = Engine::new(many(n, "drop"), EngineConfig::default());
    let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#;
    let _ = e.on_message(Side::Client, "s", call, Time(0));
    let mut reversed = many(n, "drop");
    reversed.faults.reverse();
    let started = std::time::Instant::now();
    e.set_plan(reversed);
    let took = started.elapsed();
    // Every fault hit once already (max_injections: 1): none hits again.
    let _ = e.on_message(
        Side::Server,
        "s",
        br#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        Time(1),
    );
    let _ = e.drain_events();
    let _ = e.on_message(
        Side::Client,
        "s",
        br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}"#,
        Time(2),
    );
    let v = e.on_message(
        Side::Server,
        "s",
        br#"{"jsonrpc":"2.0","id":2,"result":{}}"#,
        Time(3),
    );
    assert!(v.is_pass(), "a carried fault forgot its injection count");
    assert!(
        took < std::time::Duration::from_secs(30),
        "installing {n} faults took {took:?}"
    );
}
