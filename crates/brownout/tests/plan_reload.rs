//! A running stdio relay takes a new plan from its file: on SIGHUP, and with `--watch` when
//! the file changes; a broken edit keeps the running plan and says why.

mod common;
use common::*;
use serde_json::json;
use std::time::{Duration, Instant};

const FAIL_ECHO: &str =
    "faults:\n  - {id: no-echo, kind: error, phase: request, tools: [echo], code: -32099}\n";

/// Wait until stderr holds `needle` (at most 10 s).
fn wait_for_stderr(w: &Wire, needle: &str) -> String {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let text = w.stderr_text();
        if text.contains(needle) {
            return text;
        }
        assert!(Instant::now() < until, "no `{needle}` on stderr: {text}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn echo(w: &mut Wire, id: u64) -> serde_json::Value {
    w.send(&tool_call(id, "echo", json!({"message": "hi"})));
    let v = w.recv_json(5000).expect("an answer");
    assert_eq!(v["id"], id, "{v}");
    v
}

#[test]
fn watch_applies_a_good_edit_and_keeps_the_plan_on_a_broken_one() {
    let dir = tmp();
    let mut cmd = through(dir.path(), FAIL_ECHO, &fixture());
    cmd.insert(3, "--watch".into());
    let plan = dir.path().join("plan.yaml");
    let mut w = Wire::spawn(&cmd);
    w.send(INIT);
    assert!(w.recv_json(5000).is_some());
    assert_eq!(echo(&mut w, 1)["error"]["code"], -32099);

    // A broken edit: the typo is named, and the running plan still applies.
    std::fs::write(
        &plan,
        "faults:\n  - {id: no-echo, kind: error, phase: request, tools: [echo], cod: -1}\n",
    )
    .expect("write");
    let said = wait_for_stderr(&w, "not reloaded");
    assert!(
        said.contains("plan.yaml:2:") && said.contains("cod"),
        "{said}"
    );
    assert_eq!(echo(&mut w, 2)["error"]["code"], -32099);

    // A good edit replaces it: echo answers again.
    std::fs::write(&plan, "faults: []\n").expect("write");
    wait_for_stderr(&w, "plan reloaded");
    let v = echo(&mut w, 3);
    assert!(
        v["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("hi")),
        "{v}"
    );
}

#[test]
fn sighup_reloads_the_plan() {
    let dir = tmp();
    let mut w = Wire::spawn(&through(dir.path(), "faults: []\n", &fixture()));
    w.send(INIT);
    assert!(w.recv_json(5000).is_some());
    assert!(echo(&mut w, 1).get("result").is_some(), "no fault yet");
    // Without --watch an edit alone changes nothing... (a deliberate idle period, the
    // test's subject: longer than a watcher's poll, and nothing to wait for)
    std::fs::write(dir.path().join("plan.yaml"), FAIL_ECHO).expect("write");
    std::thread::sleep(Duration::from_millis(600));
    assert!(echo(&mut w, 2).get("result").is_some());
    // ...until SIGHUP.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(w.pid() as i32),
        nix::sys::signal::Signal::SIGHUP,
    )
    .expect("kill -HUP");
    wait_for_stderr(&w, "plan reloaded");
    assert_eq!(echo(&mut w, 3)["error"]["code"], -32099);
    // The relay is still healthy and exits cleanly.
    w.close_stdin();
    assert_eq!(w.wait(10).code(), Some(0));
}

#[test]
fn sighup_without_a_plan_file_does_not_stop_the_relay() {
    let mut cmd = vec![
        brownout().to_string(),
        "proxy".into(),
        "stdio".into(),
        "--quiet".into(),
        "--".into(),
    ];
    cmd.extend(fixture());
    let mut w = Wire::spawn(&cmd);
    w.send(INIT);
    assert!(w.recv_json(5000).is_some());
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(w.pid() as i32),
        nix::sys::signal::Signal::SIGHUP,
    )
    .expect("kill -HUP");
    wait_for_stderr(&w, "no --plan file to reload");
    assert!(echo(&mut w, 1).get("result").is_some());
    w.close_stdin();
    assert_eq!(w.wait(10).code(), Some(0));
}

fn hup(w: &Wire) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(w.pid() as i32),
        nix::sys::signal::Signal::SIGHUP,
    )
    .expect("kill -HUP");
}

/// How many times stderr says `needle`.
fn count(w: &Wire, needle: &str) -> usize {
    w.stderr_text().matches(needle).count()
}

