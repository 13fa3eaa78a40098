//! A minimal streamable-HTTP MCP server inside the test process, for load tests that need
//! an upstream faster than any real one: `initialize` (with a session id), notifications
//! (202), `tools/call` of `echo` (answers `<session>:<message>`, so a misrouted answer is
//! visible) and of `headers` (answers the request headers it received), as JSON or as one
//! SSE event. `tools/call` of `odd` always answers with an SSE event as some servers write
//! them ([`ODD_EVENT`]: an unknown field, no space after colons, CRLF, a comment).
#![allow(dead_code)]

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The event `odd` answers with; `{answer}` stands for the JSON-RPC answer.
pub const ODD_EVENT: &str = "id:e7\r\nfoo:  bar\r\nevent:message\ndata:{answer}\n:c\n\n";

#[derive(Clone)]
struct State {
    sse: bool,
    sessions: Arc<AtomicU64>,
    calls: Arc<AtomicU64>,
}

/// Start the server on a free loopback port in the current runtime; returns its URL and
/// the counter of calls it answered.
pub async fn start(sse: bool) -> (String, Arc<AtomicU64>) {
    let state = State {
        sse,
        sessions: Arc::new(AtomicU64::new(0)),
        calls: Arc::new(AtomicU64::new(0)),
    };
    let calls = Arc::clone(&state.calls);
    let app = Router::new().route("/mcp", post(handle)).with_state(state);
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}/mcp"), calls)
}

async fn handle(
    axum::extract::State(s): axum::extract::State<State>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Ok(msg) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    let Some(id) = msg.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let session = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let (result, new_session) = match msg["method"].as_str() {
        Some("initialize") => {
            let n = s.sessions.fetch_add(1, Ordering::Relaxed) + 1;
            (
                json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                       "serverInfo": {"name": "test-upstream", "version": "1"}}),
                Some(format!("s{n}")),
            )
        }
        Some("tools/call") if msg["params"]["name"] == "headers" => {
            // What the server received: proves which headers a relay passed on.
            let seen: serde_json::Map<String, Value> = headers
                .iter()
                .map(|(k, v)| (k.as_str().to_string(), json!(v.to_str().unwrap_or(""))))
                .collect();
            (
                json!({"content": [{"type": "text", "text": "headers"}], "structuredContent": seen}),
                None,
            )
        }
        Some("tools/call") => {
            s.calls.fetch_add(1, Ordering::Relaxed);
            let text = format!(
                "{session}:{}",
                msg["params"]["arguments"]["message"].as_str().unwrap_or("")
            );
            (json!({"content": [{"type": "text", "text": text}]}), None)
        }
        _ => (json!({}), None),
    };
    let answer = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
    let mut r = if msg["params"]["name"] == "odd" {
        (
            [("content-type", "text/event-stream")],
            ODD_EVENT.replace("{answer}", &answer),
        )
            .into_response()
    } else if s.sse {
        (
            [("content-type", "text/event-stream")],
            format!("event: message\nid: e1\ndata: {answer}\n\n"),
        )
            .into_response()
    } else {
        ([("content-type", "application/json")], answer).into_response()
    };
    if let Some(id) = new_session {
        if let Ok(v) = id.parse() {
            r.headers_mut().insert("mcp-session-id", v);
        }
    }
    r
}
