//! The child back: the server as a child process brownout starts and supervises, behind
//! either front (`brownout proxy stdio -- CMD`, `brownout proxy http -- CMD`).
//!
//! Behind the stdio front ([`one`]), one session: one server process, restarted as the
//! plan's restart policy says (its `initialize` replayed), every call in flight answered
//! with a clear error when it dies, and brownout's exit status its own.
//!
//! Behind the HTTP front ([`many`]), each `initialize` starts one server process and one
//! session (`Mcp-Session-Id`); the process's lines pass the engine under that session's
//! key. Answers are routed to the POST that asked (see [`super::child_session`]); other
//! server messages (notifications, requests) go to the session's GET stream, else to an
//! open SSE answer. When the process dies, every request in flight gets a clear error and
//! the session ends (the client sees 404 and initializes again). DELETE, an idle session
//! (`--session-idle`) and shutdown stop the process: SIGTERM, then SIGKILL if it is still
//! there after a grace period. Timed `process` faults (`at_ms`) hit every session's
//! process alive at that run time. A POST joins its session (or starts one with
//! `initialize`); GET opens the session's stream; DELETE ends it; there is no short way
//! for an untouched POST (its answer is routed like any other).

// An early answer is an `Answer` by value; boxing it buys nothing here.
#![allow(clippy::result_large_err)]

mod many;
mod one;

use super::answer::{Answer, Streams};
use super::child::{ChildSpec, ProcessHandle};
use super::child_session::ChildSession;
use super::head::{Headers, Method};
use super::layers::{self, Back, Client, Exchange, Joined as JoinedPost, Layer, Post, Request};
use super::{relay_error, Relay};
use brownout_core::jsonrpc::Id;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

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

fn not_found() -> Answer {
    Answer::json(
        404,
        relay_error(
            None,
            "brownout: no such session (it ended); initialize again",
        ),
    )
}

fn session_header(headers: &Headers) -> Option<&str> {
    headers.get(&super::head::SESSION_ID)
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
}

impl Back for ChildBack {
    const LAYER: Layer = layers::CHILD;
    type Carrier = one::ChildGate;
    type One = one::One;

    /// The stdio front's one session: its server process, supervised (restarted as the
    /// plan says, its `initialize` replayed).
    async fn open_one(
        self: &Arc<Self>,
        client: Client,
    ) -> anyhow::Result<(one::ChildGate, one::One)> {
        one::start(self.spec.clone(), Arc::clone(&self.relay), client).await
    }

    /// The client's `Brownout-Session` label: sessions are the back's own, found by their
    /// `Mcp-Session-Id` when a POST joins one.
    type Who = Option<String>;
    type Call = Joined;

    fn who(
        self: &Arc<Self>,
        _headers: &Headers,
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
    ) -> Answer {
        match req.method {
            Method::Post => Answer::json(
                400,
                relay_error(None, "brownout: the body is not a JSON-RPC message"),
            ),
            Method::Get => match self.open_stream(&req.headers) {
                Ok((head, rx)) => streams.stream_answer(head, rx),
                Err(r) => r,
            },
            Method::Delete => self.delete(&req.headers).await,
            Method::Other(_) => Answer::text(
                405,
                "brownout: the MCP endpoint takes POST, GET and DELETE".into(),
            ),
        }
    }

    fn join(
        self: &Arc<Self>,
        label: Option<String>,
        _path: &str,
        headers: &Headers,
        body: &[u8],
    ) -> Result<JoinedPost<Joined>, Answer> {
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
    ) -> Result<Answer, (Joined, Post)> {
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
