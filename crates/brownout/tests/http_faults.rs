//! HTTP-level faults, seen from an HTTP client: statuses with their headers, 429 with
//! Retry-After, refused / reset / stalled connections, slowed, throttled and cut streams,
//! expired sessions. The upstream is a small in-process MCP server that counts the calls
//! it answers, so "the server never saw it" is checked, not assumed.

mod common;

use common::http::{brownout_http, plan_file};
use common::{tmp, upstream};
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

fn init() -> String {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    .to_string()
}

fn call(id: u64, tool: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": {"message": "m"}}})
    .to_string()
}

struct Client {
    http: reqwest::Client,
    url: String,
    session: String,
}

impl Client {
    async fn new(url: &str) -> Client {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(3))
            .build()
            .expect("client");
        let resp = http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(init())
            .send()
            .await
            .expect("initialize");
        let session = resp.headers()["mcp-session-id"]
            .to_str()
            .expect("id")
            .to_string();
        Client {
            http,
            url: url.to_string(),
            session,
        }
    }

    async fn post(&self, body: String) -> Result<reqwest::Response, reqwest::Error> {
        self.post_accepting(body, "application/json, text/event-stream")
            .await
    }

    /// POST as a client that takes only a JSON answer.
    async fn post_json_only(&self, body: String) -> reqwest::Response {
        self.post_accepting(body, "application/json")
            .await
            .expect("answer")
    }

    async fn post_accepting(
        &self,
        body: String,
        accept: &str,
    ) -> Result<reqwest::Response, reqwest::Error> {
        self.http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", accept)
            .header("mcp-session-id", &self.session)
            .body(body)
            .send()
            .await
    }
}

async fn setup(
    plan: &str,
    sse: bool,
) -> (
    common::http::Guard,
    Client,
    std::sync::Arc<std::sync::atomic::AtomicU64>,
    tempfile::TempDir,
) {
    let dir = tmp();
    let plan = plan_file(dir.path(), plan);
    let (url, calls) = upstream::start(sse).await;
    let (relay, through) = brownout_http(&["--upstream", &url, "--plan", &plan, "--quiet"]);
    let client = Client::new(&through).await;
    (relay, client, calls, dir)
}

#[tokio::test]
async fn http_status_answers_with_its_status_and_headers() {
    let (_r, c, calls, _d) = setup(
        "faults:\n  - {kind: http_status, status: 401, tools: [locked], headers: {WWW-Authenticate: 'Bearer realm=\"mcp\"'}}\n",
        false,
    )
    .await;
    let resp = c.post(call(1, "locked")).await.expect("answer");
    assert_eq!(resp.status(), 401);
    assert_eq!(resp.headers()["www-authenticate"], "Bearer realm=\"mcp\"");
    let body: Value = resp.json().await.expect("JSON body");
    assert_eq!(body["id"], 1);
    assert_eq!(calls.load(Ordering::Relaxed), 0, "the server never saw it");
    let ok = c.post(call(2, "open")).await.expect("answer");
    assert_eq!(ok.status(), 200);
    assert_eq!(calls.load(Ordering::Relaxed), 1);
}

