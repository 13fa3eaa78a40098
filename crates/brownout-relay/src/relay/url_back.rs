//! The URL back: the server at a URL, over streamable HTTP or legacy HTTP+SSE, behind
//! either front (`brownout proxy stdio --upstream URL`, `brownout proxy http --upstream
//! URL`).
//!
//! Behind the stdio front ([`one`]), brownout holds the one HTTP session on the client's
//! behalf: each message is POSTed on its own, the answers pass the engine to the client.
//!
//! Behind the HTTP front, requests pass to the server with their headers; answers come back
//! through the engine message by message (see [`super::http_back::Pump`]). This back owns
//! what only a server at a URL has: the sessions the engine keeps state for, keyed stably
//! (see [`super::http_sessions`]) and bounded by `--max-sessions` (a session the server
//! refuses is forgotten); the legacy `/sse` streams a POST's answers go to; and the short
//! way for a POST no fault touched. By concern: [`post`] (POSTs: the untouched one, and the
//! exchange of a faulted one), [`forward`] (GET, DELETE, other methods, legacy streams).

// An early answer is an `Answer` by value; boxing it buys nothing here.
#![allow(clippy::result_large_err)]

mod forward;
mod one;
mod post;

use super::answer::{Answer, Streams};
use super::child::ProcessHandle;
use super::head::{Headers, SESSION_ID};
use super::http::Down;
use super::http_back::Upstream;
use super::http_sessions::SessionKeys;
use super::layers::{self, Back, Client, Exchange, Joined, Layer, Post, Request};
use super::{relay_error, Relay};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, Once, Weak};
use std::time::Duration;
use tokio::sync::mpsc;

/// A session's wire identity unused this long is forgotten, unless set with
/// [`UrlBack::with_idle`] (`--session-idle`, after which the engine forgets the session too).
const KEY_IDLE: Duration = Duration::from_secs(660);

/// The server at a URL, as the HTTP front's back.
pub struct UrlBack {
    relay: Arc<Relay>,
    upstream: Arc<Upstream>,
    /// Most sessions the engine keeps state for (503 beyond).
    max_sessions: usize,
    /// Legacy HTTP+SSE: the endpoint each open `/sse` stream announced → that stream.
    legacy: Arc<Mutex<HashMap<String, mpsc::Sender<Down>>>>,
    /// Stable engine keys for sessions.
    keys: Arc<SessionKeys>,
    /// How long a session's wire identity is kept unused.
    idle: Duration,
    keeper: Once,
    /// The stdio front: most POSTs in flight at once (then the client's input waits).
    max_in_flight: usize,
}

/// Who a request comes from: the session's identity on the wire, and the engine's stable
/// key for it (see [`super::http_sessions`]) when it has one. A wire identity gets a key
/// only when a POST of it is admitted or the server accepts a GET stream of it: a client
/// sending GET or DELETE with session ids of its choosing makes brownout hold nothing.
pub struct Who {
    wire: String,
    key: Option<String>,
}

/// A session this POST opened: forgotten if the server refuses it.
pub struct NewSession {
    keys: Arc<SessionKeys>,
    wire: String,
}

impl UrlBack {
    pub fn new(relay: Arc<Relay>, upstream: Arc<Upstream>, max_sessions: usize) -> UrlBack {
        UrlBack {
            relay,
            upstream,
            max_sessions,
            legacy: Arc::new(Mutex::new(HashMap::new())),
            keys: Arc::new(SessionKeys::new()),
            idle: KEY_IDLE,
            keeper: Once::new(),
            max_in_flight: 64,
        }
    }

    /// This back's sessions are those of server `name` of a relay that fronts several:
    /// their engine keys carry the name (`brownout_core::session_key`).
    pub fn namespaced(mut self, name: &str) -> UrlBack {
        self.keys = Arc::new(SessionKeys::namespaced(name));
        self
    }

    /// Forget a session's wire identity after `idle` unused (`--session-idle`).
    pub fn with_idle(mut self, idle: Duration) -> UrlBack {
        self.idle = idle;
        self
    }

    /// At most `n` POSTs in flight at once for the stdio front (`--max-in-flight`).
    pub fn with_max_in_flight(mut self, n: usize) -> UrlBack {
        self.max_in_flight = n;
        self
    }

