//! What a fault does to a call the simulator makes, in outcome terms.
//!
//! The simulator does not build JSON: it asks the engine which faults hit a call (the same
//! selectors, counters and counter-based draws as the relay) and each hit kind says, in its
//! own file ([`super::FaultKind::simulate`]), what it does to the call in these terms: how
//! long it delays the request or the response, whether the server is reached, and how the
//! client's answer ends.

use super::{latency::Latency, Ctx};
use crate::rng::salt;
use crate::time::Time;

/// How a simulated call ends, as far as faults decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SimOutcome {
    /// The server's own answer stands.
    #[default]
    Server,
    /// A short-circuit failure: the server never sees the call.
    FailFast,
    /// The server works, then the client gets an error instead of its answer.
    FailAfter,
    /// No answer reaches the client (timeout, drop, malformed bytes): its own timeout fires.
    NoAnswer,
    /// An answer whose shape is wrong (schema drift): an agent that validates results
    /// against the tool's `outputSchema` can notice; one that trusts them fails silently.
    Corrupt,
    /// An answer that keeps its schema and carries wrong values (`corrupt`, a truncated
    /// `partial_result`): even a validating agent cannot tell; only cross-checking can.
    Wrong,
}

/// The combined effect of every fault that hit one simulated call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SimulatedCall {
    pub request_delay: Time,
    pub response_delay: Time,
    pub outcome: SimOutcome,
    /// How many faults acted on the call.
    pub injected: u32,
}

impl SimulatedCall {
    /// Keep the worse of the current outcome and `o`.
    pub fn worsen(&mut self, o: SimOutcome) {
        use SimOutcome::*;
        let rank = |o: SimOutcome| match o {
            Server => 0,
            Wrong => 1,
            Corrupt => 2,
            FailAfter => 3,
            NoAnswer => 4,
            FailFast => 5,
        };
        if rank(o) > rank(self.outcome) {
            self.outcome = o;
        }
    }
}

/// A delay drawn from `l` for this call (latency, cold start).
pub fn delay(l: &Latency, c: &Ctx<'_>) -> Time {
    let ms = l.sample_ms(c.unit(salt::MAGNITUDE), c.unit(salt::MAGNITUDE2));
    Time((ms * 1000.0) as u64)
}
