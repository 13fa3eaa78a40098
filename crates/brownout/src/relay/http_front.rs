//! The HTTP front: clients reach brownout over streamable HTTP (2025-03-26 … 2026-07-28)
//! or legacy HTTP+SSE (2024-11-05).
//!
//! Every JSON-RPC message a client POSTs passes the engine (as on stdio); the engine's
//! verdict is carried out by a [`Pipe`] toward the back, and HTTP-level actions (status,
//! refuse, reset, stall, stream shaping) are carried out here. Requests, headers (auth
//! included, never logged), status codes, content types, SSE event ids, `retry:` fields
//! and session ids pass untouched unless a fault changes them.
//!
//! Session key: `Mcp-Session-Id`; for legacy HTTP+SSE the endpoint the server announced;
//! otherwise the client's connection. Safety: loopback by default; `Origin` and `Host` are
//! checked against DNS rebinding; bodies, headers and concurrent streams are bounded.

// Early answers of a handler are `Response`s, the axum way; boxing them buys nothing here.
#![allow(clippy::result_large_err)]

use super::child_back::ChildBack;
use super::http::{self, is_sse, relay_error, request_ids, Down, Pacer, Shape, DOWN_DEPTH};
use super::http_back::{describe, own_head, Head, HttpBack, Pump, PumpEnd};
use super::http_serve::Timeouts;
use super::http_sessions::{SessionKeys, LABEL_HEADER};
use super::sse::Event;
use super::sse_stream::SseRelay;
use super::{Pipe, Relay};
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use brownout_core::jsonrpc::{classify, Message};
use brownout_core::verdict::HttpAction;
use brownout_core::Side;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};

/// How long a `connection: stall` fault holds a request before closing it.
const STALL_MAX: Duration = Duration::from_secs(300);

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

fn plain(status: StatusCode, text: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text,
    )
        .into_response()
}

fn json_error(status: StatusCode, body: Vec<u8>) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// A response whose body fails at once: the connection is closed without an answer.
fn abort(why: &'static str) -> Response {
    let stream = futures::stream::once(async move {
        Err::<Bytes, _>(std::io::Error::new(
            std::io::ErrorKind::ConnectionAborted,
            why,
        ))
    });
    Response::new(Body::from_stream(stream))
}

/// Hold a request without answering (a stall fault, an answer a fault dropped), counted
/// against `--max-streams` like any open stream: with no room left (`permit` is `None`) the
/// connection is closed at once instead.
async fn stall(permit: Option<OwnedSemaphorePermit>) -> Response {
    if permit.is_some() {
        tokio::time::sleep(STALL_MAX).await;
    }
    abort("stalled (fault)")
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
    let who = Who { wire, key };
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
        (Back::Child(child), Method::GET) => child.open_stream(&front, &headers).await,
        (Back::Child(child), Method::DELETE) => child.delete(&headers).await,
        (Back::Child(_), _) => plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "brownout: the MCP endpoint takes POST, GET and DELETE".into(),
        ),
    }
}

impl Front {
    /// DNS-rebinding protection and the header-size limit.
    fn guard(&self, headers: &HeaderMap) -> Result<(), Response> {
        let size: usize = headers
            .iter()
            .map(|(k, v)| k.as_str().len() + v.len() + 4)
            .sum();
        if size > self.opts.max_header_bytes {
            return Err(plain(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                format!(
                    "brownout: request headers of {size} bytes are over the limit of {} bytes",
                    self.opts.max_header_bytes
                ),
            ));
        }
        let id_len = headers
            .get("mcp-session-id")
            .map_or(0, |v| v.len())
            .max(headers.get(LABEL_HEADER).map_or(0, |v| v.len()));
        if id_len > MAX_SESSION_ID {
            return Err(plain(
                StatusCode::BAD_REQUEST,
                format!(
                    "brownout: a session id or label of {id_len} bytes is over the limit of {MAX_SESSION_ID}"
                ),
            ));
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("");
            let allowed = is_loopback_origin(origin)
                || self
                    .opts
                    .allowed_origins
                    .iter()
                    .any(|o| o == "*" || o.eq_ignore_ascii_case(origin));
            if !allowed {
                return Err(plain(
                    StatusCode::FORBIDDEN,
                    format!(
                        "brownout: Origin `{origin}` is not allowed (allow it with --allow-origin)"
                    ),
                ));
            }
        }
        if self.loopback || !self.opts.allowed_hosts.is_empty() {
            let host = headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("");
            let name = host_name(host);
            let allowed = is_loopback_name(name)
                || self.opts.allowed_hosts.iter().any(|h| {
                    h == "*" || h.eq_ignore_ascii_case(name) || h.eq_ignore_ascii_case(host)
                });
            if !allowed {
                return Err(plain(
                    StatusCode::MISDIRECTED_REQUEST,
                    format!("brownout: Host `{host}` is not allowed (allow it with --allow-host)"),
                ));
            }
        }
        Ok(())
    }