#[tokio::test]
async fn rate_limit_is_429_with_retry_after() {
    let (_r, c, calls, _d) = setup(
        "faults:\n  - {kind: rate_limit, rate: 0.2, burst: 2}\n",
        false,
    )
    .await;
    assert_eq!(c.post(call(1, "echo")).await.expect("1").status(), 200);
    assert_eq!(c.post(call(2, "echo")).await.expect("2").status(), 200);
    let limited = c.post(call(3, "echo")).await.expect("3");
    assert_eq!(limited.status(), 429);
    let retry: u64 = limited.headers()["retry-after"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("seconds");
    assert!(
        (1..=5).contains(&retry),
        "one token every 5 s: Retry-After {retry}"
    );
    assert_eq!(calls.load(Ordering::Relaxed), 2);
}

#[tokio::test]
async fn refused_reset_and_stalled_connections() {
    let (_r, c, calls, _d) = setup(
        "faults:\n  - {kind: connection, mode: refuse, tools: [refused]}\n  - {kind: connection, mode: reset, tools: [reset]}\n  - {kind: connection, mode: stall, tools: [stalled]}\n",
        false,
    )
    .await;
    let refused = async { c.post(call(1, "refused")).await?.text().await };
    assert!(refused.await.is_err(), "a refused call gets no answer");
    assert_eq!(
        calls.load(Ordering::Relaxed),
        0,
        "refused: never reached the server"
    );
    let reset = async { c.post(call(2, "reset")).await?.text().await };
    assert!(reset.await.is_err(), "a reset call gets no answer");
    assert_eq!(
        calls.load(Ordering::Relaxed),
        1,
        "reset: the server did the work"
    );
    let started = Instant::now();
    let stalled = c.post(call(3, "stalled")).await;
    assert!(
        stalled.as_ref().err().is_some_and(|e| e.is_timeout()),
        "{stalled:?}"
    );
    assert!(started.elapsed() >= Duration::from_secs(3));
    assert_eq!(
        calls.load(Ordering::Relaxed),
        1,
        "stalled: never reached the server"
    );
    let fine = c.post(call(4, "other")).await.expect("unaffected");
    assert_eq!(fine.status(), 200);
}

#[tokio::test]
async fn slowed_throttled_and_cut_streams() {
    let (_r, c, _calls, _d) = setup(
        "faults:\n  - {kind: slow_stream, gap_ms: 400, tools: [slow]}\n  - {kind: bandwidth, bytes_per_sec: 200, tools: [thin]}\n  - {kind: connection, mode: drop_stream, after_bytes: 10, tools: [cut]}\n",
        true,
    )
    .await;
    let t = Instant::now();
    let slow = c
        .post(call(1, "slow"))
        .await
        .expect("slow")
        .text()
        .await
        .expect("body");
    assert!(slow.contains("\"id\":1"), "{slow}");
    assert!(
        t.elapsed() >= Duration::from_millis(400),
        "waited {:?}",
        t.elapsed()
    );
    let t = Instant::now();
    let thin = c
        .post(call(2, "thin"))
        .await
        .expect("thin")
        .text()
        .await
        .expect("body");
    // ~120 bytes at 200 B/s.
    assert!(thin.len() > 100 && thin.contains("\"id\":2"), "{thin}");
    assert!(
        t.elapsed() >= Duration::from_millis(400),
        "throttled: {:?}",
        t.elapsed()
    );
    let cut = async { c.post(call(3, "cut")).await?.bytes().await };
    match cut.await {
        Err(_) => {}
        Ok(b) => assert!(
            b.len() <= 10,
            "the stream was not cut: {}",
            String::from_utf8_lossy(&b)
        ),
    }
}

#[tokio::test]
async fn an_expired_session_is_404_until_the_client_initializes_again() {
    let (_r, c, calls, _d) = setup(
        "faults:\n  - {kind: session_expiry, after_calls: 2, max_injections: 1}\n",
        false,
    )
    .await;
    assert_eq!(c.post(call(1, "echo")).await.expect("1").status(), 200);
    assert_eq!(c.post(call(2, "echo")).await.expect("2").status(), 200);
    assert_eq!(c.post(call(3, "echo")).await.expect("3").status(), 404);
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    assert_eq!(c.post(note).await.expect("note").status(), 404);
    assert_eq!(c.post(call(4, "echo")).await.expect("4").status(), 404);
    assert_eq!(calls.load(Ordering::Relaxed), 2);
    // A new session works.
    let fresh = Client::new(&c.url).await;
    assert_ne!(fresh.session, c.session);
    assert_eq!(fresh.post(call(5, "echo")).await.expect("5").status(), 200);
}

#[tokio::test]
async fn sse_events_pass_byte_for_byte_and_bad_bytes_stay_bad() {
    let (_r, c, _calls, _d) = setup(
        "faults:\n  - {kind: malformed, mode: invalid_utf8, tools: [bad]}\n",
        true,
    )
    .await;
    // An event as the server wrote it arrives as it was written.
    let body = c
        .post(call(1, "odd"))
        .await
        .expect("odd")
        .bytes()
        .await
        .expect("body");
    let answer = json!({"jsonrpc": "2.0", "id": 1,
        "result": {"content": [{"type": "text", "text": format!("{}:m", c.session)}]}})
    .to_string();
    let expected = upstream::ODD_EVENT.replace("{answer}", &answer);
    assert_eq!(
        String::from_utf8_lossy(&body),
        expected,
        "the event was re-encoded"
    );
    // A fault that breaks UTF-8 reaches the client as bytes that are not UTF-8, in an
    // event that keeps its id.
    let body = c
        .post(call(2, "bad"))
        .await
        .expect("bad")
        .bytes()
        .await
        .expect("body");
    assert!(
        std::str::from_utf8(&body).is_err(),
        "the client got valid UTF-8: {}",
        String::from_utf8_lossy(&body)
    );
    let text = String::from_utf8_lossy(&body);
    assert!(text.contains("id: e1"), "{text}");
}

/// The call events `path` holds (JSON Lines), once `n` of them are there.
fn call_events(path: &std::path::Path, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let calls: Vec<Value> = std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["type"] == "call")
            .collect();
        if calls.len() >= n || Instant::now() > deadline {
            return calls;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test]
async fn latency_is_what_the_client_felt_under_a_slowed_or_throttled_stream() {
    for sse in [true, false] {
        let dir = tmp();
        let plan = plan_file(
            dir.path(),
            "faults:\n  - {kind: slow_stream, gap_ms: 400, tools: [slow]}\n  - {kind: bandwidth, bytes_per_sec: 200, tools: [thin]}\n",
        );
        let events = dir.path().join("events.jsonl");
        let (url, _) = upstream::start(sse).await;
        let ev = events.display().to_string();
        let (_relay, through) = brownout_http(&[
            "--upstream",
            &url,
            "--plan",
            &plan,
            "--quiet",
            "--events",
            &ev,
        ]);
        let c = Client::new(&through).await;
        let mut felt = Vec::new();
        for (id, tool) in [(1, "slow"), (2, "thin")] {
            let t = Instant::now();
            let body = c
                .post(call(id, tool))
                .await
                .expect("answer")
                .text()
                .await
                .expect("body");
            assert!(body.contains(&format!("\"id\":{id}")), "{body}");
            felt.push(t.elapsed());
        }
        let calls = call_events(&events, 3);
        for (id, felt) in [1, 2].into_iter().zip(felt) {
            assert!(
                felt >= Duration::from_millis(300),
                "the client waited {felt:?}"
            );
            let e = calls
                .iter()
                .find(|e| e["id"] == id)
                .unwrap_or_else(|| panic!("no call event for {id}: {calls:?}"));
            let ms = e["latency_ms"].as_f64().unwrap_or(0.0);
            assert!(
                ms >= 300.0,
                "sse {sse}: the client waited {felt:?}, the event says {ms} ms: {e}"
            );
        }
    }
}

#[tokio::test]
async fn a_duplicated_json_answer_reaches_the_client_twice_as_sse() {
    let (_r, c, calls, _d) = setup(
        "faults:\n  - {kind: duplicate, copies: 2, gap_ms: 20, tools: [twice]}\n",
        false,
    )
    .await;
    let resp = c.post(call(1, "twice")).await.expect("answer");
    assert_eq!(resp.status(), 200);
    let ct = resp.headers()["content-type"]
        .to_str()
        .unwrap_or("")
        .to_string();
    let body = resp.text().await.expect("body");
    assert!(ct.starts_with("text/event-stream"), "{ct}: {body}");
    let answers: Vec<Value> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect();
    assert_eq!(answers.len(), 3, "the answer and two copies: {body}");
    assert!(answers.iter().all(|a| a["id"] == 1), "{body}");
    assert_eq!(calls.load(Ordering::Relaxed), 1, "the server answered once");
    // A call no fault touches stays a JSON answer.
    let plain = c.post(call(2, "once")).await.expect("answer");
    assert!(plain.headers()["content-type"]
        .to_str()
        .unwrap_or("")
        .starts_with("application/json"));
    // A client that takes only JSON is never sent SSE.
    let only_json = c.post_json_only(call(3, "twice")).await;
    let ct = only_json.headers()["content-type"]
        .to_str()
        .unwrap_or("")
        .to_string();
    let one: Value = only_json.json().await.expect("one JSON answer");
    assert!(
        ct.starts_with("application/json") && one["id"] == 3,
        "{ct} {one}"
    );
}

#[tokio::test]
async fn stalled_requests_count_against_max_streams() {
    let dir = tmp();
    let plan = plan_file(
        dir.path(),
        "faults:\n  - {id: hold, kind: connection, mode: stall, tools: [stalled]}\n",
    );
    let (url, _) = upstream::start(false).await;
    let (relay, through) = brownout_http(&[
        "--upstream",
        &url,
        "--plan",
        &plan,
        "--quiet",
        "--max-streams",
        "1",
        "--admin",
        "127.0.0.1:0",
    ]);
    let admin = common::http::admin_url(&relay);
    let c = Client::new(&through).await;
    // The first stall holds the one stream there is (the client gives up after 3 s) ...
    let first = tokio::spawn({
        let http = c.http.clone();
        let url = c.url.clone();
        let session = c.session.clone();
        async move {
            http.post(&url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-session-id", session)
                .body(call(1, "stalled"))
                .send()
                .await
        }
    });
    // Held once the stall is counted (the stream is taken in the same step).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let v: Value = reqwest::get(format!("{admin}/status"))
            .await
            .expect("status")
            .json()
            .await
            .expect("JSON");
        if v["summary"]["injections"]["hold"]["count"].as_u64() == Some(1) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the first call never stalled: {v}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // ... so a second one is closed at once instead of held.
    let t = Instant::now();
    let second = c.post(call(2, "stalled")).await;
    assert!(
        second.as_ref().is_err_and(|e| !e.is_timeout()),
        "{second:?} after {:?}",
        t.elapsed()
    );
    let first = first.await.expect("task");
    assert!(first.as_ref().is_err_and(|e| e.is_timeout()), "{first:?}");
}

/// A client that takes only a JSON answer can be sent one message: a `duplicate` fault
/// passes its call by and is not counted; the same call from a client that takes SSE is
/// duplicated and counted.
#[tokio::test]
async fn a_duplicate_a_json_only_client_cannot_get_is_not_counted() {
    let dir = tmp();
    let plan = plan_file(
        dir.path(),
        "faults:\n  - {id: dup, kind: duplicate, copies: 1, tools: [twice]}\n",
    );
    let (url, _calls) = upstream::start(false).await;
    let (relay, through) = brownout_http(&[
        "--upstream",
        &url,
        "--plan",
        &plan,
        "--quiet",
        "--admin",
        "127.0.0.1:0",
    ]);
    let admin = common::http::admin_url(&relay);
    let c = Client::new(&through).await;
    let injected = || async {
        let v: Value = reqwest::get(format!("{admin}/status"))
            .await
            .expect("status")
            .json()
            .await
            .expect("JSON");
        v["summary"]["injections"]["dup"]["count"]
            .as_u64()
            .unwrap_or_else(|| panic!("no count for dup: {v}"))
    };
    let only_json = c.post_json_only(call(1, "twice")).await;
    let one: Value = only_json.json().await.expect("one JSON answer");
    assert_eq!(one["id"], 1, "{one}");
    assert_eq!(
        injected().await,
        0,
        "nothing was duplicated, nothing counted"
    );
    let sse = c.post(call(2, "twice")).await.expect("answer");
    let body = sse.text().await.expect("body");
    assert_eq!(
        body.lines().filter(|l| l.starts_with("data: ")).count(),
        2,
        "{body}"
    );
    assert_eq!(injected().await, 1, "the SSE client got its copy");
}
