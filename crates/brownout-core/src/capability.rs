//! Driver capabilities: what a relay (or the simulator) can actually carry out.
//!
//! Some faults need something of the driver that runs them: a `process` fault needs a
//! server process to signal, a timed one (`at_ms`) a driver that runs timers, a `duplicate`
//! answer a transport that can deliver two messages for one request. A driver declares its
//! [`Capabilities`]; [`crate::Plan::check_driver`] refuses, when the plan loads, every fault
//! that needs one the driver lacks, naming the fault, its kind and the driver, so a fault is
//! never counted as injected when nothing was done. Each kind declares what it needs beside
//! its logic, in `faults/<kind>.rs`.

use std::fmt;

/// One thing a fault may need its driver to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Capability {
    /// Send signals to the MCP server process (kill, pause/continue): a driver that started
    /// the server itself.
    SignalProcess,
    /// Fire faults at a run time (`at_ms`): the driver calls [`crate::Engine::on_timer`].
    ProcessTimers,
    /// Deliver more than one message toward the client for one request (a duplicated
    /// answer, a notification after it): a stdio pipe, an SSE stream; not a plain JSON
    /// HTTP answer.
    MultipleAnswers,
    /// Deliver a client's message to the server more than once.
    MultipleRequests,
    /// Shape the stream that carries an answer: wait between SSE events, throttle bytes,
    /// cut the stream ([`crate::verdict::StreamShape`]): an HTTP front.
    ShapeStreams,
}

impl Capability {
    pub const ALL: [Capability; 5] = [
        Capability::SignalProcess,
        Capability::ProcessTimers,
        Capability::MultipleAnswers,
        Capability::MultipleRequests,
        Capability::ShapeStreams,
    ];

    fn bit(self) -> u8 {
        1 << (self as u8)
    }

    /// What the capability lets a fault do, for messages ("it needs to …").
    pub fn describe(self) -> &'static str {
        match self {
            Capability::SignalProcess => "signal the server process",
            Capability::ProcessTimers => "fire at a run time (`at_ms`)",
            Capability::MultipleAnswers => "deliver more than one message for one answer",
            Capability::MultipleRequests => "deliver a request to the server more than once",
            Capability::ShapeStreams => "shape the HTTP stream that carries the answer",
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// A set of capabilities.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Capabilities(u8);

impl Capabilities {
    /// Nothing beyond forwarding, delaying, dropping and answering messages.
    pub const NONE: Capabilities = Capabilities(0);

    /// Every capability (a driver that can do everything, e.g. in tests).
    pub fn all() -> Capabilities {
        Capability::ALL
            .iter()
            .fold(Capabilities::NONE, |c, k| c.with(*k))
    }

    /// This set and `c`.
    pub const fn with(self, c: Capability) -> Capabilities {
        Capabilities(self.0 | (1 << (c as u8)))
    }

    /// This set without `c`.
    pub const fn without(self, c: Capability) -> Capabilities {
        Capabilities(self.0 & !(1 << (c as u8)))
    }

    pub fn has(self, c: Capability) -> bool {
        self.0 & c.bit() != 0
    }
}

impl FromIterator<Capability> for Capabilities {
    fn from_iter<I: IntoIterator<Item = Capability>>(iter: I) -> Self {
        iter.into_iter()
            .fold(Capabilities::NONE, |set, c| set.with(c))
    }
}

/// What one fault needs: the capability, and the key of the fault that asks for it (empty:
/// the fault as a whole), for the error's position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    pub capability: Capability,
    pub key: &'static str,
}

impl Need {
    pub const fn whole(capability: Capability) -> Need {
        Need {
            capability,
            key: "",
        }
    }

    pub const fn key(capability: Capability, key: &'static str) -> Need {
        Need { capability, key }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_hold_what_they_are_given() {
        let s = Capabilities::NONE
            .with(Capability::SignalProcess)
            .with(Capability::ShapeStreams);
        assert!(s.has(Capability::SignalProcess) && s.has(Capability::ShapeStreams));
        assert!(!s.has(Capability::ProcessTimers));
        assert!(!s
            .without(Capability::SignalProcess)
            .has(Capability::SignalProcess));
        let all = Capabilities::all();
        assert!(Capability::ALL.iter().all(|c| all.has(*c)));
        let collected: Capabilities = [Capability::MultipleAnswers].into_iter().collect();
        assert!(
            collected.has(Capability::MultipleAnswers) && !collected.has(Capability::SignalProcess)
        );
    }
}
