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
