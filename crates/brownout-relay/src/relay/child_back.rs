//! The stdio back behind the HTTP front: a stdio-only MCP server, served over streamable
//! HTTP with faults (`brownout proxy http -- CMD`).
//!
//! Each `initialize` starts one server process and one session (`Mcp-Session-Id`); the
//! process's lines pass the engine under that session's key. Answers are routed to the
//! POST that asked (see [`super::child_session`]); other server messages (notifications,
//! requests) go to the session's GET stream, else to an open SSE answer. When the process
//! dies, every request in flight gets a clear error and the session ends (the client sees
//! 404 and initializes again). DELETE, an idle session (`--session-idle`) and shutdown
//! stop the process: SIGTERM, then SIGKILL if it is still there after a grace period.
//! Timed `process` faults (`at_ms`) hit every session's process alive at that run time.
//!
//! [`ChildBack`] is the front's [`HttpBack`]: a POST joins its session (or starts one with
//! `initialize`); GET opens the session's stream; DELETE ends it; there is no short way
//! for an untouched POST (its answer is routed like any other).

// Early answers of a handler are `Response`s, the axum way; boxing them buys nothing here.
#![allow(clippy::result_large_err)]

use super::child::{describe, terminate, ChildSpec, ProcessHandle, ServerProcess};
use super::child_session::{duplicate_id_error, ChildSession, Route};
use super::framing::{spawn_writer, Frame, LineReader};
use super::http::{request_ids, Down, Head};
use super::http_answer::{json_error, plain, Streams};
use super::layers::{self, Exchange, HttpBack, Joined as JoinedPost, Layer, Post, Request};
use super::{dead_end, relay_error, to_duration, Pipe, Relay, OUTBOX_DEPTH};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use brownout_core::jsonrpc::{classify, Id, Kind, Message};
use brownout_core::Side;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once, Weak};
use std::time::Duration;
use tokio::io::BufReader;
use tokio::sync::{mpsc, watch};

/// How long a session's server gets to exit after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Routes older than this are given up on (the engine's pending TTL).
const ROUTE_TTL: Duration = Duration::from_secs(600);

pub struct ChildBack {
    spec: ChildSpec,
    relay: Arc<Relay>,
    max_message: usize,
    /// Most sessions (server processes) at once.
    max_sessions: usize,
    /// A session idle this long is ended and its process stopped.
    idle: Duration,
    sessions: Mutex<HashMap<String, Arc<ChildSession>>>,
    /// Sessions started so far: the next one's order of arrival.
    arrived: AtomicU64,
    keeper: Once,
    /// The server's name when the relay fronts several (`brownout_core::session_key`).
    namespace: Option<String>,
}

/// A POST joined to its session: the session, whether it was just started, and the ids
/// of its requests, reserved until the POST's answer channel is known.
pub struct Joined {
    session: Arc<ChildSession>,
    new: bool,
    post: u64,
    ids: Vec<Id>,
    opened: bool,
}

impl Joined {
    /// The engine's key for the session (stable across runs), not its wire id.
    pub fn key(&self) -> &str {
        self.session.key()
    }
}

