//! A message no fault can touch goes on before the engine records it.
//!
//! A driver asks [`Engine::passes`] of each message; when it says yes, the driver writes the
//! message on and then records it with [`Engine::on_passed`], which takes the engine's
//! bookkeeping (correlation, the call's record, SLIs, taints) off the message's path. The
//! answer is what [`Engine::on_message`] would decide at the same instant, asked without
//! changing anything: every fault's selector says [`Reach::No`] (before any counter or
//! draw, see [`Engine::reach`]), or the call a response answers has no fault left to act
//! on it. When in doubt (a batch, an expired session) it says no, and the message goes the
//! usual way.

use super::decide::Reach;
use super::loose::loose_candidate;
use super::{Engine, Session, Side};
use crate::jsonrpc::{classify, Kind, Message, View};
use crate::time::Time;
use crate::verdict::Verdict;

impl Engine {
    /// Whether no fault can touch a message of `session` now, whatever it is: the plan has
    /// none, and the session is not expired (an expiry, once a fault set it, answers until
    /// the client initializes again).
    pub fn untouched(&self, session: &str) -> bool {
        self.plan.faults.is_empty() && !self.expired(session)
    }

    /// Whether no fault can touch this message of `session` at `now`: its verdict from
    /// [`Engine::on_message`] would be a pass, so it may go on first and be recorded after
    /// ([`Engine::on_passed`]). Reads the message; changes nothing.
    pub fn passes(&self, side: Side, session: &str, bytes: &[u8], now: Time) -> bool {
        self.read(side, session, bytes, || now).passes
    }

    /// Read a message and say whether it [`passes`](Engine::passes) at `now()` (asked only
    /// when a fault could care); [`Engine::on_read`] then records it (or decides it)
    /// without reading it again.
    pub fn read<'a>(
        &self,
        side: Side,
        session: &str,
        bytes: &'a [u8],
        now: impl FnOnce() -> Time,
    ) -> Read<'a> {
        let state = self.sessions.get(session);
        if state.is_some_and(|s| s.expired.is_some()) {
            return Read::decided(bytes);
        }
        if self.plan.faults.is_empty() {
            // Nothing to ask: it is read when it is recorded.
            return Read {
                bytes,
                message: None,
                passes: true,
            };
        }
        let message = classify(bytes);
        let passes = match &message {
            // Not JSON-RPC: the engine passes it as it is.
            Message::Invalid(_) => true,
            Message::Batch(_) => false,
            Message::Single(v) => self.view_passes(side, session, state, v, now()),
        };
        Read {
            bytes,
            message: Some(message),
            passes,
        }
    }

    /// Go on with a message [`Engine::read`] read: recorded as [`Engine::on_passed`] does
    /// when it passed (it has gone on), decided as [`Engine::on_message`] does otherwise.
    /// Taken by reference: a driver keeps it where it is while the message is written,
    /// rather than moving it (with the futures that hold it) at every step.
    pub fn on_read(&mut self, side: Side, session: &str, read: &Read<'_>, now: Time) -> Verdict {
        let read_now;
        let message = match &read.message {
            Some(m) => m,
            None => {
                read_now = classify(read.bytes);
                &read_now
            }
        };
        if !read.passes {
            return self.on_classified(side, session, message, read.bytes, now, None);
        }
        self.passed = true;
        let v = self.on_classified(side, session, message, read.bytes, now, None);
        self.passed = false;
        debug_assert!(
            v.is_pass(),
            "a message that went on untouched was given {v:?}"
        );
        Verdict::pass()
    }

    fn view_passes(
        &self,
        side: Side,
        session: &str,
        state: Option<&Session>,
        v: &View<'_>,
        now: Time,
    ) -> bool {
        let method = v.method.as_deref().unwrap_or_default();
        match (side, v.kind) {
            (Side::Client, Kind::Request) => {
                let server = crate::session_key::split(session).0;
                let tool = v.tool.as_deref();
                let mut arg_at = v.argument_reader();
                self.plan.faults.iter().all(|f| {
                    self.reach(f, session, server, method, tool, &mut arg_at, now) == Reach::No
                })
            }
            (Side::Server, Kind::Response | Kind::Error) => {
                let call =
                    v.id.as_ref()
                        .and_then(|id| state.and_then(|s| s.pending.get(id)));
                match call {
                    // Its faults were decided with its request.
                    Some(call) => call.response_hits.is_empty(),
                    None => self.loose_passes(side, session, "", now),
                }
            }
            (Side::Client, Kind::Response | Kind::Error) => {
                let asked =
                    v.id.as_ref()
                        .and_then(|id| state.and_then(|s| s.server_pending.get(id)));
                self.loose_passes(side, session, asked.map_or("", |m| m.as_str()), now)
            }
            (Side::Server, Kind::Request) | (_, Kind::Notification) => {
                self.loose_passes(side, session, method, now)
            }
        }
    }

    /// Whether no fault can touch a message outside any call ([`Engine::on_loose`]).
    fn loose_passes(&self, side: Side, session: &str, method: &str, now: Time) -> bool {
        let server = crate::session_key::split(session).0;
        let mut none = |_: &[String]| None;
        self.plan.faults.iter().all(|f| {
            !loose_candidate(f, side.direction(), method)
                || self.reach(f, session, server, method, None, &mut none, now) == Reach::No
        })
    }

    fn expired(&self, session: &str) -> bool {
        self.sessions
            .get(session)
            .is_some_and(|s| s.expired.is_some())
    }

    /// Record a message that has already gone on untouched (after [`Engine::passes`] or
    /// [`Engine::untouched`]): the call is tracked, correlated and counted as
    /// [`Engine::on_message`] would, but no fault decides on it, even one added since (it
    /// was not there when the message went). The verdict is always a pass.
    pub fn on_passed(&mut self, side: Side, session: &str, bytes: &[u8], now: Time) -> Verdict {
        let read = Read {
            bytes,
            message: None,
            passes: true,
        };
        self.on_read(side, session, &read, now)
    }
}

/// A message the engine has read ([`Engine::read`]), and whether no fault can touch it.
/// It borrows the message's bytes, so it is recorded from the very bytes it read.
#[derive(Debug)]
pub struct Read<'a> {
    bytes: &'a [u8],
    /// What the message is; `None` while nothing needed it (an empty plan).
    message: Option<Message<'a>>,
    passes: bool,
}

impl<'a> Read<'a> {
    /// A message to be decided as usual, read when it is.
    pub fn decided(bytes: &'a [u8]) -> Read<'a> {
        Read {
            bytes,
            message: None,
            passes: false,
        }
    }

    /// Whether no fault can touch the message: it may go on before it is recorded.
    pub fn passes(&self) -> bool {
        self.passes
    }

    /// The message's bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }
}

#[cfg(test)]
mod tests;