    fn session_key(&self, headers: &HeaderMap, path: &str, peer: &SocketAddr) -> String {
        if let Some(id) = headers.get("mcp-session-id").and_then(|v| v.to_str().ok()) {
            return id.to_string();
        }
        if self.legacy_stream(path).is_some() {
            return legacy_key(path);
        }
        format!("conn:{peer}")
    }

    fn legacy_stream(&self, path: &str) -> Option<mpsc::Sender<Down>> {
        self.legacy
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(path)
            .cloned()
    }

    fn stream_permit(&self) -> Result<OwnedSemaphorePermit, Response> {
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

    /// One POSTed body: a JSON-RPC message or batch (through the engine), or anything else
    /// (passed on untouched, for the server to judge).
    async fn post(
        self: &Arc<Self>,
        who: Who,
        path: String,
        headers: HeaderMap,
        body: Vec<u8>,
    ) -> Response {
        if matches!(classify(&body), Message::Invalid(_)) {
            return match &self.back {
                Back::Http(back) => self.raw(back, Method::POST, path, headers, body).await,
                Back::Child(_) => json_error(
                    StatusCode::BAD_REQUEST,
                    relay_error(None, "brownout: the body is not a JSON-RPC message"),
                ),
            };
        }
        let legacy = self.legacy_stream(&path);
        let owed = request_ids(&body);
        let sse_ok = http::accepts_sse(&headers);
        let (key, child_session) = match &self.back {
            Back::Child(child) => match child.session_for(&headers, &body) {
                Ok((s, new)) => (s.id().to_string(), Some((s, new))),
                Err(r) => return r,
            },
            Back::Http(_) => (who.key.clone(), None),
        };
        let new_session = match &self.back {
            Back::Http(_) => match self.admit(&who) {
                Ok(true) => Some(NewSession {
                    keys: Arc::clone(&self.keys),
                    wire: who.wire.clone(),
                }),
                Ok(false) => None,
                Err(r) => return r,
            },
            Back::Child(_) => None,
        };
        let v = self.relay.handle(Side::Client, &key, &body);
        let mut shape = Shape {
            stream: v.stream.clone().unwrap_or_default(),
            reset: false,
        };
        match v.http.clone() {
            Some(HttpAction::Status {
                code,
                headers,
                body,
            }) => return status_response(code, &headers, body),
            Some(HttpAction::Refuse) => return abort("refused (fault)"),
            Some(HttpAction::Stall) => return stall(self.stream_permit().ok()).await,
            Some(HttpAction::Reset) => shape.reset = true,
            None => {}
        }
        if v.is_pass() && legacy.is_none() {
            if let Back::Http(back) = &self.back {
                let call = Call {
                    key,
                    path,
                    headers,
                    body,
                    owed,
                    new_session,
                };
                return self.pass_post(back, call).await;
            }
        }
        let (down_tx, down_rx) = mpsc::channel::<Down>(DOWN_DEPTH);
        let (up_tx, up_rx) = mpsc::channel::<Vec<u8>>(16);
        let (head_tx, head_rx) = oneshot::channel::<Head>();
        // Legacy HTTP+SSE answers on the client's stream, never in the POST's body.
        let answers = legacy.clone().unwrap_or_else(|| down_tx.clone());
        let expects_answer = !owed.is_empty() && legacy.is_none();
        let mut process = None;
        match (&self.back, child_session) {
            (Back::Child(child), Some((session, new))) => {
                let (head, p) =
                    child.exchange(&session, new, &headers, &owed, up_rx, answers.clone());
                let _ = head_tx.send(head);
                process = Some(p);
            }
            (Back::Http(back), _) => {
                let exchange = Exchange {
                    relay: Arc::clone(&self.relay),
                    back: Arc::clone(back),
                    key: key.clone(),
                    path,
                    headers,
                    owed: if legacy.is_some() { Vec::new() } else { owed },
                    pace: v.stream.clone(),
                    new_session,
                };
                tokio::spawn(exchange.run(up_rx, head_tx, down_tx.clone()));
            }
            (Back::Child(_), None) => return abort("no session"),
        }
        Pipe::new(up_tx, answers, process).execute(v, body).await;
        drop(down_tx);
        let permit = self.stream_permit().ok();
        respond(head_rx, down_rx, expects_answer, shape, permit, sse_ok).await
    }

    /// The common case, kept short: no fault touched the request, so it goes up as it is;
    /// a JSON answer no fault touches comes back as it is, without a task or a queue.
    async fn pass_post(&self, back: &Arc<HttpBack>, call: Call) -> Response {
        let Call {
            key,
            path,
            headers,
            body,
            owed,
            new_session,
        } = call;
        let mut pump = Pump {
            relay: Arc::clone(&self.relay),
            key,
            down: super::http_back::dead_end(),
            owed,
            max_body: back.max_body,
            on_endpoint: None,
            resumable: false,
            pace: None,
        };
        let sse_ok = http::accepts_sse(&headers);
        let mut resp = match back.send(Method::POST, &path, headers, body).await {
            Ok(r) => r,
            Err(e) => {
                let (tx, rx) = mpsc::channel(DOWN_DEPTH);
                pump.down = tx;
                pump.fail_owed(&describe(&e)).await;
                drop(pump);
                return respond_own(rx, Shape::default()).await;
            }
        };
        let head = Head {
            status: resp.status(),
            headers: resp.headers().clone(),
        };
        let json = head.status.is_success() && http::is_json(&head.headers);
        if json {
            let mut bytes = Vec::new();
            loop {
                match resp.chunk().await {
                    Ok(Some(c)) if bytes.len() + c.len() <= back.max_body => {
                        bytes.extend_from_slice(&c)
                    }
                    Ok(Some(_)) => {
                        let (tx, rx) = mpsc::channel(DOWN_DEPTH);
                        pump.down = tx;
                        pump.fail_owed("the upstream MCP server's answer is over --max-body-bytes")
                            .await;
                        drop(pump);
                        return respond_own(rx, Shape::default()).await;
                    }
                    Ok(None) => break,
                    Err(e) => {
                        let (tx, rx) = mpsc::channel(DOWN_DEPTH);
                        pump.down = tx;
                        pump.fail_owed(&describe(&e)).await;
                        drop(pump);
                        return respond_own(rx, Shape::default()).await;
                    }
                }
            }
            let v = self.relay.handle(Side::Server, &pump.key, &bytes);
            if v.is_pass() {
                return response(head, Body::from(bytes));
            }
            let (tx, rx) = mpsc::channel::<Down>(DOWN_DEPTH);
            http::execute_down(v, bytes, None, &tx).await;
            drop(tx);
            let (head_tx, head_rx) = oneshot::channel();
            let _ = head_tx.send(head);
            let permit = self.stream_permit().ok();
            let expects = !pump.owed.is_empty();
            return respond(head_rx, rx, expects, Shape::default(), permit, sse_ok).await;
        }
        if is_sse(&head.headers) && head.status.is_success() {
            let permit = self.stream_permit().ok();
            let st = SseRelay::new(
                Arc::clone(&self.relay),
                pump.key.clone(),
                resp,
                std::mem::take(&mut pump.owed),
                back.max_body,
                permit,
            );
            return response(head, st.into_body());
        }
        // Anything else passes as bytes.
        let (tx, rx) = mpsc::channel::<Down>(DOWN_DEPTH);
        pump.down = tx;
        let status = head.status;
        tokio::spawn(async move {
            match pump.run(resp).await {
                PumpEnd::Failed(why) => pump.fail_owed(&why).await,
                _ => refused(&mut pump, status, new_session),
            }
        });
        response(head, http::body(rx, false, Shape::default()))
    }

    /// Whether a session may be served: `Ok(true)` for one the engine does not know yet,
    /// `Err(503)` when that would be more than `--max-sessions`.
    fn admit(&self, who: &Who) -> Result<bool, Response> {
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

    /// GET, DELETE and other methods to a server at a URL: passed on; an SSE answer (the
    /// server's stream, or a legacy `/sse` stream) passes the engine event by event.
    async fn forward(
        self: &Arc<Self>,
        back: &Arc<HttpBack>,
        method: Method,
        who: Who,
        path: String,
        headers: HeaderMap,
    ) -> Response {
        if method != Method::GET {
            let ends = method == Method::DELETE;
            let r = self.raw(back, method, path, headers, Vec::new()).await;
            if ends && r.status().is_success() {
                self.relay.end_session(&who.key);
                self.keys.forget(&who.wire);
            }
            return r;
        }
        let key = who.key;
        // A GET is a stream: counted before it reaches the server.
        let permit = match self.stream_permit() {
            Ok(p) => p,
            Err(r) => return r,
        };
        let resp = match back.send(Method::GET, &path, headers, Vec::new()).await {
            Ok(r) => r,
            Err(e) => {
                return plain(
                    StatusCode::BAD_GATEWAY,
                    format!("brownout: {}", describe(&e)),
                )
            }
        };
        let head = Head {
            status: resp.status(),
            headers: resp.headers().clone(),
        };
        if !(head.status.is_success() && is_sse(&head.headers)) {
            return self.pass_answer(head, resp, key);
        }
        let st = SseRelay::new(
            Arc::clone(&self.relay),
            key,
            resp,
            Vec::new(),
            back.max_body,
            Some(permit),
        );
        let registered: Arc<Mutex<Option<String>>> = Arc::default();
        let hook = {
            let legacy = Arc::clone(&self.legacy);
            let side = st.side_sender();
            let back = Arc::clone(back);
            let registered = Arc::clone(&registered);
            let keys = Arc::clone(&self.keys);
            move |ev: &mut Event| -> Option<String> {
                let endpoint = String::from_utf8_lossy(ev.data.as_deref()?).into_owned();
                let local = local_endpoint(&back, endpoint.trim())?;
                if local != endpoint {
                    *ev = ev.with_data(local.as_bytes());
                }
                if let Some(side) = &side {
                    legacy
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(local.clone(), side.clone());
                }
                *registered.lock().unwrap_or_else(|p| p.into_inner()) = Some(local.clone());
                Some(keys.key(&legacy_key(&local), None))
            }
        };
        let legacy = Arc::clone(&self.legacy);
        let keys = Arc::clone(&self.keys);
        let st = st.on_endpoint(Box::new(hook)).on_end(Box::new(move || {
            let local = registered.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(local) = local {
                keys.forget(&legacy_key(&local));
                legacy
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&local);
            }
        }));
        response(head, st.into_body())
    }

    /// Pass a request and its answer on untouched.
    async fn raw(
        &self,
        back: &Arc<HttpBack>,
        method: Method,
        path: String,
        headers: HeaderMap,
        body: Vec<u8>,
    ) -> Response {
        match back.send(method, &path, headers, body).await {
            Ok(resp) => {
                let head = Head {
                    status: resp.status(),
                    headers: resp.headers().clone(),
                };
                self.pass_answer(head, resp, String::new())
            }
            Err(e) => plain(
                StatusCode::BAD_GATEWAY,
                format!("brownout: {}", describe(&e)),
            ),
        }
    }

    fn pass_answer(&self, head: Head, mut resp: reqwest::Response, _key: String) -> Response {
        let (tx, rx) = mpsc::channel::<Down>(16);
        tokio::spawn(async move {
            while let Ok(Some(c)) = resp.chunk().await {
                if tx.send(Down::Chunk(c)).await.is_err() {
                    break;
                }
            }
        });
        response(head, http::body(rx, false, Shape::default()))
    }
}

/// A POST no fault touched, on its way to a server at a URL.
struct Call {
    key: String,
    path: String,
    headers: HeaderMap,
    body: Vec<u8>,
    owed: Vec<brownout_core::jsonrpc::Id>,
    /// The engine knew nothing of this session before this POST.
    new_session: Option<NewSession>,
}

/// Who a request comes from: the session's identity on the wire, and the engine's stable
/// key for it (see [`super::http_sessions`]).
struct Who {
    wire: String,
    key: String,
}

/// A session this POST opened: forgotten if the server refuses it.
struct NewSession {
    keys: Arc<SessionKeys>,
    wire: String,
}

/// The server answered a POST with a status other than 2xx: calls it did not answer are
/// recorded as failed, and a session it refuses (4xx) that this POST opened is forgotten,
/// so ids a client makes up cost nothing.
fn refused(pump: &mut Pump, status: StatusCode, new_session: Option<NewSession>) {
    if status.is_success() {
        return;
    }
    pump.resolve_owed(status);
    if let Some(new) = new_session.filter(|_| status.is_client_error()) {
        pump.relay.end_session(&pump.key);
        new.keys.forget(&new.wire);
    }
}

/// One POST to a server at a URL: each message the client's POST turned into (one, or
/// more under a `duplicate` fault) is sent; the first answer's head becomes the client's.
struct Exchange {
    relay: Arc<Relay>,
    back: Arc<HttpBack>,
    key: String,
    path: String,
    headers: HeaderMap,
    owed: Vec<brownout_core::jsonrpc::Id>,
    /// How the client's answer is shaped (its pace is the latency the client feels).
    pace: Option<brownout_core::verdict::StreamShape>,
    /// The engine knew nothing of this session before this POST.
    new_session: Option<NewSession>,
}

impl Exchange {
    async fn run(
        mut self,
        mut up: mpsc::Receiver<Vec<u8>>,
        head: oneshot::Sender<Head>,
        down: mpsc::Sender<Down>,
    ) {
        let mut head = Some(head);
        while let Some(msg) = up.recv().await {
            let mut pump = Pump {
                relay: Arc::clone(&self.relay),
                key: self.key.clone(),
                down: down.clone(),
                owed: self.owed.clone(),
                max_body: self.back.max_body,
                on_endpoint: None,
                resumable: false,
                pace: self.pace.as_ref().and_then(Pacer::new),
            };
            let first = head.is_some();
            match self
                .back
                .send(Method::POST, &self.path, self.headers.clone(), msg)
                .await
            {
                Err(e) => {
                    if first {
                        pump.fail_owed(&describe(&e)).await;
                        head = None;
                    }
                }
                Ok(resp) => {
                    let status = resp.status();
                    let sse = is_sse(resp.headers());
                    if let Some(h) = head.take() {
                        let _ = h.send(Head {
                            status,
                            headers: resp.headers().clone(),
                        });
                    }
                    let new_session = if first { self.new_session.take() } else { None };
                    let work = async move {
                        match pump.run(resp).await {
                            PumpEnd::Failed(why) => pump.fail_owed(&why).await,
                            PumpEnd::Done if !status.is_success() => {
                                refused(&mut pump, status, new_session)
                            }
                            // A stream that ends before its answer is fine when the client
                            // can resume it (it was given an event id); else it is a failure.
                            PumpEnd::Done if sse && status.is_success() && !pump.resumable => {
                                pump.fail_owed(
                                    "the upstream MCP server ended the stream before answering",
                                )
                                .await
                            }
                            _ => {}
                        }
                    };
                    if first {
                        work.await;
                    } else {
                        tokio::spawn(work);
                    }
                }
            }
        }
    }
}

/// brownout's own answer (an error for a request the server could not answer).
async fn respond_own(rx: mpsc::Receiver<Down>, shape: Shape) -> Response {
    let (_, head_rx) = oneshot::channel::<Head>();
    respond(head_rx, rx, false, shape, None, false).await
}

/// Build the client's answer: the server's head (or brownout's own) and a shaped body.
/// A JSON answer a fault made into several messages (a `duplicate`) is answered as SSE
/// when the client takes SSE (`sse_ok`), so every copy is delivered.
async fn respond(
    head_rx: oneshot::Receiver<Head>,
    mut down_rx: mpsc::Receiver<Down>,
    expects_answer: bool,
    shape: Shape,
    permit: Option<OwnedSemaphorePermit>,
    sse_ok: bool,
) -> Response {
    let head = head_rx.await.ok();
    let Some(head) = head else {
        // Not forwarded: brownout answers itself, or (a dropped request) never does.
        return match down_rx.recv().await {
            Some(first) => {
                let (tx, rx) = mpsc::channel(1);
                let _ = tx.try_send(first);
                drop(tx);
                response(
                    own_head(StatusCode::OK, "application/json"),
                    http::body(rx, false, shape),
                )
            }
            None if expects_answer => stall(permit).await,
            None => StatusCode::ACCEPTED.into_response(),
        };
    };
    if head.status.is_success() && is_sse(&head.headers) {
        let body = http::body(down_rx, true, shape);
        let body = match permit {
            Some(p) => hold_permit(body, p),
            None => body,
        };
        return response(head, body);
    }
    if head.status.is_success() && http::is_json(&head.headers) {
        // One message is the whole body; a dropped answer leaves the client waiting.
        let first = loop {
            match down_rx.recv().await {
                Some(item) if item.message().is_some() => break Some(item),
                Some(_) => continue,
                None => break None,
            }
        };
        let Some(first) = first else {
            return if shape.reset {
                abort("connection reset (fault)")
            } else if expects_answer {
                stall(permit).await
            } else {
                response(head, Body::empty())
            };
        };
        if sse_ok && matches!(first, Down::Event(_)) {
            let mut head = head;
            head.headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            );
            let body = http::body(http::prepend(first, down_rx), true, shape);
            let body = match permit {
                Some(p) => hold_permit(body, p),
                None => body,
            };
            return response(head, body);
        }
        let (tx, rx) = mpsc::channel(1);
        let _ = tx.try_send(Down::Msg(
            first.message().map(<[u8]>::to_vec).unwrap_or_default(),
        ));
        drop(tx);
        return response(head, http::body(rx, false, shape));
    }
    response(head, http::body(down_rx, false, Shape::default()))
}

