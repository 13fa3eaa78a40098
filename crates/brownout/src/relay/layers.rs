//! The layer a front is joined to: [`Back`], how brownout reaches the server.
//!
//! A relay is a front (how clients reach brownout) joined to a back by the core
//! ([`super::Relay`] decides, [`super::Pipe`] carries out). The front reads a client
//! message, has the relay decide, and hands the verdict with the message to its back; the
//! back sends it toward the server. A back is built with the client's outbox: the server's
//! messages pass the engine on their way there, and when the server dies the back answers
//! the calls still in flight through [`super::Relay::server_gone`].
//!
//! Backs today: the server as a child process (`super::stdio_child`) and the server at a
//! URL (`super::stdio_http`), both behind the stdio front (`super::stdio`).

use brownout_core::verdict::Verdict;
use std::future::Future;

/// How brownout reaches the server for the one session of a stdio front.
pub trait Back: Send + 'static {
    /// Carry out the engine's verdict `v` on one client message `msg` toward the server
    /// (or, with no server to take it, answer the caller with why).
    fn send(&mut self, v: Verdict, msg: Vec<u8>) -> impl Future<Output = ()> + Send;
}
