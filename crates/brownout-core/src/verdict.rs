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
    }
}
