//! The HTTP front under pressure and over runs: slow and idle clients are cut off, GET
//! streams count against --max-streams, and the same seed replays the same faults over HTTP
//! (by a session's label or order of arrival), behind a URL and over a stdio server.

mod common;

use common::http::{brownout_http, everything_http, first_message, open_session, plan_file};
use common::{fixture, tmp, upstream};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Read from `s` until the peer closes it (or `limit` passes); returns what came and
/// whether it was closed.
fn read_until_closed(s: &mut std::net::TcpStream, limit: Duration) -> (String, bool) {
    use std::io::Read;
    let _ = s.set_read_timeout(Some(limit));
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return (String::from_utf8_lossy(&got).into_owned(), true),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return (String::from_utf8_lossy(&got).into_owned(), true)
            }
            Err(_) => return (String::from_utf8_lossy(&got).into_owned(), false),
        }
    }
}

// Blocking reads below: the in-process upstream needs a thread of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_idle_clients_are_disconnected() {
    use std::io::Write;
    let (url, _) = upstream::start(false).await;
    let (_relay, through) = brownout_http(&[
        "--upstream",
        &url,
        "--quiet",
        "--header-timeout",
        "1",
        "--body-timeout",
        "1",
        "--idle-timeout",
        "2",
    ]);
    let addr = through
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap_or("")
        .to_string();
    let bound = Duration::from_secs(15);
    // Half a header, then nothing: closed within the bound.
    let mut half = std::net::TcpStream::connect(&addr).expect("connect");
    half.write_all(format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ").as_bytes())
        .expect("write");
    let t = Instant::now();
    let (_, closed) = read_until_closed(&mut half, bound);
    assert!(
        closed,
        "a half-sent header kept its connection for {:?}",
        t.elapsed()
    );
    // A connection that sends nothing at all: closed too.
    let mut mute = std::net::TcpStream::connect(&addr).expect("connect");
    let (_, closed) = read_until_closed(&mut mute, bound);
    assert!(closed, "a silent connection was kept");
    // A body that never completes: 408.
    let mut slow_body = std::net::TcpStream::connect(&addr).expect("connect");
    slow_body
        .write_all(format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\"").as_bytes())
        .expect("write");
    let (got, _) = read_until_closed(&mut slow_body, bound);
    assert!(got.starts_with("HTTP/1.1 408"), "{got}");
    // A kept-alive connection with nothing to do is closed; a request on it first works.
    let mut idle = std::net::TcpStream::connect(&addr).expect("connect");
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    idle.write_all(
        format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{ping}", ping.len())
            .as_bytes(),
    )
    .expect("write");
    let t = Instant::now();
    let (got, closed) = read_until_closed(&mut idle, bound);
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    assert!(
        closed && t.elapsed() >= Duration::from_secs(1),
        "idle for {:?}",
        t.elapsed()
    );
}

/// One sequential client session through `url`: initialize, then `n` echo calls; returns
/// the ids of the calls that came back with an error.
async fn errored_calls(url: &str, n: u64, label: Option<&str>) -> Vec<u64> {
    let http = reqwest::Client::new();
    let post = |body: Value, session: Option<String>| {
        let mut r = http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(s) = session {
            r = r.header("mcp-session-id", s);
        }
        if let Some(l) = label {
            r = r.header("brownout-session", l);
        }
        r.body(body.to_string()).send()
    };
    let init = post(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        None,
    )
    .await
    .expect("initialize");
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .expect("id")
        .to_string();
    let _ = init.text().await;
    post(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        Some(session.clone()),
    )
    .await
    .expect("initialized");
    let mut errored = Vec::new();
    for id in 1..=n {
        let body = post(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": "echo", "arguments": {"message": "hi"}}}),
            Some(session.clone()),
        )
        .await
        .expect("call")
        .text()
        .await
        .expect("body");
        let answer = first_message(&body);
        assert_eq!(answer["id"], id, "{body}");
        if answer.get("error").is_some() {
            errored.push(id);
        }
    }
    errored
}

#[tokio::test]
async fn http_runs_with_the_same_seed_replay_the_same_faults() {
    let (_server, url) = everything_http("streamableHttp");
    let dir = tmp();
    let plan = plan_file(
        dir.path(),
        "seed: 11\nfaults:\n  - {kind: error, tools: [echo], probability: 0.5}\n",
    );
    let mut runs = Vec::new();
    for label in [None, None, Some("worker-1"), Some("worker-1")] {
        // The server issues a new random session id each run.
        let (_relay, through) = brownout_http(&["--upstream", &url, "--plan", &plan, "--quiet"]);
        runs.push(errored_calls(&through, 40, label).await);
    }
    assert!(
        !runs[0].is_empty() && runs[0].len() < 40,
        "a probability of 0.5 faulted {:?}",
        runs[0]
    );
    assert_eq!(runs[0], runs[1], "by order of arrival");
    assert_eq!(runs[2], runs[3], "by label");
}

/// The same with a stdio server per session (`proxy http -- CMD`): the engine keys a session
/// by its label or order of arrival, not by the random id brownout gives it on the wire.
#[tokio::test]
async fn http_runs_over_a_stdio_server_replay_the_same_faults() {
    let dir = tmp();
    let plan = plan_file(
        dir.path(),
        "seed: 11\nfaults:\n  - {kind: error, tools: [echo], probability: 0.5}\n",
    );
    let mut runs = Vec::new();
    for label in [None, None, Some("worker-1"), Some("worker-1")] {
        let mut args = vec![
            "--plan".to_string(),
            plan.clone(),
            "--quiet".into(),
            "--".into(),
        ];
        args.extend(fixture());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (_relay, through) = brownout_http(&args);
        runs.push(errored_calls(&through, 40, label).await);
    }
    assert!(
        !runs[0].is_empty() && runs[0].len() < 40,
        "a probability of 0.5 faulted {:?}",
        runs[0]
    );
    assert_eq!(runs[0], runs[1], "by order of arrival");
    assert_eq!(runs[2], runs[3], "by label");
    assert_ne!(runs[0], runs[2], "a label is a session of its own");
}

#[tokio::test]
async fn get_streams_count_against_max_streams() {
    let (_server, url) = everything_http("streamableHttp");
    let (_relay, through) = brownout_http(&["--upstream", &url, "--quiet", "--max-streams", "1"]);
    let http = reqwest::Client::new();
    let session = open_session(&http, &through).await;
    let get = || {
        http.get(&through)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &session)
            .send()
    };
    let first = get().await.expect("first stream");
    assert_eq!(first.status(), 200);
    let second = get().await.expect("an answer");
    assert_eq!(
        second.status(),
        503,
        "a second GET stream past --max-streams 1"
    );
    drop(first);
}