impl Drop for Joined {
    fn drop(&mut self) {
        if !self.opened {
            self.session.unreserve(self.post);
            // The `initialize` that made this session never reached its server (a fault
            // refused or answered it): the client has no session id, so nobody could ever
            // end it. End it now, or each refused `initialize` holds a process until
            // `--session-idle` and fills `--max-sessions`.
            if self.new {
                self.session.stop.notify_one();
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn json_answer(status: StatusCode, body: Vec<u8>) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn not_found() -> Response {
    json_answer(
        StatusCode::NOT_FOUND,
        relay_error(
            None,
            "brownout: no such session (it ended); initialize again",
        ),
    )
}

fn session_header(headers: &HeaderMap) -> Option<&str> {
    headers.get("mcp-session-id").and_then(|v| v.to_str().ok())
}

/// A session id: 128 random bits, hex. Not a secret of brownout's, but unguessable.
fn new_session_id() -> String {
    let mut b = [0u8; 16];
    if getrandom::fill(&mut b).is_err() {
        // No OS randomness: fall back to time and a counter (still unique).
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        b = t.to_le_bytes();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl ChildBack {
    pub fn new(
        spec: ChildSpec,
        relay: Arc<Relay>,
        max_message: usize,
        max_sessions: usize,
        idle: Duration,
    ) -> ChildBack {
        ChildBack {
            spec,
            relay,
            max_message,
            max_sessions,
            idle,
            sessions: Mutex::new(HashMap::new()),
            arrived: AtomicU64::new(0),
            keeper: Once::new(),
            namespace: None,
        }
    }

    /// This back's sessions are those of server `name` of a relay that fronts several:
    /// their engine keys carry the name (`brownout_core::session_key`).
    pub fn namespaced(mut self, name: &str) -> ChildBack {
        self.namespace = Some(name.to_string());
        self
    }

    pub fn session_count(&self) -> usize {
        lock(&self.sessions).len()
    }

    /// Requests in flight over every session (each waits for its answer on a route).
    pub fn route_count(&self) -> usize {
        lock(&self.sessions).values().map(|s| s.route_count()).sum()
    }

    fn sessions(&self) -> Vec<Arc<ChildSession>> {
        lock(&self.sessions).values().cloned().collect()
    }

    /// The session a POST belongs to (its `Mcp-Session-Id`, or a new one for
    /// `initialize`), with its request ids reserved. A request whose id is already in
    /// flight in the session is refused with `-32600`.
    pub fn session_for(
        self: &Arc<Self>,
        headers: &HeaderMap,
        body: &[u8],
        label: Option<&str>,
    ) -> Result<Joined, Response> {
        let (session, new) = match session_header(headers) {
            Some(id) => match lock(&self.sessions).get(id).cloned() {
                Some(s) => (s, false),
                None => return Err(not_found()),
            },
            None => (self.new_session(body, label)?, true),
        };
        session.touch();
        let ids = request_ids(body);
        match session.reserve(&ids) {
            Ok(post) => Ok(Joined {
                session,
                new,
                post,
                ids,
                opened: false,
            }),
            Err(dup) => Err(json_answer(StatusCode::OK, duplicate_id_error(&dup))),
        }
    }

    fn new_session(
        self: &Arc<Self>,
        body: &[u8],
        label: Option<&str>,
    ) -> Result<Arc<ChildSession>, Response> {
        let is_init = matches!(classify(body), Message::Single(v) if v.kind == Kind::Request && v.method.as_deref() == Some("initialize"));
        if !is_init {
            return Err(json_answer(
                StatusCode::BAD_REQUEST,
                relay_error(None, "brownout: no Mcp-Session-Id: initialize first"),
            ));
        }
        let open = self.session_count();
        if open >= self.max_sessions {
            let msg = format!(
                "brownout: {open} sessions are open, the limit (--max-sessions); end one with DELETE"
            );
            return Err(json_answer(
                StatusCode::SERVICE_UNAVAILABLE,
                relay_error(None, &msg),
            ));
        }
        self.start_session(label).map_err(|e| {
            json_answer(
                StatusCode::BAD_GATEWAY,
                relay_error(None, &format!("brownout: {e}")),
            )
        })
    }

    fn start_session(self: &Arc<Self>, label: Option<&str>) -> std::io::Result<Arc<ChildSession>> {
        self.keeper.call_once(|| {
            tokio::spawn(keep(Arc::downgrade(self)));
            tokio::spawn(timers(Arc::downgrade(self)));
            let me = Arc::downgrade(self);
            self.relay
                .set_back_status(Box::new(move || match me.upgrade() {
                    Some(b) => serde_json::json!({
                        "processes": b.session_count(),
                        "routes": b.route_count(),
                    }),
                    None => serde_json::Value::Null,
                }));
        });
        let (mut server, stdin, stdout) = ServerProcess::spawn(&self.spec)?;
        let (to_server, to_server_rx) = mpsc::channel::<Vec<u8>>(OUTBOX_DEPTH);
        spawn_writer(stdin, to_server_rx, None);
        let process = ProcessHandle::default();
        process.set(server.pid);
        let (ended_tx, ended_rx) = watch::channel(None);
        // The engine's key is stable across runs (see `http_sessions`): the client's label,
        // else the session's order of arrival; the wire id stays random.
        let key = match label {
            Some(l) => format!("label:{l}"),
            None => format!("http-{}", self.arrived.fetch_add(1, Ordering::Relaxed) + 1),
        };
        let key = match &self.namespace {
            Some(ns) => brownout_core::session_key::namespaced(ns, &key),
            None => key,
        };
        let session = Arc::new(ChildSession::new(
            new_session_id(),
            key,
            to_server,
            process,
            ended_rx,
        ));
        lock(&self.sessions).insert(session.id.clone(), Arc::clone(&session));
        // Server → client: through the engine, then to the caller (answers) or the
        // session's stream (anything else).
        let (unrouted_tx, mut unrouted_rx) = mpsc::channel::<Vec<u8>>(OUTBOX_DEPTH);
        let reader = {
            let relay = Arc::clone(&self.relay);
            let session = Arc::clone(&session);
            let max = self.max_message;
            let unrouted: Pipe<Vec<u8>, Vec<u8>> = Pipe::new(unrouted_tx, dead_end(), None);
            tokio::spawn(async move {
                let mut reader = LineReader::new(BufReader::new(stdout), max);
                while let Ok(Some(frame)) = reader.next().await {
                    let Frame::Line(bytes) = frame else {
                        eprintln!("brownout: a server message over {max} bytes was skipped");
                        continue;
                    };
                    let v = relay.handle(Side::Server, session.key(), &bytes);
                    session.deliver(v, bytes, &unrouted).await;
                }
            })
        };
        {
            let session = Arc::clone(&session);
            tokio::spawn(async move {
                while let Some(bytes) = unrouted_rx.recv().await {
                    session.send_unrouted(bytes).await;
                }
            });
        }
        // The process's end ends the session; calls in flight get a clear error.
        {
            let me = Arc::clone(self);
            let session = Arc::clone(&session);
            tokio::spawn(async move {
                let status = tokio::select! {
                    s = server.child.wait() => s,
                    _ = session.stop.notified() => terminate(&mut server.child, STOP_GRACE).await,
                };
                session.process.set(None);
                let how = match status {
                    Ok(status) => describe(&status),
                    Err(e) => e.to_string(),
                };
                lock(&me.sessions).remove(&session.id);
                // What the server wrote before it ended is still answered.
                let _ = tokio::time::timeout(Duration::from_secs(1), reader).await;
                let failed = me.relay.server_gone(
                    session.key(),
                    &format!("the MCP server exited before answering ({how})"),
                    &format!("the server of session {} ended ({how})", short(&session.id)),
                );
                for f in failed {
                    if let Some(route) = session.take(std::slice::from_ref(&f.id)) {
                        let _ = route.down.send(Down::Msg(f.reply)).await;
                    }
                }
                me.relay.end_session(session.key());
                session.clear();
                let _ = ended_tx.send(Some(how));
            });
        }
        Ok(session)
    }

    /// Join a POST to its session: answers to its requests are routed to `answers`; what
    /// the pipe forwards (`up`) goes to the process. Returns the head of the client's
    /// answer.
    pub fn open_post(
        &self,
        mut joined: Joined,
        headers: &HeaderMap,
        up: mpsc::Receiver<Vec<u8>>,
        answers: mpsc::Sender<Down>,
    ) -> (Head, ProcessHandle) {
        let accepts_sse = headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|a| a.contains("text/event-stream"));
        let session = Arc::clone(&joined.session);
        session.open(
            joined.post,
            &Route {
                down: answers,
                sse: accepts_sse,
            },
        );
        joined.opened = true;
        let owed = std::mem::take(&mut joined.ids);
        tokio::spawn(Arc::clone(&session).forward_post(joined.post, owed.clone(), up));
        let mut h = HeaderMap::new();
        let (status, ct) = if owed.is_empty() {
            (StatusCode::ACCEPTED, None)
        } else if accepts_sse {
            (StatusCode::OK, Some("text/event-stream"))
        } else {
            (StatusCode::OK, Some("application/json"))
        };
        if let Some(ct) = ct {
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
        }
        if joined.new {
            if let Ok(v) = HeaderValue::from_str(&session.id) {
                h.insert("mcp-session-id", v);
            }
        }
        (Head { status, headers: h }, session.process.clone())
    }

    /// GET: the session's stream of server-initiated messages: the head and the items of
    /// the stream, for the front to serve.
    pub fn open_stream(
        &self,
        headers: &HeaderMap,
    ) -> Result<(Head, mpsc::Receiver<Down>), Response> {
        let Some(id) = session_header(headers) else {
            return Err((
                StatusCode::BAD_REQUEST,
                "brownout: GET needs an Mcp-Session-Id",
            )
                .into_response());
        };
        let Some(session) = lock(&self.sessions).get(id).cloned() else {
            return Err(not_found());
        };
        session.touch();
        let (tx, rx) = mpsc::channel::<Down>(super::http::DOWN_DEPTH);
        session.set_stream(tx);
        let mut h = HeaderMap::new();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        Ok((
            Head {
                status: StatusCode::OK,
                headers: h,
            },
            rx,
        ))
    }

    /// DELETE: end the session and its process (SIGTERM, then SIGKILL); answers once the
    /// process is gone.
    pub async fn delete(&self, headers: &HeaderMap) -> Response {
        let Some(id) = session_header(headers) else {
            return (
                StatusCode::BAD_REQUEST,
                "brownout: DELETE needs an Mcp-Session-Id",
            )
                .into_response();
        };
        let Some(session) = lock(&self.sessions).remove(id) else {
            return not_found();
        };
        stop(&session).await;
        StatusCode::OK.into_response()
    }

    /// Stop every session's process (shutdown), each SIGTERM then SIGKILL.
    pub async fn stop_all(&self) {
        let all: Vec<_> = lock(&self.sessions).drain().map(|(_, s)| s).collect();
        futures::future::join_all(all.iter().map(|s| stop(s))).await;
    }
}

/// Ask a session's process to stop and wait until it has (bounded: the keeper kills it
/// after the grace period).
async fn stop(session: &ChildSession) {
    session.stop.notify_one();
    let mut ended = session.ended.clone();
    let _ = tokio::time::timeout(
        STOP_GRACE + Duration::from_secs(3),
        ended.wait_for(Option::is_some),
    )
    .await;
}

/// The back's housekeeping, while it lives: end idle sessions, forget stale routes.
async fn keep(back: Weak<ChildBack>) {
    let tick = match back.upgrade() {
        Some(b) => (b.idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(1)),
        None => return,
    };
    let mut interval = tokio::time::interval(tick);
    loop {
        interval.tick().await;
        let Some(back) = back.upgrade() else { return };
        for s in back.sessions() {
            s.sweep(ROUTE_TTL);
            if s.idle_for().is_some_and(|d| d >= back.idle) {
                let gone = lock(&back.sessions).remove(s.id()).is_some();
                if gone {
                    eprintln!(
                        "brownout: session {} idle for {}s; ending it and stopping its server",
                        short(s.id()),
                        back.idle.as_secs()
                    );
                    let s = Arc::clone(&s);
                    tokio::spawn(async move { stop(&s).await });
                }
            }
        }
    }
}

/// Timed process faults, while the back lives: sleep until the next one is due (at most a
/// second: a reloaded plan may bring an earlier one), then fire it.
async fn timers(back: Weak<ChildBack>) {
    loop {
        let wait = match back.upgrade() {
            Some(b) if b.fire_timers() => Duration::from_millis(200),
            Some(b) => {
                let relay = &b.relay;
                relay
                    .next_timer()
                    .map(|t| to_duration(t.saturating_sub(relay.now())))
                    .unwrap_or(Duration::from_secs(1))
                    .clamp(Duration::from_millis(20), Duration::from_secs(1))
            }
            None => return,
        };
        tokio::time::sleep(wait).await;
    }
}

impl ChildBack {
    /// Timed process faults (`at_ms` of run time) that are due hit every session's process
    /// then alive. With no session yet, they wait for the first one (a fault is never
    /// counted without being done). Returns whether a due fault waits for a session.
    fn fire_timers(&self) -> bool {
        let Some(due) = self.relay.next_timer() else {
            return false;
        };
        if due > self.relay.now() {
            return false;
        }
        let sessions = self.sessions();
        let Some(first) = sessions.first() else {
            return true;
        };
        for a in self.relay.on_timer(first.key()) {
            for s in &sessions {
                s.process.apply(a);
            }
        }
        false
    }
}

impl HttpBack for ChildBack {
    const LAYER: Layer = layers::CHILD;
    /// The client's `Brownout-Session` label: sessions are the back's own, found by their
    /// `Mcp-Session-Id` when a POST joins one.
    type Who = Option<String>;
    type Call = Joined;

    fn who(
        self: &Arc<Self>,
        _headers: &HeaderMap,
        _path: &str,
        _peer: &SocketAddr,
        label: Option<String>,
    ) -> Option<String> {
        label
    }

    async fn request(
        self: &Arc<Self>,
        streams: &Streams,
        _: Option<String>,
        req: Request,
    ) -> Response {
        match req.method {
            Method::POST => json_error(
                StatusCode::BAD_REQUEST,
                relay_error(None, "brownout: the body is not a JSON-RPC message"),
            ),
            Method::GET => match self.open_stream(&req.headers) {
                Ok((head, rx)) => streams.stream_response(head, rx),
                Err(r) => r,
            },
            Method::DELETE => self.delete(&req.headers).await,
            _ => plain(
                StatusCode::METHOD_NOT_ALLOWED,
                "brownout: the MCP endpoint takes POST, GET and DELETE".into(),
            ),
        }
    }

    fn join(
        self: &Arc<Self>,
        label: Option<String>,
        _path: &str,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<JoinedPost<Joined>, Response> {
        let joined = self.session_for(headers, body, label.as_deref())?;
        Ok(JoinedPost {
            key: joined.key().to_string(),
            stream: None,
            call: joined,
        })
    }

    /// No short way: every POST is joined to its session's routes.
    async fn pass(
        self: &Arc<Self>,
        _: &Streams,
        call: Joined,
        post: Post,
    ) -> Result<Response, (Joined, Post)> {
        Err((call, post))
    }

    fn exchange(self: &Arc<Self>, call: Joined, ex: Exchange) -> Option<ProcessHandle> {
        let (head, process) = self.open_post(call, &ex.headers, ex.up, ex.answers);
        let _ = ex.head.send(head);
        Some(process)
    }

    async fn stop(&self) {
        self.stop_all().await;
    }
}

fn short(id: &str) -> &str {
    &id[..id.len().min(8)]
}
