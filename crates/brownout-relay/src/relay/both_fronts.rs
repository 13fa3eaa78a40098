//! One back per kind of server serves both fronts: the same back type, behind the stdio
//! front and behind the HTTP front, gives a client the same answers — for a server at a URL
//! ([`UrlBack`]) and for a server as a child process ([`ChildBack`]), faults included.

use super::child::ChildSpec;
use super::child_back::ChildBack;
use super::http_back::Upstream;
use super::http_front::{self, Front, FrontOptions};
use super::layers::Back;
use super::url_back::UrlBack;
use super::{stdio, Relay, RelayOptions};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use brownout_core::Plan;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// A plan whose fault answers every call of tool `broken` with an error, before the server
/// sees it.
const PLAN: &str = r#"
seed: 7
faults:
  - id: broken-tool
    kind: error
    tools: ["broken"]
    probability: 1
    phase: request
    code: -32603
    message: "broken on purpose"
"#;

/// What the client says: `initialize` first (alone: the session starts with its answer),
/// then the rest.
const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const REST: [&str; 3] = [
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}"#,
    r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"broken","arguments":{}}}"#,
];

/// Answers owed: to ids 1, 2 and 3.
const OWED: usize = 3;

/// The answer a test server gives to request `v`: its method, and the session it came in.
fn echo(v: &Value, session: Option<&str>) -> Value {
    json!({"jsonrpc": "2.0", "id": v["id"], "result": {"method": v["method"], "session": session}})
}

/// A server at a URL that answers each request with [`echo`]; `initialize` opens session
/// `s-1`.
async fn url_server() -> String {
    async fn mcp(headers: HeaderMap, body: axum::body::Bytes) -> axum::response::Response {
        let Ok(v) = serde_json::from_slice::<Value>(&body) else {
            return StatusCode::BAD_REQUEST.into_response();
        };
        if v.get("id").is_none() {
            return StatusCode::ACCEPTED.into_response();
        }
        let session = headers.get("mcp-session-id").and_then(|h| h.to_str().ok());
        let answer = echo(&v, session).to_string();
        let mut r = ([("content-type", "application/json")], answer).into_response();
        if v["method"] == "initialize" {
            r.headers_mut().insert(
                "mcp-session-id",
                axum::http::HeaderValue::from_static("s-1"),
            );
        }
        r
    }
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let app = axum::Router::new().route("/mcp", axum::routing::post(mcp));
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/mcp")
}

/// A stdio server that answers each request with [`echo`] (no session).
fn child_server() -> ChildSpec {
    let script = r#"
import json, sys
for line in sys.stdin:
    v = json.loads(line)
    if "id" in v:
        print(json.dumps({"jsonrpc": "2.0", "id": v["id"], "result": {"method": v["method"], "session": None}}), flush=True)
"#;
    ChildSpec {
        program: "python3".into(),
        args: vec!["-c".into(), script.into()],
    }
}

fn relay_for(driver: super::Driver) -> Arc<Relay> {
    let opts = RelayOptions {
        driver,
        ..RelayOptions::default()
    };
    let plan = Plan::from_str_named(PLAN, "plan.yaml").expect("plan");
    Arc::new(Relay::new(plan, &opts, None))
}

/// The answers a stdio client gets through `back`, by id.
async fn through_stdio<B: Back>(back: Arc<B>, relay: Arc<Relay>) -> BTreeMap<u64, Value> {
    let (mut client_in, input) = tokio::io::duplex(1 << 16);
    let (output, client_out) = tokio::io::duplex(1 << 16);
    let run = tokio::spawn(stdio::run_with(back, relay, 1 << 20, input, output));
    let mut lines = BufReader::new(client_out).lines();
    let mut answers = BTreeMap::new();
    client_in
        .write_all(format!("{INIT}\n").as_bytes())
        .await
        .expect("write");
    next_answer(&mut lines, &mut answers).await;
    for m in REST {
        client_in
            .write_all(format!("{m}\n").as_bytes())
            .await
            .expect("write");
    }
    while answers.len() < OWED {
        next_answer(&mut lines, &mut answers).await;
    }
    drop(client_in);
    let code = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("ends when its input does")
        .expect("joined")
        .expect("ran");
    assert_eq!(code, 0, "the session ended cleanly");
    answers
}

