//! The layers a front is joined to: [`Back`], how brownout reaches the server, whichever
//! front clients come by; and [`Layer`], what a front or a back can carry out.
//!
//! A relay is a front (how clients reach brownout) joined to a back by the core
//! ([`super::Relay`] decides, [`super::Pipe`] carries out). The front reads a client
//! message, has the relay decide, and hands the verdict with the message to its back; the
//! back sends it toward the server. The server's messages pass the engine on their way to
//! the client, and when the server dies the back answers the calls still in flight through
//! [`super::Relay::server_gone`].
//!
//! There is one back per kind of server, and each serves both fronts: the server as a child
//! process ([`super::child_back`]: one process for the stdio front's session, one per
//! session behind the HTTP front) and the server at a URL ([`super::url_back`]: brownout's
//! own session for the stdio front, the clients' sessions passed through behind the HTTP
//! front). The fronts are generic over [`Back`] ([`super::stdio`], [`super::http_front`]).
//!
//! What a front hands over differs. The stdio front has one session and a stream of
//! messages: it opens the session ([`Back::open_one`]) and gives the messages one by one to
//! its [`Carrier`]. The HTTP front has many sessions and one exchange per request: the back
//! identifies a request's session, admits or refuses it, and carries a POST's messages (as
//! its [`super::Pipe`] forwards them) to the server, giving the head of the client's answer;
//! the front owns the flow (the engine, the HTTP-level faults, the answer's shape), the back
//! only where bytes go.
//!
//! The trait speaks the relay's terms: sessions, JSON-RPC messages and their verdicts, and
//! the head and body of a request or an answer as plain data ([`super::head`]: a status, a
//! method, headers by name; [`super::answer::Answer`]: a head and a body whole or as items
//! on their way). The HTTP library's types stay in the HTTP front, which turns an answer
//! into a response ([`super::http_answer::into_response`]), and in the URL back's own
//! client ([`super::http_back::Upstream`]). A unit test (`both_fronts`) keeps this module
//! free of them.

// An early answer is an `Answer` by value; boxing it buys nothing here.
#![allow(clippy::result_large_err)]

use super::answer::{Answer, Streams};
use super::child::ProcessHandle;
use super::head::{Head, Headers, Method};
use super::http::Down;
use super::lane::Lane;
use super::{Driver, Outbox};
use brownout_core::jsonrpc::Id;
use brownout_core::verdict::{StreamShape, Verdict};
use brownout_core::{Capabilities, Capability};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// What a front or a back brings to a relay: its words in the relay's name (`proxy http`,
/// `-- CMD`) and what it can carry out. A relay can do what its front and its back can.
#[derive(Debug, Clone, Copy)]
pub struct Layer {
    pub name: &'static str,
    pub can: &'static [Capability],
}

impl Layer {
    pub fn capabilities(&self) -> Capabilities {
        self.can.iter().copied().collect()
    }
}

/// A back that talks to a server process brownout starts: it can signal it and run timed
/// process faults.
pub const CHILD: Layer = Layer {
    name: "-- CMD",
    can: &[Capability::SignalProcess, Capability::ProcessTimers],
};

/// A back that talks to a server at a URL: no process to signal.
pub const URL: Layer = Layer {
    name: "--upstream",
    can: &[],
};

/// How brownout reaches the server, whichever front clients come by.
///
/// The stdio front has one client: it opens one session ([`Back::open_one`]), hands each
/// client message with its verdict to the session's [`Carrier`], and lets the session run
/// ([`OneSession::serve`]) until the client or the server ends it.
///
/// The HTTP front has many sessions and one exchange per request. It calls, for each
/// request: [`Back::who`] (before the body is read), then for a POST of JSON-RPC
/// [`Back::join`], the engine, and either [`Back::pass`] (no fault touched it) or
/// [`Back::exchange`]; any other request goes to [`Back::request`] as it is.
pub trait Back: Send + Sync + Sized + 'static {
    /// What this back can carry out.
    const LAYER: Layer;

    /// How the stdio front hands this back its client's messages.
    type Carrier: Carrier;
    /// The one session of a stdio front, until it ends.
    type One: OneSession;

    /// Open the one session of a front with a single client: the server's messages (and
    /// brownout's answers in its place) go to `client`.
    fn open_one(
        self: &Arc<Self>,
        client: Client,
    ) -> impl Future<Output = anyhow::Result<(Self::Carrier, Self::One)>> + Send;

    /// Who a request comes from, as this back tells sessions apart.
    type Who: Send + 'static;
    /// A POST joined to its session, until its exchange starts.
    type Call: Send + 'static;

    /// Who sent a request: its headers, path and query, the peer's address and the
    /// client's `Brownout-Session` label (see [`super::http_sessions`]).
    fn who(
        self: &Arc<Self>,
        headers: &Headers,
        path: &str,
        peer: &SocketAddr,
        label: Option<String>,
    ) -> Self::Who;

    /// A request the engine does not see — GET, DELETE, any other method, a POST whose body
    /// is not JSON-RPC: passed on, served or refused.
    fn request(
        self: &Arc<Self>,
        streams: &Streams,
        who: Self::Who,
        req: Request,
    ) -> impl Future<Output = Answer> + Send;

    /// Join a POST of JSON-RPC `body` to its session, before the engine sees it: the
    /// engine's key for the session, or the answer refusing it (no such session, too many).
    fn join(
        self: &Arc<Self>,
        who: Self::Who,
        path: &str,
        headers: &Headers,
        body: &[u8],
    ) -> Result<Joined<Self::Call>, Answer>;

    /// A POST no fault touched: a back with a shorter way for it answers here; one without
    /// gives the POST back (`Err`), and it goes through [`Back::exchange`].
    fn pass(
        self: &Arc<Self>,
        streams: &Streams,
        call: Self::Call,
        post: Post,
    ) -> impl Future<Output = Result<Answer, (Self::Call, Post)>> + Send;

    /// Start a POST's exchange with the server: what the POST's pipe forwards arrives on
    /// `ex.up`; the head of the client's answer goes to `ex.head`. Returns the handle of
    /// the server process that `process` faults signal, if there is one.
    fn exchange(self: &Arc<Self>, call: Self::Call, ex: Exchange) -> Option<ProcessHandle>;

    /// The front stops: stop what the back started (server processes).
    fn stop(&self) -> impl Future<Output = ()> + Send;
}

