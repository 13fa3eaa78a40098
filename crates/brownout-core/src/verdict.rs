//! Verdicts: what the engine tells a driver to do with one message.
//!
//! A verdict is a small list of actions: forward (perhaps after a delay, perhaps replaced),
//! answer the sender instead (short-circuit), drop, duplicate, hold behind the next message,
//! send extra messages, signal the server process. Drivers carry verdicts out; they never
//! decide whether a fault applies.

use crate::time::Time;
use std::fmt;

/// What happens to the message itself.
#[derive(Debug, Clone, PartialEq)]
pub enum Forward {
    /// Forward the original bytes, untouched.
    Original,
    /// Forward these bytes instead.
    Replace(Vec<u8>),
    /// Do not forward.
    Drop,
}

/// A message to send, after a delay.
#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    pub bytes: Vec<u8>,
    pub delay: Time,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Term,
    Kill,
}

/// An action on the server process (stdio back only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessAction {
    Kill(Signal),
    /// SIGSTOP now, SIGCONT after this long.
    Pause(Time),
}

impl fmt::Display for ProcessAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProcessAction::Kill(Signal::Term) => f.write_str("kill server (SIGTERM)"),
            ProcessAction::Kill(Signal::Kill) => f.write_str("kill server (SIGKILL)"),
            ProcessAction::Pause(t) => write!(f, "pause server for {t}"),
        }
    }
}

/// An HTTP-level action on the request that carried a message. HTTP fronts carry it out;
/// the stdio relay, which has no HTTP, maps it to the nearest message-level effect.
#[derive(Debug, Clone, PartialEq)]
pub enum HttpAction {
    /// Answer the HTTP request with this status, headers and body; the server never sees it.
    Status {
        /// The HTTP status, 100..=599.
        code: u16,
        /// Response headers, in order (names as the plan spelled them).
        headers: Vec<(String, String)>,
        /// The response body, sent as it is.
        body: Vec<u8>,
    },
    /// Refuse: close the connection without any answer; the server never sees it.
    Refuse,
    /// Forward, then reset the connection before the answer reaches the client.
    Reset,
    /// Accept and never answer (the connection stays open until the client gives up).
    Stall,
}

/// How the body or SSE stream that carries the answer is shaped on its way to the client.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamShape {
    /// Wait this long before each SSE event (or the JSON body).
    pub event_gap: Time,
    /// Throttle the answer to this many bytes per second.
    pub bytes_per_sec: Option<u64>,
    /// Cut the stream (close the connection) after this many events.
    pub drop_after_events: Option<u64>,
    /// Cut the stream after this many bytes of body.
    pub drop_after_bytes: Option<u64>,
}

impl StreamShape {
    /// Combine two shapes: the slower gap and bandwidth, the earlier cut.
    pub fn merge(&mut self, other: &StreamShape) {
        self.event_gap = self.event_gap.max(other.event_gap);
        self.bytes_per_sec = min_some(self.bytes_per_sec, other.bytes_per_sec);
        self.drop_after_events = min_some(self.drop_after_events, other.drop_after_events);
        self.drop_after_bytes = min_some(self.drop_after_bytes, other.drop_after_bytes);
    }
}

fn min_some(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The engine's answer for one message.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub forward: Forward,
    /// Wait this long before forwarding.
    pub delay: Time,
    /// Forward this many extra copies, `duplicate_gap` apart.
    pub duplicates: u32,
    pub duplicate_gap: Time,
    /// Hold the message until the next one in the same direction has gone, or this long.
    pub hold: Option<Time>,
    /// Messages back to the sender (a short-circuit answer).
    pub reply: Vec<Outgoing>,
    /// Extra messages to the receiver, after the forwarded one.
    pub extra: Vec<Outgoing>,
    pub process: Vec<ProcessAction>,
    /// An HTTP-level action on the request carrying this message. An HTTP front carries it
    /// out in preference to `reply` (which is then the same failure as a JSON-RPC message,
    /// for the stdio relay); the stdio relay ignores it.
    pub http: Option<HttpAction>,
    /// How the answer's body or stream is shaped (HTTP fronts; the stdio relay ignores it).
    pub stream: Option<StreamShape>,
}

impl Verdict {
    /// Forward the original bytes at once: the verdict for every message no fault touches.
    pub fn pass() -> Verdict {
        Verdict {
            forward: Forward::Original,
            delay: Time::ZERO,
            duplicates: 0,
            duplicate_gap: Time::ZERO,
            hold: None,
            reply: Vec::new(),
            extra: Vec::new(),
            process: Vec::new(),
            http: None,
            stream: None,
        }
    }

    /// Whether the driver can forward the original bytes at once and do nothing else.
    pub fn is_pass(&self) -> bool {
        self.forward == Forward::Original
            && self.delay == Time::ZERO
            && self.duplicates == 0
            && self.hold.is_none()
            && self.reply.is_empty()
            && self.extra.is_empty()
            && self.process.is_empty()
            && self.http.is_none()
            && self.stream.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_merge_to_the_slower_gap_and_rate_and_the_earlier_cut() {
        let mut a = StreamShape {
            event_gap: Time::from_millis(50),
            bytes_per_sec: Some(4096),
            drop_after_events: None,
            drop_after_bytes: Some(1000),
        };
        a.merge(&StreamShape {
            event_gap: Time::from_millis(20),
            bytes_per_sec: Some(1024),
            drop_after_events: Some(3),
            drop_after_bytes: Some(5000),
        });
        assert_eq!(
            a,
            StreamShape {
                event_gap: Time::from_millis(50),
                bytes_per_sec: Some(1024),
                drop_after_events: Some(3),
                drop_after_bytes: Some(1000),
            }
        );
        let mut none = StreamShape::default();
        none.merge(&StreamShape::default());
        assert_eq!(none, StreamShape::default());
    }

    #[test]
    fn an_http_action_or_a_shape_is_not_a_pass() {
        let mut v = Verdict::pass();
        assert!(v.is_pass());
        v.stream = Some(StreamShape::default());
        assert!(!v.is_pass());
        let mut v = Verdict::pass();
        v.http = Some(HttpAction::Reset);
        assert!(!v.is_pass());
    }
}
