//! What a fault does to a call the simulator makes, in outcome terms.
//!
//! The simulator does not build JSON: it asks the engine which faults hit a call (the same
//! selectors, counters and counter-based draws as the relay) and each hit kind says here what
//! it does to the call, using the kind's own parameters and samplers: how long it delays the
//! request or the response, whether the server is reached, and how the client's answer ends.

use super::{error::Phase, latency::Latency, registry, timeout::Then, Ctx, Effect};
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
    /// An answer that looks fine and is wrong (schema drift, partial result): a silent failure.
    Corrupt,
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
    fn worsen(&mut self, o: SimOutcome) {
        use SimOutcome::*;
        let rank = |o: SimOutcome| match o {
            Server => 0,
            Corrupt => 1,
            FailAfter => 2,
            NoAnswer => 3,
            FailFast => 4,
        };
        if rank(o) > rank(self.outcome) {
            self.outcome = o;
        }
    }
}

fn delay(l: &Latency, c: &Ctx<'_>) -> Time {
    let ms = l.sample_ms(c.unit(salt::MAGNITUDE), c.unit(salt::MAGNITUDE2));
    Time((ms * 1000.0) as u64)
}

impl Effect {
    /// Add this fault's effect to a simulated `tools/call` of `c.tool`. Returns false when
    /// the kind has nothing to do to such a call (then it is not counted as injected).
    /// Rate limits are handled by the engine, which owns the buckets.
    pub fn simulate(
        &self,
        direction: crate::select::Direction,
        c: &mut Ctx<'_>,
        out: &mut SimulatedCall,
    ) -> bool {
        use crate::select::Direction::ToServer;
        match self {
            Effect::Latency(l) => {
                let d = delay(l, c);
                if direction == ToServer {
                    out.request_delay = out.request_delay + d;
                } else {
                    out.response_delay = out.response_delay + d;
                }
            }
            Effect::ColdStart(cs) => {
                let tool = c.tool.unwrap_or(c.method).to_string();
                if !c.state.seen_tools.insert(tool) {
                    return false;
                }
                out.request_delay = out.request_delay + delay(&cs.delay, c);
            }
            Effect::Error(e) => out.worsen(if e.phase == Phase::Request {
                SimOutcome::FailFast
            } else {
                SimOutcome::FailAfter
            }),
            Effect::Timeout(t) => match (t.hold_ms, t.then) {
                (Some(ms), Then::Deliver) => {
                    out.response_delay = out.response_delay + Time((ms * 1000.0) as u64)
                }
                _ => out.worsen(SimOutcome::NoAnswer),
            },
            Effect::Malformed(_) | Effect::Drop(_) => out.worsen(SimOutcome::NoAnswer),
            Effect::SchemaDrift(_) | Effect::PartialResult(_) => out.worsen(SimOutcome::Corrupt),
            Effect::Registry(r) => match r.action {
                registry::Action::Remove
                | registry::Action::Dangling
                | registry::Action::Phantom => out.worsen(SimOutcome::FailFast),
                _ => return false,
            },
            // An expired session fails the call it hits; the simulated client is taken to
            // initialize again at once, so its later calls are not failed.
            Effect::HttpStatus(_) | Effect::SessionExpiry(_) => out.worsen(SimOutcome::FailFast),
            Effect::Connection(k) => out.worsen(match k.mode {
                super::connection::Mode::Refuse => SimOutcome::FailFast,
                _ => SimOutcome::NoAnswer,
            }),
            Effect::SlowStream(k) => {
                out.response_delay = out.response_delay + Time((k.gap_ms.max(0.0) * 1000.0) as u64)
            }
            // Duplicates and reordering do not change a call's outcome; process faults act on
            // a real process and bandwidth on real bytes: neither is modelled by the simulator.
            Effect::Bandwidth(_)
            | Effect::Duplicate(_)
            | Effect::Reorder(_)
            | Effect::Process(_)
            | Effect::RateLimit(_) => return false,
        }
        out.injected += 1;
        true
    }
}