/// Where a stdio front takes the client's messages: one by one, in order.
pub trait Carrier: Send + 'static {
    /// Carry out the engine's verdict `v` on one client message `msg` toward the server
    /// (or, with no server to take it, answer the caller with why).
    fn send(&mut self, v: Verdict, msg: Vec<u8>) -> impl Future<Output = ()> + Send;

    /// Pass on a message no fault can touch ([`super::Relay::read`]), calling `record`
    /// once it is on its way and before anything else of the relay runs, so the
    /// engine knows the call before the server can answer or fail it. By default it is
    /// recorded first; a back that can write at once writes first, which takes the engine's
    /// work off the message's path.
    fn pass<F>(&mut self, msg: Vec<u8>, record: F) -> impl Future<Output = ()> + Send
    where
        F: FnOnce() + Send,
    {
        record();
        self.send(Verdict::pass(), msg)
    }
}

/// The one session of a stdio front.
pub trait OneSession: Send + 'static {
    /// Run the session until it ends: the client's input closes (`client.closed`), brownout
    /// is told to stop (SIGTERM, SIGINT) or the server is gone for good. Stops the client's
    /// reader (`client.reader`) once nothing more may come from it. Returns the exit code.
    fn serve(self, client: ClientEnd) -> impl Future<Output = anyhow::Result<i32>> + Send;
}

/// The client of a stdio front, as a back writes to it.
pub struct Client {
    /// The client's queue (its writer task writes it in order).
    pub outbox: Outbox,
    /// The fast lane past that queue, for messages no fault touched.
    pub lane: Lane,
    /// The longest message read from the server.
    pub max: usize,
}

/// The reading end of a stdio front's client.
pub struct ClientEnd {
    /// Fires when the client's input ends (or cannot be read).
    pub closed: oneshot::Receiver<()>,
    /// The task reading the client.
    pub reader: JoinHandle<()>,
}

/// The relay a front and a back make: its name in messages and what it can carry out.
pub fn driver(front: Layer, back: Layer) -> Driver {
    Driver {
        front: front.name,
        back: back.name,
        can: front.can.iter().chain(back.can).copied().collect(),
    }
}

/// A request the engine does not see, as it came.
pub struct Request {
    pub method: Method,
    /// The path and query.
    pub path: String,
    pub headers: Headers,
    /// Read for a POST only.
    pub body: Vec<u8>,
}

/// A POST joined to its session.
pub struct Joined<C> {
    /// The engine's key for the session (see [`super::http_sessions`]).
    pub key: String,
    /// Legacy HTTP+SSE: the client's stream, where the answers to this POST go (the POST
    /// itself is answered `202`).
    pub stream: Option<mpsc::Sender<Down>>,
    pub call: C,
}

/// A POST of JSON-RPC on its way to the server.
pub struct Post {
    pub key: String,
    pub path: String,
    pub headers: Headers,
    pub body: Vec<u8>,
    /// The ids of its requests: the answers it is owed.
    pub owed: Vec<Id>,
}

/// The channels of one POST's exchange with the server.
pub struct Exchange {
    pub key: String,
    pub path: String,
    pub headers: Headers,
    /// The answers this POST's body is owed (none when they go to the client's stream).
    pub owed: Vec<Id>,
    /// How the client's answer is paced (its pace is the latency the client feels).
    pub pace: Option<StreamShape>,
    /// What the POST's pipe forwards, one message at a time (more under `duplicate`).
    pub up: mpsc::Receiver<Vec<u8>>,
    /// The head of the client's answer.
    pub head: oneshot::Sender<Head>,
    /// The body of the client's answer.
    pub down: mpsc::Sender<Down>,
    /// Where answers to this POST's requests go: `down`, or the client's stream.
    pub answers: mpsc::Sender<Down>,
}
