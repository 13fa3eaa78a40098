//! The reference proxy: what any process in the middle built on brownout's stack costs.
//! A hyper server (axum) on a default multi-thread runtime, like brownout's; each request is
//! forwarded with reqwest (keep-alive pool) with its body and the MCP headers; the answer's
//! status and MCP headers come back with the body: a JSON body whole, an SSE body streamed
//! as it comes. No JSON parsing, no engine.

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;

const UP: [&str; 5] = [
    "content-type",
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];
const DOWN: [&str; 3] = ["content-type", "cache-control", "mcp-session-id"];

pub fn main(upstream: String) -> ! {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(1024)
            .build()
            .expect("client");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("address");
        // The line brownout prints, so the bench starts both the same way.
        eprintln!("brownout: relaying http://{addr}/mcp -> {upstream}");
        let app = Router::new()
            .route("/mcp", axum::routing::any(forward))
            .with_state((http, upstream));
        use axum::serve::ListenerExt;
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let _ = axum::serve(listener, app).await;
    });
    std::process::exit(0)
}

async fn forward(
    axum::extract::State((http, upstream)): axum::extract::State<(reqwest::Client, String)>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut req = http.request(method, &upstream).body(body);
    for name in UP {
        if let Some(v) = headers.get(name) {
            req = req.header(name, v);
        }
    }
    let resp = match req.send().await {
        Ok(r) => r,
        Err(e) => return (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    };
    let mut out = Response::builder().status(resp.status());
    for name in DOWN {
        if let Some(v) = resp.headers().get(name) {
            out = out.header(name, v);
        }
    }
    let sse = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !sse {
        // A whole JSON answer, passed on with its length, as brownout does.
        return match resp.bytes().await {
            Ok(b) => out
                .body(Body::from(b))
                .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response()),
            Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
        };
    }
    let chunks = futures::stream::unfold(Some(resp), |r| async move {
        let mut r = r?;
        match r.chunk().await {
            Ok(Some(c)) => Some((Ok(c), Some(r))),
            Ok(None) => None,
            Err(e) => Some((Err(e), None)),
        }
    });
    out.body(Body::from_stream(chunks))
        .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response())
}
