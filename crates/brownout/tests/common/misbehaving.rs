//! A streamable-HTTP MCP server that misbehaves on purpose, for `proxy stdio --upstream`
//! tests. It runs on its own thread (so blocking tests can drive brownout beside it) and
//! answers `initialize` normally; what a `tools/call` gets depends on the URL's first path
//! segment:
//!
//! - `/resumable/mcp`: an SSE answer whose only event is a priming event with an id, then
//!   the stream closes; a GET with that `Last-Event-ID` brings the response.
//! - `/eof/mcp`: an SSE answer that closes without the response and without an event id.
//! - `/not-json/mcp`: `200 application/json` with an HTML body.
//! - `/slow/mcp`: the response after 600 ms, counting the calls in flight at once.
#![allow(dead_code)]

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Calls in flight now, and the most seen at once (`/slow`).
#[derive(Default)]
pub struct Counts {
    pub now: AtomicU64,
    pub max: AtomicU64,
    pub resumed: AtomicU64,
}

/// Start the server; returns its base URL (`http://127.0.0.1:PORT`) and its counters.
pub fn start() -> (String, Arc<Counts>) {
    let counts = Arc::new(Counts::default());
    let state = Arc::clone(&counts);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        rt.block_on(async move {
            let app = Router::new()
                .route("/{mode}/mcp", any(handle))
                .with_state(state);
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let addr = listener.local_addr().expect("addr");
            let _ = tx.send(addr);
            let _ = axum::serve(listener, app).await;
        });
    });
    let addr = rx.recv().expect("the server's address");
    (format!("http://{addr}"), counts)
}

fn sse(body: String) -> Response {
    ([("content-type", "text/event-stream")], body).into_response()
}

fn result(id: &Value, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}]}})
}

async fn handle(
    State(counts): State<Arc<Counts>>,
    Path(mode): Path<String>,
    method: axum::http::Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if method == axum::http::Method::GET {
        let last = headers
            .get("last-event-id")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("call-"));
        return match (mode.as_str(), last) {
            ("resumable", Some(id)) => {
                counts.resumed.fetch_add(1, Ordering::SeqCst);
                let id: Value = serde_json::from_str(id).unwrap_or(Value::Null);
                sse(format!(
                    "id: done\ndata: {}\n\n",
                    result(&id, "resumed answer")
                ))
            }
            _ => StatusCode::METHOD_NOT_ALLOWED.into_response(),
        };
    }
    if method == axum::http::Method::DELETE {
        return StatusCode::OK.into_response();
    }
    let Ok(msg) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    let Some(id) = msg.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    if msg["method"] == "initialize" {
        let answer = json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
            "serverInfo": {"name": "misbehaving", "version": "1"}}});
        return (
            [
                ("content-type", "application/json"),
                ("mcp-session-id", "s-1"),
            ],
            answer.to_string(),
        )
            .into_response();
    }
    match mode.as_str() {
        "resumable" => sse(format!("id: call-{id}\ndata: \n\n")),
        "eof" => sse(": nothing to say\n\n".to_string()),
        "not-json" => (
            [("content-type", "application/json")],
            "<html><body>502 Bad Gateway</body></html>",
        )
            .into_response(),
        _ => {
            let now = counts.now.fetch_add(1, Ordering::SeqCst) + 1;
            counts.max.fetch_max(now, Ordering::SeqCst);
            // The server's own slowness (what the tests measure concurrency with).
            tokio::time::sleep(Duration::from_millis(600)).await;
            counts.now.fetch_sub(1, Ordering::SeqCst);
            (
                [("content-type", "application/json")],
                result(&id, "slow answer").to_string(),
            )
                .into_response()
        }
    }
}
