//! The HTTP front: clients reach brownout over streamable HTTP (2025-03-26 … 2026-07-28)
//! or legacy HTTP+SSE (2024-11-05).
//!
//! Every JSON-RPC message a client POSTs passes the engine (as on stdio); the engine's
//! verdict is carried out by a [`super::Pipe`] toward the back, and HTTP-level actions
//! (status, refuse, reset, stall, stream shaping) are carried out here. Requests, headers
//! (auth included, never logged), status codes, content types, SSE event ids, `retry:`
//! fields and session ids pass untouched unless a fault changes them.
//!
//! This file holds the front, its options and the dispatch of requests; by concern:
//! [`guard`] (DNS rebinding, header limits), [`post`] (POSTed messages, through the engine),
//! [`forward`] (GET, DELETE and legacy streams), [`answer`] (the client's answer).
//!
//! Session key: see [`super::http_sessions`]. Safety: loopback by default; `Origin` and
//! `Host` are checked against DNS rebinding; bodies, headers, sessions and concurrent streams
//! are bounded; slow clients time out ([`super::http_serve`]).

// Early answers of a handler are `Response`s, the axum way; boxing them buys nothing here.
#![allow(clippy::result_large_err)]

mod answer;
mod forward;
mod guard;
mod post;

use super::child_back::ChildBack;
use super::http::{self, Down, Shape};
use super::http_back::{Head, HttpBack};
use super::http_serve::Timeouts;
use super::http_sessions::{SessionKeys, LABEL_HEADER};
use super::{relay_error, Relay};
use answer::{hold_permit, json_error, plain, response};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use axum::Router;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};

/// A session's wire identity unused this long is forgotten (the engine forgets idle
/// sessions after ten minutes).
const KEY_IDLE: Duration = Duration::from_secs(660);

/// Longest `Mcp-Session-Id` accepted (400 beyond): room for a UUID, a hash or a JWT.
pub const MAX_SESSION_ID: usize = 1024;

/// Where the front sends what clients say.
pub enum Back {
    /// A server at a URL.
    Http(Arc<HttpBack>),
    /// A stdio server started per session.
    Child(Arc<ChildBack>),
}

/// Limits and safety settings of the front listener.
#[derive(Debug, Clone)]
pub struct FrontOptions {
    pub max_body: usize,
    pub max_header_bytes: usize,
    pub max_streams: usize,
    /// Most sessions the engine keeps state for, behind a server at a URL (503 beyond).
    pub max_sessions: usize,
    /// Extra `Origin` values allowed besides loopback ones (`*` allows any).
    pub allowed_origins: Vec<String>,
    /// Extra `Host` names allowed besides loopback ones (`*` allows any).
    pub allowed_hosts: Vec<String>,
    /// How long streams in flight may take to finish on SIGTERM.
    pub grace: Duration,
    /// Header, body and idle timeouts of client connections.
    pub timeouts: Timeouts,
}

impl Default for FrontOptions {
    fn default() -> Self {
        FrontOptions {
            max_body: super::framing::DEFAULT_MAX_MESSAGE,
            max_header_bytes: 64 * 1024,
            max_streams: 4096,
            max_sessions: 10_000,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            grace: Duration::from_secs(10),
            timeouts: Timeouts::default(),
        }
    }
}

pub struct Front {
    relay: Arc<Relay>,
    back: Back,
    opts: FrontOptions,
    /// Whether the listener is on loopback (then `Host` must name loopback too).
    loopback: bool,
    streams: Arc<Semaphore>,
    /// Legacy HTTP+SSE: the endpoint each open `/sse` stream announced → that stream.
    legacy: Arc<Mutex<HashMap<String, mpsc::Sender<Down>>>>,
    /// Stable engine keys for sessions behind a URL.
    keys: Arc<SessionKeys>,
}

impl Front {
    pub fn new(relay: Arc<Relay>, back: Back, opts: FrontOptions, listen: &SocketAddr) -> Front {
        Front {
            relay,
            back,
            streams: Arc::new(Semaphore::new(opts.max_streams)),
            opts,
            loopback: listen.ip().is_loopback(),
            legacy: Arc::new(Mutex::new(HashMap::new())),
            keys: Arc::new(SessionKeys::new()),
        }
    }
}

/// Bind `listen` and serve until `stop` resolves; then stop accepting and give streams in
/// flight `grace` to finish. Returns the bound address (through `bound`) as soon as known.
pub async fn serve(
    front: Arc<Front>,
    listen: SocketAddr,
    bound: oneshot::Sender<SocketAddr>,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {listen}: {e}"))?;
    let _ = bound.send(listener.local_addr()?);
    let grace = front.opts.grace;
    // Calls never answered and sessions long idle are given up on (see `Engine::expire`).
    {
        let relay = Arc::clone(&front.relay);
        let keys = Arc::clone(&front.keys);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                relay.expire();
                keys.reap(KEY_IDLE);
            }
        });
    }
    let timeouts = front.opts.timeouts;
    let router = Router::new().fallback(handle).with_state(front);
    super::http_serve::serve(listener, router, timeouts, grace, stop).await
}