fn hold_permit(body: Body, permit: OwnedSemaphorePermit) -> Body {
    use futures::StreamExt;
    let stream = body.into_data_stream().map(move |c| {
        let _ = &permit;
        c
    });
    Body::from_stream(stream)
}

fn response(mut head: Head, body: Body) -> Response {
    http::strip_hop_headers(&mut head.headers);
    let mut r = Response::new(body);
    *r.status_mut() = head.status;
    *r.headers_mut() = head.headers;
    r
}

fn status_response(code: u16, headers: &[(String, String)], body: Vec<u8>) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    for (k, v) in headers {
        if let (Ok(k), Ok(v)) = (
            header::HeaderName::from_bytes(k.as_bytes()),
            HeaderValue::from_str(v),
        ) {
            r.headers_mut().append(k, v);
        }
    }
    if !r.headers().contains_key(header::CONTENT_TYPE) {
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
    }
    r
}

fn legacy_key(endpoint: &str) -> String {
    format!("sse:{endpoint}")
}

/// The endpoint a legacy client should post to, on brownout: a URL on the server's origin
/// becomes its path and query (which the client resolves against brownout); a relative one
/// stays as it is. A URL on another origin is left alone (and not relayed).
fn local_endpoint(back: &HttpBack, endpoint: &str) -> Option<String> {
    if endpoint.starts_with('/') {
        return Some(endpoint.to_string());
    }
    if back.same_origin(endpoint) {
        let u = reqwest::Url::parse(endpoint).ok()?;
        return Some(match u.query() {
            Some(q) => format!("{}?{q}", u.path()),
            None => u.path().to_string(),
        });
    }
    None
}

fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    host.rsplit_once(':').map_or(host, |(h, _)| h)
}

fn is_loopback_name(name: &str) -> bool {
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn is_loopback_origin(origin: &str) -> bool {
    reqwest::Url::parse(origin)
        .ok()
        .and_then(|u| u.host_str().map(|h| h.trim_matches(['[', ']']).to_string()))
        .is_some_and(|h| is_loopback_name(&h))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_and_loopback() {
        assert_eq!(host_name("127.0.0.1:8080"), "127.0.0.1");
        assert_eq!(host_name("[::1]:80"), "::1");
        assert_eq!(host_name("localhost"), "localhost");
        assert!(is_loopback_name("localhost"));
        assert!(is_loopback_name("::1"));
        assert!(!is_loopback_name("evil.example"));
        assert!(is_loopback_origin("http://localhost:3000"));
        assert!(is_loopback_origin("http://[::1]:3000"));
        assert!(!is_loopback_origin("https://evil.example"));
    }
}
