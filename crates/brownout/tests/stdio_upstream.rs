//! `brownout proxy stdio --upstream URL` against servers that misbehave: every call is
//! answered (a stream that ends early is resumed, else failed clearly), nothing that is not
//! JSON-RPC reaches the client, POSTs in flight are bounded, and an unreachable upstream is
//! reported at start.

mod common;
#[path = "common/misbehaving.rs"]
mod misbehaving;

use common::{brownout, tool_call, Wire, INIT, INITIALIZED};
use serde_json::{json, Value};
use std::sync::atomic::Ordering;

fn relay(url: &str, extra: &[&str]) -> Wire {
    let mut cmd: Vec<String> = vec![
        brownout().into(),
        "proxy".into(),
        "stdio".into(),
        "--quiet".into(),
        "--upstream".into(),
        url.into(),
    ];
    cmd.extend(extra.iter().map(|s| s.to_string()));
    Wire::spawn(&cmd)
}

fn handshake(w: &mut Wire) {
    w.send(INIT);
    let init = w.recv_json(20_000).expect("an answer to initialize");
    assert_eq!(init["id"], 0, "{init}");
    assert!(init["result"].is_object(), "{init}");
    w.send(INITIALIZED);
}

/// The next line on stdout, which must be JSON.
fn next(w: &Wire, secs: u64) -> Value {
    let line = w
        .recv(secs * 1000)
        .unwrap_or_else(|| panic!("no answer within {secs}s: {}", w.stderr_text()));
    serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON on stdout: {line}"))
}

/// An SSE answer that closes cleanly after an event id, without the response, is resumed
/// with `Last-Event-ID` and the call gets the server's answer.
#[test]
fn a_stream_closed_before_its_answer_is_resumed() {
    let (base, counts) = misbehaving::start();
    let mut w = relay(&format!("{base}/resumable/mcp"), &[]);
    handshake(&mut w);
    w.send(&tool_call(5, "echo", json!({"message": "x"})));
    let a = next(&w, 20);
    assert_eq!(a["id"], 5, "{a}");
    assert_eq!(a["result"]["content"][0]["text"], "resumed answer", "{a}");
    assert_eq!(counts.resumed.load(Ordering::SeqCst), 1);
}

/// A stream closed before its answer with no event id to resume from: the call gets a
/// clear error, never silence.
#[test]
fn a_stream_closed_without_an_event_id_fails_the_call_clearly() {
    let (base, _) = misbehaving::start();
    let mut w = relay(&format!("{base}/eof/mcp"), &[]);
    handshake(&mut w);
    w.send(&tool_call(5, "echo", json!({"message": "x"})));
    let a = next(&w, 20);
    assert_eq!(a["id"], 5, "{a}");
    let msg = a["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("ended the stream before answering"), "{a}");
}

/// A `200 application/json` answer whose body is not JSON: the call gets a JSON-RPC error
/// naming the status and content type; nothing invalid is written to stdout.
#[test]
fn a_json_answer_that_is_not_json_fails_the_call_clearly() {
    let (base, _) = misbehaving::start();
    let mut w = relay(&format!("{base}/not-json/mcp"), &[]);
    handshake(&mut w);
    w.send(&tool_call(5, "echo", json!({"message": "x"})));
    let a = next(&w, 20);
    assert_eq!(a["id"], 5, "{a}");
    let msg = a["error"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("200") && msg.contains("application/json") && msg.contains("not JSON-RPC"),
        "{a}"
    );
}

/// POSTs in flight are bounded by `--max-in-flight`; every call is still answered.
#[test]
fn posts_in_flight_are_bounded() {
    let (base, counts) = misbehaving::start();
    let mut w = relay(&format!("{base}/slow/mcp"), &["--max-in-flight", "2"]);
    handshake(&mut w);
    for id in 1..=5 {
        w.send(&tool_call(id, "echo", json!({"message": "x"})));
    }
    let mut ids: Vec<i64> = (0..5)
        .map(|_| next(&w, 30)["id"].as_i64().unwrap_or(-1))
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, vec![1, 2, 3, 4, 5]);
    assert_eq!(
        counts.max.load(Ordering::SeqCst),
        2,
        "calls in flight at once"
    );
}

/// An upstream nobody listens on is reported at start (one line naming the URL and the
/// error); the relay keeps going and answers each call with an error.
#[test]
fn an_unreachable_upstream_is_reported_at_start() {
    let port = common::http::free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut w = relay(&url, &[]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !w.stderr_text().contains("unreachable") && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let err = w.stderr_text();
    let line = err
        .lines()
        .find(|l| l.contains("unreachable"))
        .unwrap_or_else(|| panic!("no report of the unreachable upstream: {err}"));
    assert!(line.contains(&url), "{line}");
    w.send(INIT);
    let a = next(&w, 20);
    assert_eq!(a["id"], 0, "{a}");
    assert!(
        a["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("cannot connect"),
        "{a}"
    );
}