    /// The engine's key for `who`, given one now if it has none.
    fn key_for(&self, who: &Who) -> String {
        who.key
            .clone()
            .unwrap_or_else(|| self.keys.key(&who.wire, None))
    }

    /// Session wire identities held (each maps to an engine key).
    pub fn sessions_held(&self) -> usize {
        self.keys.len()
    }

    /// The path of the server's MCP endpoint (where clients reach it through brownout).
    pub fn path(&self) -> &str {
        &self.upstream.path
    }

    fn session_key(&self, headers: &Headers, path: &str, peer: &SocketAddr) -> String {
        if let Some(id) = headers.get(&SESSION_ID) {
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

    /// Whether a session may be served: `Ok(true)` for one the engine does not know yet,
    /// `Err(503)` when that would be more than `--max-sessions`.
    fn admit(&self, wire: &str, key: &str) -> Result<bool, Answer> {
        let (known, count) = self.relay.session_state(key);
        if !known && count >= self.max_sessions {
            self.keys.forget(wire);
            return Err(Answer::json(
                503,
                relay_error(
                    None,
                    &format!("brownout: {count} sessions are open, the limit (--max-sessions)"),
                ),
            ));
        }
        Ok(!known)
    }
}

/// Wire identities unused for a while are forgotten, while the back lives.
async fn keep(back: Weak<UrlBack>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        let Some(back) = back.upgrade() else { return };
        back.keys.reap(back.idle);
    }
}

impl Back for UrlBack {
    const LAYER: Layer = layers::URL;
    type Carrier = one::Posts;
    type One = one::One;

    /// The stdio front's one session: brownout's own HTTP session with the server.
    async fn open_one(self: &Arc<Self>, client: Client) -> anyhow::Result<(one::Posts, one::One)> {
        Ok(one::start(
            &self.upstream,
            &self.relay,
            self.max_in_flight,
            client,
        ))
    }

    type Who = Who;
    type Call = Option<NewSession>;

    fn who(
        self: &Arc<Self>,
        headers: &Headers,
        path: &str,
        peer: &SocketAddr,
        label: Option<String>,
    ) -> Who {
        self.keeper
            .call_once(|| drop(tokio::spawn(keep(Arc::downgrade(self)))));
        let wire = self.session_key(headers, path, peer);
        let key = match label {
            Some(l) => Some(self.keys.key(&wire, Some(l.as_str()))),
            None => self.keys.known(&wire),
        };
        Who { wire, key }
    }

    async fn request(self: &Arc<Self>, streams: &Streams, who: Who, req: Request) -> Answer {
        self.forward(streams, who, req).await
    }

    fn join(
        self: &Arc<Self>,
        who: Who,
        path: &str,
        _headers: &Headers,
        _body: &[u8],
    ) -> Result<Joined<Option<NewSession>>, Answer> {
        let stream = self.legacy_stream(path);
        let Who { wire, key } = who;
        let key = key.unwrap_or_else(|| self.keys.key(&wire, None));
        let new = self.admit(&wire, &key)?.then(|| NewSession {
            keys: Arc::clone(&self.keys),
            wire,
        });
        Ok(Joined {
            key,
            stream,
            call: new,
        })
    }

    async fn pass(
        self: &Arc<Self>,
        streams: &Streams,
        call: Option<NewSession>,
        post: Post,
    ) -> Result<Answer, (Option<NewSession>, Post)> {
        Ok(self.pass_post(streams, call, post).await)
    }

    fn exchange(self: &Arc<Self>, call: Option<NewSession>, ex: Exchange) -> Option<ProcessHandle> {
        let exchange = post::Exchange {
            relay: Arc::clone(&self.relay),
            upstream: Arc::clone(&self.upstream),
            key: ex.key,
            path: ex.path,
            headers: ex.headers,
            owed: ex.owed,
            pace: ex.pace,
            new_session: call,
        };
        tokio::spawn(exchange.run(ex.up, ex.head, ex.down));
        None
    }

    async fn stop(&self) {}
}

pub(super) fn legacy_key(endpoint: &str) -> String {
    format!("sse:{endpoint}")
}