async fn handle(
    State(front): State<Arc<Front>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    req: Request,
) -> Response {
    if let Err(r) = front.guard(req.headers()) {
        return r;
    }
    let (parts, body) = req.into_parts();
    let method = parts.method;
    let path = parts
        .uri
        .path_and_query()
        .map_or_else(|| "/".to_string(), |p| p.as_str().to_string());
    let mut headers = parts.headers;
    // brownout's own header: read, never passed on.
    let label = headers
        .remove(LABEL_HEADER)
        .and_then(|v| v.to_str().ok().map(str::to_string));
    let wire = front.session_key(&headers, &path, &peer);
    let key = match &front.back {
        Back::Http(_) => front.keys.key(&wire, label.as_deref()),
        Back::Child(_) => wire.clone(),
    };
    let who = Who { wire, key, label };
    match (&front.back, method) {
        (_, Method::POST) => {
            let read = axum::body::to_bytes(body, front.opts.max_body);
            let body = match tokio::time::timeout(front.opts.timeouts.body, read).await {
                Ok(Ok(b)) => b,
                Err(_) => {
                    let msg = format!(
                        "brownout: the request body did not arrive within {} s (--body-timeout)",
                        front.opts.timeouts.body.as_secs_f64()
                    );
                    return json_error(StatusCode::REQUEST_TIMEOUT, relay_error(None, &msg));
                }
                Ok(Err(_)) => {
                    let msg = format!(
                        "brownout: request body over the limit of {} bytes (--max-body-bytes)",
                        front.opts.max_body
                    );
                    return json_error(StatusCode::PAYLOAD_TOO_LARGE, relay_error(None, &msg));
                }
            };
            front.post(who, path, headers, body.to_vec()).await
        }
        (Back::Http(back), method) => front.forward(back, method, who, path, headers).await,
        (Back::Child(child), Method::GET) => match child.open_stream(&headers) {
            Ok((head, rx)) => front.stream_response(head, rx),
            Err(r) => r,
        },
        (Back::Child(child), Method::DELETE) => child.delete(&headers).await,
        (Back::Child(_), _) => plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "brownout: the MCP endpoint takes POST, GET and DELETE".into(),
        ),
    }
}

impl Front {
    fn session_key(&self, headers: &HeaderMap, path: &str, peer: &SocketAddr) -> String {
        if let Some(id) = headers.get("mcp-session-id").and_then(|v| v.to_str().ok()) {
            return id.to_string();
        }
        if self.legacy_stream(path).is_some() {
            return legacy_key(path);
        }
        format!("conn:{peer}")
    }

    pub(super) fn legacy_stream(&self, path: &str) -> Option<mpsc::Sender<Down>> {
        self.legacy
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(path)
            .cloned()
    }

    pub(super) fn stream_permit(&self) -> Result<OwnedSemaphorePermit, Response> {
        Arc::clone(&self.streams).try_acquire_owned().map_err(|_| {
            plain(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "brownout: {} concurrent streams are open, the limit (--max-streams)",
                    self.opts.max_streams
                ),
            )
        })
    }

    /// Whether a session may be served: `Ok(true)` for one the engine does not know yet,
    /// `Err(503)` when that would be more than `--max-sessions`.
    pub(super) fn admit(&self, who: &Who) -> Result<bool, Response> {
        let (known, count) = self.relay.session_state(&who.key);
        if !known && count >= self.opts.max_sessions {
            self.keys.forget(&who.wire);
            return Err(json_error(
                StatusCode::SERVICE_UNAVAILABLE,
                relay_error(
                    None,
                    &format!("brownout: {count} sessions are open, the limit (--max-sessions)"),
                ),
            ));
        }
        Ok(!known)
    }

    /// An SSE answer brownout makes itself (the stdio back's GET stream).
    pub fn stream_response(&self, head: Head, rx: mpsc::Receiver<Down>) -> Response {
        match self.stream_permit() {
            Ok(p) => response(head, hold_permit(http::body(rx, true, Shape::default()), p)),
            Err(r) => r,
        }
    }
}

/// Who a request comes from: the session's identity on the wire, and the engine's stable
/// key for it (see [`super::http_sessions`]).
pub(super) struct Who {
    wire: String,
    key: String,
    /// The client's `Brownout-Session` label, if it sent one.
    label: Option<String>,
}

pub(super) fn legacy_key(endpoint: &str) -> String {
    format!("sse:{endpoint}")
}