/// Wait until stderr says `needle` more than `before` times.
fn wait_for_nth(w: &Wire, needle: &str, before: usize) {
    let until = Instant::now() + Duration::from_secs(10);
    while count(w, needle) <= before {
        assert!(
            Instant::now() < until,
            "no new `{needle}`: {}",
            w.stderr_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGHUP on a half-written (empty) file, `null` or `{}` is not "no faults": the plan
/// stays, and stderr says why.
#[test]
fn sighup_on_an_empty_or_truncated_file_keeps_the_faults() {
    let dir = tmp();
    let plan = dir.path().join("plan.yaml");
    let mut w = Wire::spawn(&through(dir.path(), FAIL_ECHO, &fixture()));
    w.send(INIT);
    assert!(w.recv_json(5000).is_some());
    assert_eq!(echo(&mut w, 1)["error"]["code"], -32099);
    for (i, text) in ["", "null\n", "{}\n", "faults:\n  - {id: no-e"]
        .iter()
        .enumerate()
    {
        std::fs::write(&plan, text).expect("write");
        let before = count(&w, "not reloaded");
        hup(&w);
        wait_for_nth(&w, "not reloaded", before);
        assert_eq!(
            echo(&mut w, 10 + i as u64)["error"]["code"],
            -32099,
            "after {text:?}: {}",
            w.stderr_text()
        );
    }
    assert!(
        w.stderr_text().contains("faults: []"),
        "{}",
        w.stderr_text()
    );
    // Saying so clears them.
    std::fs::write(&plan, "faults: []\n").expect("write");
    hup(&w);
    wait_for_stderr(&w, "plan reloaded");
    assert!(echo(&mut w, 20).get("result").is_some());
}

/// `--watch` sees an editor truncate the file before it writes: the plan stays.
#[test]
fn watch_on_a_truncated_file_keeps_the_faults() {
    let dir = tmp();
    let mut cmd = through(dir.path(), FAIL_ECHO, &fixture());
    cmd.insert(3, "--watch".into());
    let plan = dir.path().join("plan.yaml");
    let mut w = Wire::spawn(&cmd);
    w.send(INIT);
    assert!(w.recv_json(5000).is_some());
    std::fs::write(&plan, "").expect("truncate");
    let said = wait_for_stderr(&w, "not reloaded");
    assert!(said.contains("faults: []"), "{said}");
    assert_eq!(echo(&mut w, 1)["error"]["code"], -32099);
}

/// SIGHUP on 80 KB of block-style nesting: not reloaded, and the relay lives. (Needs the
/// plan parser's nesting cap from brownout-core.)
#[test]
fn sighup_on_a_deeply_nested_plan_keeps_the_relay_alive() {
    let dir = tmp();
    let plan = dir.path().join("plan.yaml");
    let mut w = Wire::spawn(&through(dir.path(), FAIL_ECHO, &fixture()));
    w.send(INIT);
    assert!(w.recv_json(5000).is_some());
    std::fs::write(&plan, format!("faults:\n{}x\n", "- ".repeat(40_000))).expect("write");
    hup(&w);
    wait_for_stderr(&w, "not reloaded");
    assert_eq!(echo(&mut w, 1)["error"]["code"], -32099);
}

#[test]
fn a_reload_that_changes_a_faults_kind_shows_the_new_kind_in_the_summary() {
    let dir = tmp();
    let plan = "faults:\n  - {id: shifty, kind: latency, tools: [echo], added_ms: 1}\n  - {id: idle, kind: latency, tools: [get_incident], added_ms: 1}\n";
    let mut cmd = through(dir.path(), plan, &fixture());
    cmd.retain(|a| a != "--quiet");
    let mut w = Wire::spawn(&cmd);
    w.send(INIT);
    assert!(w.recv_json(5000).is_some());
    echo(&mut w, 1);
    std::fs::write(
        dir.path().join("plan.yaml"),
        "faults:\n  - {id: shifty, kind: error, phase: request, tools: [echo], code: -32098}\n  - {id: idle, kind: latency, tools: [get_incident], added_ms: 1}\n",
    )
    .expect("write");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(w.pid() as i32),
        nix::sys::signal::Signal::SIGHUP,
    )
    .expect("signal");
    wait_for_stderr(&w, "plan reloaded");
    assert_eq!(echo(&mut w, 2)["error"]["code"], -32098);
    w.close_stdin();
    assert_eq!(w.wait(10).code(), Some(0));
    let err = w.stderr_text();
    let line = |id: &str| {
        err.lines()
            .find(|l| l.trim_start().starts_with(id))
            .unwrap_or_else(|| panic!("`{id}` is not in the summary: {err}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    // The error fired once under its new kind; what the latency did before stays apart.
    assert_eq!(line("shifty "), ["shifty", "error", "1"], "{err}");
    assert_eq!(
        line("shifty (was"),
        ["shifty", "(was", "latency)", "latency", "1"],
        "{err}"
    );
    assert_eq!(line("idle"), ["idle", "latency", "0"], "{err}");
}
