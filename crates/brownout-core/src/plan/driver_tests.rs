//! Faults a driver cannot perform are refused when the plan loads on it.

use crate::capability::{Capabilities, Capability as C};
use crate::Plan;

fn plan(yaml: &str) -> Plan {
    Plan::from_str_named(yaml, "p.yaml").unwrap_or_else(|e| panic!("{e}"))
}

fn refused(yaml: &str, driver: &str, can: Capabilities) -> Vec<String> {
    match plan(yaml).check_driver(driver, can, "p.yaml") {
        Ok(()) => Vec::new(),
        Err(e) => e.to_string().lines().map(String::from).collect(),
    }
}

#[test]
fn a_process_fault_needs_a_process() {
    let yaml = "faults:\n  - id: kill-it\n    kind: process\n    after_calls: 3\n";
    let errs = refused(yaml, "`proxy stdio --upstream`", Capabilities::NONE);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(
        errs[0],
        "p.yaml:2:7: `faults[0]`: fault `kill-it` (kind `process`) cannot run on `proxy stdio --upstream`: it needs to signal the server process, which `proxy stdio --upstream` cannot do"
    );
    let child = Capabilities::NONE.with(C::SignalProcess);
    assert!(refused(yaml, "stdio", child).is_empty());
}

#[test]
fn a_timed_process_fault_needs_timers() {
    let yaml = "faults:\n  - id: at-2s\n    kind: process\n    at_ms: 2s\n";
    let no_timers = Capabilities::NONE.with(C::SignalProcess);
    let errs = refused(yaml, "`proxy http -- CMD`", no_timers);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].contains("`faults[0].at_ms`"), "{errs:?}");
    assert!(
        errs[0].contains("fault `at-2s` (kind `process`)"),
        "{errs:?}"
    );
    assert!(errs[0].contains("`proxy http -- CMD`"), "{errs:?}");
    assert!(refused(yaml, "stdio", no_timers.with(C::ProcessTimers)).is_empty());
}

#[test]
fn duplicated_answers_need_more_than_one_message() {
    let yaml = "faults:\n  - kind: duplicate\n  - kind: duplicate\n    direction: to_server\n";
    let errs = refused(
        yaml,
        "a JSON HTTP answer",
        Capabilities::NONE.with(C::MultipleRequests),
    );
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].contains("`faults[0]`") && errs[0].contains("kind `duplicate`"));
    assert!(
        errs[0].contains("more than one message for one answer"),
        "{errs:?}"
    );
    assert!(refused(yaml, "stdio", Capabilities::all()).is_empty());
}

#[test]
fn every_fault_is_named_and_disabled_ones_are_not() {
    let yaml = "faults:\n  - kind: slow_stream\n  - kind: bandwidth\n    bytes_per_sec: 10\n  - kind: connection\n    mode: drop_stream\n  - kind: connection\n  - kind: registry\n    action: list_changed\n  - kind: process\n    enabled: false\n  - kind: latency\n    added_ms: 5\n";
    let errs = refused(yaml, "stdio", Capabilities::NONE);
    assert_eq!(errs.len(), 4, "{errs:?}");
    for (e, at) in errs.iter().zip([
        "faults[0]",
        "faults[1]",
        "faults[2].mode",
        "faults[4].action",
    ]) {
        assert!(e.contains(&format!("`{at}`")), "{e}");
    }
}
