//! A minimal MCP streamable-HTTP server: `initialize` (with `Mcp-Session-Id`),
//! notifications (202), `tools/list` (one tool, `echo`), `tools/call` of `echo` (answers the
//! `message` argument), `ping`; answers JSON or one SSE event. GET opens an SSE stream that
//! stays open (nothing is ever sent on it). Requests after `initialize` without a session id
//! are refused (400), so a relay that loses the header shows.

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use futures::StreamExt;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

#[derive(Clone)]
struct State {
    sse: bool,
    sessions: Arc<AtomicU64>,
    events: Arc<AtomicU64>,
    open_streams: Arc<AtomicI64>,
}

pub struct Upstream {
    pub url: String,
    /// GET streams open right now.
    pub open_streams: Arc<AtomicI64>,
}

/// Bind a free loopback port and serve on `rt`.
pub fn start(rt: &tokio::runtime::Runtime, sse: bool) -> Upstream {
    let state = State {
        sse,
        sessions: Arc::default(),
        events: Arc::default(),
        open_streams: Arc::default(),
    };
    let open_streams = Arc::clone(&state.open_streams);
    let app = Router::new()
        .route("/mcp", axum::routing::any(handle))
        .with_state(state);
    let listener = rt
        .block_on(tokio::net::TcpListener::bind(SocketAddr::from((
            [127, 0, 0, 1],
            0,
        ))))
        .expect("bind the upstream");
    let addr = listener.local_addr().expect("upstream address");
    rt.spawn(async move {
        use axum::serve::ListenerExt;
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let _ = axum::serve(listener, app).await;
    });
    Upstream {
        url: format!("http://{addr}/mcp"),
        open_streams,
    }
}

/// Counts an open GET stream for as long as it lives.
struct Open(Arc<AtomicI64>);
impl Drop for Open {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

async fn handle(
    axum::extract::State(s): axum::extract::State<State>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let session = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    if method == Method::GET {
        if session.is_none() {
            return (StatusCode::BAD_REQUEST, "no session").into_response();
        }
        s.open_streams.fetch_add(1, Ordering::Relaxed);
        let open = Open(Arc::clone(&s.open_streams));
        let stream = futures::stream::pending::<Result<Bytes, std::io::Error>>().map(move |x| {
            let _ = &open;
            x
        });
        return (
            [
                ("content-type", "text/event-stream"),
                ("cache-control", "no-cache"),
            ],
            Body::from_stream(stream),
        )
            .into_response();
    }
    if method == Method::DELETE {
        return StatusCode::OK.into_response();
    }
    if method != Method::POST {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    let Ok(msg) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    let m = msg.get("method").and_then(Value::as_str).unwrap_or("");
    if m != "initialize" && session.is_none() {
        return (StatusCode::BAD_REQUEST, "no Mcp-Session-Id").into_response();
    }
    let Some(id) = msg.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response(); // a notification or a response
    };
    let mut new_session = None;
    let answer = match m {
        "initialize" => {
            let n = s.sessions.fetch_add(1, Ordering::Relaxed) + 1;
            new_session = Some(n.to_string());
            json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": super::PROTOCOL,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "bench-upstream", "version": "1"}}})
        }
        "tools/list" => json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [{
            "name": "echo", "description": "Echo the message.",
            "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}},
                            "required": ["message"]}}]}}),
        "tools/call" => {
            let text = msg["params"]["arguments"]["message"].clone();
            json!({"jsonrpc": "2.0", "id": id,
                   "result": {"content": [{"type": "text", "text": text}]}})
        }
        "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
        _ => json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32601, "message": "method not found"}}),
    };
    let answer = answer.to_string();
    let mut r = if s.sse {
        let n = s.events.fetch_add(1, Ordering::Relaxed) + 1;
        (
            [
                ("content-type", "text/event-stream"),
                ("cache-control", "no-cache"),
            ],
            format!("event: message\nid: {n}\ndata: {answer}\n\n"),
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
