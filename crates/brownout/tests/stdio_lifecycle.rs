//! The stdio relay's lifecycle: a server that exits, dies, restarts or never answers; what
//! the client gets in each case, and what brownout says about it.

mod common;
use common::*;
use serde_json::{json, Value};
use std::process::{Command, Stdio};

/// Run `cmd` with `input` on its stdin (closed after), returning (status, stdout lines, stderr).
fn run_with_input(cmd: &[String], input: &str) -> (std::process::ExitStatus, Vec<Value>, String) {
    use std::io::Write;
    let mut child = Command::new(&cmd[0])
        .args(&cmd[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.as_bytes()).expect("write requests");
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    (
        out.status,
        lines,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_client_that_sends_then_closes_gets_every_real_answer_every_time() {
    let dir = tmp();
    let mut input = format!("{INIT}\n{INITIALIZED}\n");
    for i in 1..=5 {
        input.push_str(&tool_call(i, "echo", json!({"message": format!("m{i}")})));
        input.push('\n');
    }
    let mut cmd = through(dir.path(), "faults: []", &fixture());
    cmd.retain(|a| a != "--quiet");
    for run in 0..30 {
        let (status, lines, err) = run_with_input(&cmd, &input);
        assert_eq!(status.code(), Some(0), "run {run}: {err}");
        assert_eq!(
            lines.len(),
            6,
            "run {run}: one answer per request: {lines:?}\n{err}"
        );
        for (i, l) in lines.iter().enumerate() {
            assert_eq!(l["id"], json!(i), "run {run}: in order: {lines:?}");
            assert!(
                l.get("error").is_none(),
                "run {run}: a real answer: {l}\n{err}"
            );
        }
        assert!(err.contains("error rate: 0.00%"), "run {run}: {err}");
    }
}

#[test]
fn a_server_that_answers_then_exits_is_heard_before_it_is_mourned() {
    let dir = tmp();
    let server: Vec<String> = vec![
        "sh".into(),
        "-c".into(),
        r#"read line; echo '{"jsonrpc":"2.0","id":1,"result":{"ok":true}}'"#.into(),
    ];
    for run in 0..30 {
        let mut w = Wire::spawn(&through(dir.path(), "faults: []", &server));
        w.send(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
        let v = w.recv_json(10_000).expect("an answer");
        assert_eq!(v["result"]["ok"], true, "run {run}: the real answer: {v}");
        assert!(w.recv(300).is_none(), "run {run}: and nothing else");
        w.close_stdin();
        assert_eq!(w.wait(10).code(), Some(0), "run {run}");
    }
}

/// Wait until stderr holds `needle` (at most 15 s).
fn wait_for_stderr(w: &Wire, needle: &str) -> String {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let text = w.stderr_text();
        if text.contains(needle) {
            return text;
        }
        assert!(
            std::time::Instant::now() < until,
            "no `{needle}` on stderr: {text}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn message(v: &Value) -> String {
    v["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn signal(w: &Wire, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(w.pid() as i32), sig).expect("signal");
}

const KILL_ON_FETCH: &str = "faults:\n  - {id: die, kind: process, action: kill, signal: KILL, tools: [fetch_logs], max_injections: 1, restart: on_failure, restart_backoff_ms: BACKOFF}\n";

#[test]
fn calls_during_a_restart_are_answered_with_an_error_then_the_new_server_serves() {
    let dir = tmp();
    let plan = KILL_ON_FETCH.replace("BACKOFF", "1500");
    let mut w = Wire::spawn(&through(dir.path(), &plan, &fixture()));
    w.send(INIT);
    assert!(w.recv_json(5000).is_some());
    w.send(&tool_call(
        1,
        "fetch_logs",
        json!({"service": "a", "lines": 1}),
    ));
    let died = w.recv_json(5000).expect("the killed call is answered");
    assert!(message(&died).contains("exited before answering"), "{died}");
    wait_for_stderr(&w, "restart 1/5");
    // The new server is not there yet: the call is answered, not lost.
    w.send(&tool_call(2, "echo", json!({"message": "during"})));
    let v = w.recv_json(5000).expect("an answer during the backoff");
    assert_eq!(v["id"], 2, "{v}");
    assert!(message(&v).contains("restarting"), "{v}");
    // After the backoff the new process serves the same session.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut id = 3;
    loop {
        w.send(&tool_call(id, "echo", json!({"message": "after"})));
        let v = w.recv_json(5000).expect("an answer");
        assert_eq!(v["id"], id, "{v}");
        if v.get("result").is_some() {
            assert_eq!(v["result"]["content"][0]["text"], "after");
            break;
        }
        assert!(message(&v).contains("restarting"), "{v}");
        assert!(std::time::Instant::now() < until, "never restarted");
        std::thread::sleep(std::time::Duration::from_millis(200));
        id += 1;
    }
    w.close_stdin();
    assert_eq!(w.wait(15).code(), Some(0));
}

#[test]
fn a_signal_during_the_backoff_stops_brownout_at_once() {
    let (_dir, mut w) = in_a_long_backoff();
    signal(&w, nix::sys::signal::Signal::SIGTERM);
    // Not after the 30 s backoff: well within this bound.
    assert_eq!(w.wait(20).code(), Some(0), "a stop asked for");
}

#[test]
fn a_reloaded_plans_restart_policy_applies() {
    let dir = tmp();
    let never = KILL_ON_FETCH.replace(", restart: on_failure, restart_backoff_ms: BACKOFF", "");
    let mut w = Wire::spawn(&through(dir.path(), &never, &fixture()));
    w.send(INIT);
    assert!(w.recv_json(5000).is_some());
    std::fs::write(
        dir.path().join("plan.yaml"),
        KILL_ON_FETCH.replace("BACKOFF", "100"),
    )
    .expect("write");
    signal(&w, nix::sys::signal::Signal::SIGHUP);
    wait_for_stderr(&w, "plan reloaded");
    w.send(&tool_call(
        1,
        "fetch_logs",
        json!({"service": "a", "lines": 1}),
    ));
    assert!(w.recv_json(5000).is_some());
    wait_for_stderr(&w, "restart 1/5");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut id = 2;
    loop {
        w.send(&tool_call(id, "echo", json!({"message": "back"})));
        let v = w
            .recv_json(5000)
            .expect("brownout is still there to answer");
        if v.get("result").is_some() {
            break;
        }
        assert!(std::time::Instant::now() < until, "never restarted: {v}");
        std::thread::sleep(std::time::Duration::from_millis(100));
        id += 1;
    }
}

#[test]
fn a_server_that_dies_at_start_tells_the_clients_initialize_why() {
    let dir = tmp();
    let server: Vec<String> = vec![
        "sh".into(),
        "-c".into(),
        "echo 'starting' >&2; echo 'fatal: no config at /etc/x.toml' >&2; exit 3".into(),
    ];
    let mut w = Wire::spawn(&through(dir.path(), "faults: []", &server));
    let said = wait_for_stderr(&w, "relaying stdio -> `sh -c");
    assert!(said.contains("(pid "), "{said}");
    // The server is dead (brownout saw it end) before the client's first message.
    wait_for_stderr(&w, "(exit status 3); not restarting");
    w.send(INIT);
    let v = w
        .recv_json(5000)
        .expect("initialize is answered, not left to time out");
    assert_eq!(v["id"], 0, "{v}");
    let m = message(&v);
    assert!(m.contains("exit status 3"), "{m}");
    assert!(m.contains("fatal: no config at /etc/x.toml"), "{m}");
    assert_eq!(w.wait(15).code(), Some(3));
    // The server's own stderr still passes through.
    assert!(
        w.stderr_text().contains("starting\n"),
        "{}",
        w.stderr_text()
    );
}

#[test]
fn a_call_written_before_it_is_recorded_is_still_failed_when_the_server_dies_on_it() {
    // A request no fault can touch (an empty plan, or faults that match other calls) goes
    // to the server before the engine records it (off its path); the record must still
    // come before the server can be seen to die, or the call would be left unanswered. The
    // server reads the call and exits at once, every time, so the race is run again and
    // again.
    let server: Vec<String> = vec![
        "sh".into(),
        "-c".into(),
        r#"read l; echo '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"dies","version":"1"}}}'; read l; read l; exit 4"#.into(),
    ];
    let other_calls = "faults:\n  - {kind: latency, tools: [other], added_ms: 100}\n  - {kind: drop, arguments: {message: never}}\n";
    for round in 0..16 {
        let dir = tmp();
        let plan = if round % 2 == 0 {
            "faults: []"
        } else {
            other_calls
        };
        let mut w = Wire::spawn(&through(dir.path(), plan, &server));
        w.send(INIT);
        let init = w.recv_json(5000).expect("initialize is answered");
        assert_eq!(init["id"], 0, "round {round}: {init}");
        w.send(INITIALIZED);
        w.send(&tool_call(7, "echo", json!({"message": "x"})));
        let v = w
            .recv_json(10_000)
            .unwrap_or_else(|| panic!("round {round}: the call is left unanswered"));
        assert_eq!(v["id"], 7, "round {round}: {v}");
        let m = message(&v);
        assert!(m.contains("exit status 4"), "round {round}: {m}");
        w.close_stdin();
        w.wait(15);
    }
}

#[test]
fn sigint_and_sigterm_stop_the_server_and_exit_0_as_proxy_http_does() {
    for sig in [
        nix::sys::signal::Signal::SIGINT,
        nix::sys::signal::Signal::SIGTERM,
    ] {
        let dir = tmp();
        let mut w = Wire::spawn(&through(dir.path(), "faults: []", &fixture()));
        w.send(INIT);
        assert!(w.recv_json(5000).is_some());
        signal(&w, sig);
        assert_eq!(w.wait(15).code(), Some(0), "{sig}: {}", w.stderr_text());
        assert!(
            w.stderr_text()
                .contains("stopped on a signal; the server ended (killed by SIGTERM)"),
            "{sig}: {}",
            w.stderr_text()
        );
    }
}

#[test]
fn a_client_that_leaves_during_the_backoff_is_not_kept_waiting() {
    let (_dir, mut w) = in_a_long_backoff();
    w.close_stdin();
    // Not after the 30 s backoff; the status is the killed server's.
    assert_eq!(w.wait(20).code(), Some(128 + 9));
}

/// A relay whose server was just killed and now waits out a 30 s restart backoff (its
/// temporary directory lives as long as the returned guard).
fn in_a_long_backoff() -> (tempfile::TempDir, Wire) {
    let dir = tmp();
    let plan = KILL_ON_FETCH.replace("BACKOFF", "60000");
    let mut w = Wire::spawn(&through(dir.path(), &plan, &fixture()));
    w.send(INIT);
    assert!(w.recv_json(5000).is_some());
    w.send(&tool_call(
        1,
        "fetch_logs",
        json!({"service": "a", "lines": 1}),
    ));
    assert!(w.recv_json(5000).is_some());
    wait_for_stderr(&w, "restart 1/5 in 30000ms");
    (dir, w)
}
