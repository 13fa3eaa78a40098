//! The HTTP front: clients reach brownout over streamable HTTP (2025-03-26 … 2026-07-28)
//! or legacy HTTP+SSE (2024-11-05), whatever the back.
//!
//! Every JSON-RPC message a client POSTs passes the engine (as on stdio); the engine's
//! verdict is carried out by a [`super::Pipe`] toward the back, and HTTP-level actions
//! (status, refuse, reset, stall, stream shaping) are carried out here. Requests, headers
//! (auth included, never logged), status codes, content types, SSE event ids, `retry:`
//! fields and session ids pass untouched unless a fault changes them.
//!
//! [`Front`] is generic over its back, an [`Back`]: [`super::url_back`] (`--upstream`)
//! or [`super::child_back`] (`-- CMD`). This file holds the front, its options, serving
//! ([`serve`], [`start`]) and the dispatch of requests; by concern: [`guard`] (DNS
//! rebinding, header limits), [`post`] (POSTed messages, through the engine). The client's
//! answer is built by [`super::http_answer`].
//!
//! Safety: loopback by default; `Origin` and `Host` are checked against DNS rebinding;
//! bodies, headers, sessions and concurrent streams are bounded; slow clients time out
//! ([`super::http_serve`]).

// Early answers of a handler are `Response`s, the axum way; boxing them buys nothing here.
#![allow(clippy::result_large_err)]

mod guard;
mod post;
#[cfg(test)]
mod tests;

use super::head::{Headers, Method};
use super::http_answer::{into_response, json_error, Streams};
use super::http_serve::Timeouts;
use super::http_sessions::LABEL;
use super::layers::{self, Back, Layer, Request};
use super::{relay_error, Driver, Relay};
use axum::extract::{ConnectInfo, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Router;
use brownout_core::Capability;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Longest `Mcp-Session-Id` accepted (400 beyond): room for a UUID, a hash or a JWT.
pub const MAX_SESSION_ID: usize = 1024;

/// The HTTP front: many clients, one answer per request; it can deliver several messages
/// for one (as SSE), pass one on more than once, and shape the stream of an answer.
pub const FRONT: Layer = Layer {
    name: "proxy http",
    can: &[
        Capability::MultipleAnswers,
        Capability::MultipleRequests,
        Capability::ShapeStreams,
    ],
};

/// `proxy http` with the back `B`: what it is called and what it can carry out.
pub fn driver<B: Back>() -> Driver {
    layers::driver(FRONT, B::LAYER)
}

/// Limits and safety settings of the front listener.
#[derive(Debug, Clone)]
pub struct FrontOptions {
    pub max_body: usize,
    pub max_header_bytes: usize,
    pub max_streams: usize,
    /// Most open client connections (see [`super::http_serve`]: at the cap an idle one
    /// makes room, or the new one is closed).
    pub max_connections: usize,
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
            max_connections: 1024,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            grace: Duration::from_secs(10),
            timeouts: Timeouts::default(),
        }
    }
}

/// The HTTP front joined to its back `B`.
pub struct Front<B> {
    relay: Arc<Relay>,
    back: Arc<B>,
    opts: FrontOptions,
    /// Whether the listener is on loopback (then `Host` must name loopback too).
    loopback: bool,
    streams: Streams,
}

impl<B: Back> Front<B> {
    /// The front of `relay` before `back`, listening on `listen` (only whether it is a
    /// loopback address matters here).
    pub fn new(relay: Arc<Relay>, back: Arc<B>, opts: FrontOptions, listen: &SocketAddr) -> Self {
        Front {
            relay,
            back,
            streams: Streams::new(opts.max_streams),
            opts,
            loopback: listen.ip().is_loopback(),
        }
    }
}

/// Bind `listen` and serve until `stop` resolves (see [`serve_on`]). Returns the bound
/// address (through `bound`) as soon as known.
pub async fn serve<B: Back>(
    front: Arc<Front<B>>,
    listen: SocketAddr,
    bound: oneshot::Sender<SocketAddr>,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {listen}: {e}"))?;
    let _ = bound.send(listener.local_addr()?);
    serve_on(front, listener, stop).await
}

/// Serve on `listener` until `stop` resolves; then stop accepting, give streams in flight
/// the grace period to finish, and stop the back (its server processes).
pub async fn serve_on<B: Back>(
    front: Arc<Front<B>>,
    listener: TcpListener,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let grace = front.opts.grace;
    // Calls never answered and sessions long idle are given up on (see `Engine::expire`).
    let expiry = {
        let relay = Arc::clone(&front.relay);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                relay.expire();
            }
        })
    };
    let timeouts = front.opts.timeouts;
    let max_connections = front.opts.max_connections.max(1);
    let back = Arc::clone(&front.back);
    let router = Router::new().fallback(handle::<B>).with_state(front);
    let served =
        super::http_serve::serve_capped(listener, router, timeouts, max_connections, grace, stop)
            .await;
    expiry.abort();
    back.stop().await;
    served
}

/// An HTTP relay running on its own task (see [`start`]).
pub struct Running {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<anyhow::Result<()>>,
}

impl Running {
    /// Where clients reach it.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stop it as SIGTERM does (no new connections, the grace period for streams in
    /// flight, the back's processes stopped) and wait until it has.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        self.task.await?
    }
}

/// Serve `front` on `listener` on a task of its own: the in-process way to run an HTTP
/// relay (tests, experiments). The relay's summary is [`Relay::finish`], after
/// [`Running::stop`].
pub fn start<B: Back>(front: Arc<Front<B>>, listener: TcpListener) -> std::io::Result<Running> {
    let addr = listener.local_addr()?;
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let task = tokio::spawn(serve_on(front, listener, async move {
        let _ = stop_rx.await;
    }));
    Ok(Running {
        addr,
        stop: Some(stop_tx),
        task,
    })
}

async fn handle<B: Back>(
    State(front): State<Arc<Front<B>>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    req: axum::extract::Request,
) -> Response {
    if let Err(r) = front.guard(req.headers()) {
        return r;
    }
    let (parts, body) = req.into_parts();
    let method = Method::from_name(parts.method.as_str());
    let path = parts
        .uri
        .path_and_query()
        .map_or_else(|| "/".to_string(), |p| p.as_str().to_string());
    let mut headers = parts.headers;
    // brownout's own header: read, never passed on.
    let label = headers
        .remove(LABEL.header())
        .and_then(|v| v.to_str().ok().map(str::to_string));
    let headers = Headers::from(headers);
    let who = front.back.who(&headers, &path, &peer, label);
    if method != Method::Post {
        let req = Request {
            method,
            path,
            headers,
            body: Vec::new(),
        };
        return into_response(front.back.request(&front.streams, who, req).await).await;
    }
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
    // The body's own buffer when it is not shared (no copy), else a copy.
    front.post(who, path, headers, Vec::from(body)).await
}