/// Read the next answer the stdio client gets.
async fn next_answer(
    lines: &mut tokio::io::Lines<BufReader<tokio::io::DuplexStream>>,
    answers: &mut BTreeMap<u64, Value>,
) {
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("an answer within 30 s")
        .expect("readable")
        .expect("a line");
    let v: Value = serde_json::from_str(&line).expect("JSON");
    answers.insert(v["id"].as_u64().expect("an answer"), v);
}

/// The answers an HTTP client gets through `back`, by id (it keeps the session id it is
/// given, as a client does).
async fn through_http<B: Back>(back: Arc<B>, relay: Arc<Relay>) -> BTreeMap<u64, Value> {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let local = listener.local_addr().expect("addr");
    let front = Arc::new(Front::new(relay, back, FrontOptions::default(), &local));
    let running = http_front::start(front, listener).expect("start");
    let client = reqwest::Client::new();
    let mut session: Option<String> = None;
    let mut answers = BTreeMap::new();
    for m in std::iter::once(INIT).chain(REST) {
        let mut req = client
            .post(format!("http://{local}/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(m);
        if let Some(s) = &session {
            req = req.header("mcp-session-id", s);
        }
        let r = req.send().await.expect("through the relay");
        assert!(r.status().is_success(), "{m}: HTTP {}", r.status());
        if let Some(s) = r.headers().get("mcp-session-id") {
            session = Some(s.to_str().expect("text").to_string());
        }
        let body = r.text().await.expect("body");
        if !body.is_empty() {
            let v: Value = serde_json::from_str(&body).expect("JSON");
            answers.insert(v["id"].as_u64().expect("an answer"), v);
        }
    }
    running.stop().await.expect("stopped");
    answers
}

fn check(stdio: &BTreeMap<u64, Value>, http: &BTreeMap<u64, Value>, session: Value) {
    assert_eq!(stdio.len(), OWED, "{stdio:?}");
    assert_eq!(stdio, http, "the same answers through either front");
    assert_eq!(stdio[&2]["result"]["method"], "tools/call");
    assert_eq!(stdio[&2]["result"]["session"], session);
    assert_eq!(
        stdio[&3]["error"]["message"], "broken on purpose",
        "the fault acts behind both fronts: {:?}",
        stdio[&3]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn one_url_back_type_serves_the_stdio_front_and_the_http_front_alike() {
    let url = url_server().await;
    let back = |relay: &Arc<Relay>| {
        let up = Upstream::new(&url, 1 << 20).expect("url");
        Arc::new(UrlBack::new(Arc::clone(relay), Arc::new(up), 16))
    };
    let relay = relay_for(stdio::driver::<UrlBack>());
    let stdio = through_stdio(back(&relay), relay).await;
    let relay = relay_for(http_front::driver::<UrlBack>());
    let http = through_http(back(&relay), relay).await;
    // Behind the stdio front brownout holds the session the server gave, as the HTTP
    // client does itself.
    check(&stdio, &http, json!("s-1"));
}

#[tokio::test(flavor = "current_thread")]
async fn one_child_back_type_serves_the_stdio_front_and_the_http_front_alike() {
    let back = |relay: &Arc<Relay>| {
        let idle = Duration::from_secs(60);
        Arc::new(ChildBack::new(
            child_server(),
            Arc::clone(relay),
            1 << 20,
            4,
            idle,
        ))
    };
    let relay = relay_for(stdio::driver::<ChildBack>());
    let stdio = through_stdio(back(&relay), relay).await;
    let relay = relay_for(http_front::driver::<ChildBack>());
    let http = through_http(back(&relay), relay).await;
    check(&stdio, &http, Value::Null);
}
