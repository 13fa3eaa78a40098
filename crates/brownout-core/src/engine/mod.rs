//! The engine: feeds each message through the plan and answers with a [`Verdict`].
//!
//! Drivers call [`Engine::on_message`] for every message in either direction, with the
//! session key and the run time. The engine classifies the message, correlates responses
//! with their requests, decides which faults hit (selectors, counters, counter-based random
//! draws) and lets each hit fault shape the message. It also keeps the run summary and an
//! event buffer the driver drains. Decisions depend only on (seed, fault id, session key,
//! per-session sequence number) and the session's own history, never on how the driver's
//! tasks interleave.
//!
//! The engine knows no fault kind by name: each kind's rules and effects come through
//! [`crate::faults::FaultKind`]. By concern: [`decide`] (does a fault hit, and letting it
//! act), [`call`] (a call's life: request, response, completion and its record),
//! [`loose`] (notifications, server requests, batches), [`record`] (events, summary, SLIs),
//! [`lifecycle`] (expiry, failed servers, timers, the simulator's entry) and [`pass`] (a
//! message no fault can touch goes on before it is recorded).

mod call;
pub mod coverage;
mod decide;
mod deferred;
mod lifecycle;
mod loose;
mod pass;
mod record;
mod silent;
mod sim_fast;

use crate::correlate::{Pending, DEFAULT_CAPACITY, DEFAULT_TTL};
use crate::event::Event;
use crate::faults::{Answer, KindState, Shaping};
use crate::jsonrpc::{classify, Id, Kind, Message, View};
use crate::plan::{Fault, Plan};
use crate::rng::hash_str;
use crate::select::Direction;
use crate::sli::Slis;
use crate::stats::Summary;
use crate::time::Time;
use crate::verdict::Verdict;
#[cfg(test)]
use crate::verdict::{Forward, ProcessAction};
pub use pass::Read;
#[cfg(test)]
use serde_json::value::RawValue;
pub use sim_fast::{SimCallSite, SimSession};
use std::collections::HashMap;
use std::sync::Arc;

/// Who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

impl Side {
    fn direction(self) -> Direction {
        match self {
            Side::Client => Direction::ToServer,
            Side::Server => Direction::ToClient,
        }
    }
}

#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Bound on pending requests per session.
    pub max_pending: usize,
    /// Pending requests older than this expire as unanswered.
    pub pending_ttl: Time,
    /// Keep events for [`Engine::drain_events`] (the summary is kept either way).
    pub record_events: bool,
    /// Forget sessions idle this long in [`Engine::expire`] (HTTP, where clients come and
    /// go); `None` keeps every session (stdio has one).
    pub idle_session_ttl: Option<Time>,
    /// Taint tracking's window and bounds (docs/silent.md).
    pub taint: crate::taint::TaintConfig,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            max_pending: DEFAULT_CAPACITY,
            pending_ttl: DEFAULT_TTL,
            record_events: true,
            idle_session_ttl: None,
            taint: crate::taint::TaintConfig::default(),
        }
    }
}

/// A call in flight: what the engine needs when its response comes back.
#[derive(Debug, Clone)]
struct Call {
    seq: u64,
    method: String,
    tool: Option<String>,
    /// Faults that hit this call and still act on its response.
    response_hits: Vec<usize>,
    /// Ids of faults that already acted on the request.
    applied: Vec<String>,
    generation: u64,
    /// A fault changed the result itself (drift, truncation): not a correct answer.
    altered: bool,
    /// The first fault that changed the result (its id and kind): the taint's author.
    altered_by: Option<(String, &'static str)>,
    /// Fingerprint of the arguments, kept only for calls a result-changing fault hit (a
    /// re-call with the same ones means the agent noticed).
    args_fp: Option<u64>,
}

impl Call {
    fn new(seq: u64, method: &str, tool: Option<&str>, generation: u64) -> Call {
        Call {
            seq,
            method: method.to_string(),
            tool: tool.map(String::from),
            response_hits: Vec::new(),
            applied: Vec::new(),
            generation,
            altered: false,
            altered_by: None,
            args_fp: None,
        }
    }
}

#[derive(Debug, Default)]
struct Counters {
    matches: u64,
    injections: u64,
    bad: bool,
    kind: KindState,
}

impl Counters {
    /// Count one match of a fault's selector and say whether its counting rules
    /// (`after_calls`, `every_nth`, `max_injections`) let it fire on this one: the engine's
    /// decision and the simulator's fast one both ask here. Inlined: it is on the
    /// simulator's hot path.
    #[inline(always)]
    fn admits(&mut self, sel: &crate::select::Selector) -> bool {
        self.matches += 1;
        if self.matches <= sel.after_calls {
            return false;
        }
        if let Some(n) = sel.every_nth {
            if !(self.matches - sel.after_calls).is_multiple_of(n.max(1)) {
                return false;
            }
        }
        sel.max_injections.is_none_or(|m| self.injections < m)
    }
}

#[derive(Debug)]
struct Session {
    hash: u64,
    next_seq: u64,
    next_loose: u64,
    pending: Pending<Call>,
    /// Requests the server sent to the client (sampling, elicitation, roots, ping).
    server_pending: Pending<String>,
    counters: Vec<Counters>,
    /// A fault expired the session (`session_expiry`): everything the client sends now gets
    /// this answer (404), until it sends `initialize` again.
    expired: Option<Answer>,
    /// When the session last sent or received a message (idle sessions are forgotten).
    last_seen: Time,
    /// Values faults put into results this session received (docs/silent.md).
    taints: crate::taint::Book,
}

/// The decision-making core shared by every driver.
pub struct Engine {
    plan: Arc<Plan>,
    generation: u64,
    config: EngineConfig,
    sessions: HashMap<String, Session, rustc_hash::FxBuildHasher>,
    /// Taints of agents that reach several servers, by agent label (`crate::session_key`):
    /// what one server's result put in front of the agent is looked for on every server.
    agent_taints: HashMap<String, crate::taint::Book, rustc_hash::FxBuildHasher>,
    /// State of faults whose kind keeps one for all sessions (a global token bucket).
    shared: HashMap<usize, KindState>,
    timers_fired: Vec<bool>,
    summary: Summary,
    slis: Slis,
    events: Vec<Event>,
    /// What the driver can do for the message being decided, when it can do less for it
    /// than for others (an HTTP client that takes only a JSON answer): faults that need
    /// more do not act on it and are not counted.
    call_can: Option<crate::capability::Capabilities>,
    /// The message being recorded has already gone on untouched ([`Engine::on_passed`]):
    /// no fault decides on it.
    passed: bool,
    /// Calls whose answer is due later (see [`deferred`]).
    deferred: deferred::Deferred,
    coverage: coverage::Coverage,
}

/// For each fault of a new plan, the index in the old plan of the same fault (same id, same
/// kind), if any. One hash lookup per fault: installing a plan of n faults is O(n).
fn carried(old: &[Fault], new: &[Fault]) -> Vec<Option<usize>> {
    let by_id: HashMap<&str, usize> = old
        .iter()
        .enumerate()
        .map(|(i, f)| (f.id.as_str(), i))
        .collect();
    new.iter()
        .map(|f| {
            by_id
                .get(f.id.as_str())
                .copied()
                .filter(|&i| old[i].effect.kind() == f.effect.kind())
        })
        .collect()
}

/// Answers the relay gives in-flight callers when the server goes away.
#[derive(Debug)]
pub struct FailedCall {
    pub id: Id,
    pub reply: Vec<u8>,
}

/// JSON-RPC error code brownout uses for failures of the relay path itself.
pub const RELAY_ERROR: i64 = -32000;

impl Engine {
    pub fn new(plan: Plan, config: EngineConfig) -> Engine {
        let n = plan.faults.len();
        Engine {
            plan: Arc::new(plan),
            generation: 0,
            config,
            sessions: HashMap::default(),
            agent_taints: HashMap::default(),
            shared: HashMap::new(),
            timers_fired: vec![false; n],
            summary: Summary::default(),
            slis: Slis::default(),
            events: Vec::new(),
            deferred: deferred::Deferred::default(),
            call_can: None,
            passed: false,
            coverage: coverage::Coverage::default(),
        }
    }

    pub fn plan(&self) -> &Arc<Plan> {
        &self.plan
    }

    /// Replace the plan atomically. A fault that keeps its id and kind keeps its state
    /// (per-session counters for `after_calls`, `every_nth`, `max_injections`, token
    /// buckets, fired timers), so adding one fault live does not reset the others; a new or
    /// changed-kind fault starts fresh. Calls in flight finish without the response effects
    /// of the old plan.
    pub fn set_plan(&mut self, plan: Plan) {
        let carried = carried(&self.plan.faults, &plan.faults);
        self.timers_fired = carried
            .iter()
            .map(|old| {
                old.and_then(|i| self.timers_fired.get(i).copied())
                    .unwrap_or(false)
            })
            .collect();
        let mut shared = std::mem::take(&mut self.shared);
        self.shared = carried
            .iter()
            .enumerate()
            .filter_map(|(new, old)| old.and_then(|i| shared.remove(&i)).map(|b| (new, b)))
            .collect();
        for s in self.sessions.values_mut() {
            let mut old = std::mem::take(&mut s.counters);
            s.counters = carried
                .iter()
                .map(|o| {
                    o.and_then(|i| old.get_mut(i).map(std::mem::take))
                        .unwrap_or_default()
                })
                .collect();
        }
        self.plan = Arc::new(plan);
        self.generation += 1;
    }

    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    /// Live SLIs per method and tool (see [`crate::sli`]).
    pub fn slis(&self) -> &Slis {
        &self.slis
    }

    /// Events since the last drain (empty unless `record_events`).
    pub fn drain_events(&mut self) -> std::vec::Drain<'_, Event> {
        self.events.drain(..)
    }

    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    /// Whether the engine keeps state for `session` (a front bounding sessions asks).
    pub fn has_session(&self, session: &str) -> bool {
        self.sessions.contains_key(session)
    }

    pub fn pending_count(&self) -> usize {
        self.sessions.values().map(|s| s.pending.len()).sum()
    }

    fn session(&mut self, key: &str) -> &mut Session {
        if !self.sessions.contains_key(key) {
            let s = Session {
                hash: hash_str(key),
                next_seq: 0,
                next_loose: 0,
                pending: Pending::new(self.config.max_pending, self.config.pending_ttl),
                server_pending: Pending::new(self.config.max_pending, self.config.pending_ttl),
                expired: None,
                last_seen: Time::ZERO,
                counters: Vec::new(),
                taints: crate::taint::Book::default(),
            };
            self.sessions.insert(key.to_string(), s);
        }
        let n = self.plan.faults.len();
        let s = self
            .sessions
            .get_mut(key)
            .unwrap_or_else(|| unreachable!("inserted above"));
        if s.counters.len() != n {
            s.counters.resize_with(n, Counters::default);
        }
        s
    }

    /// [`Engine::on_message`] for a message whose call the driver can serve with only `can`
    /// (e.g. a request whose client takes a single JSON answer: no duplicates): faults that
    /// need more pass it by, uncounted, so nothing is counted that was not done.
    pub fn on_message_with(
        &mut self,
        side: Side,
        session: &str,
        bytes: &[u8],
        now: Time,
        can: crate::capability::Capabilities,
    ) -> Verdict {
        self.call_can = Some(can);
        let v = self.on_message(side, session, bytes, now);
        self.call_can = None;
        v
    }

    /// Feed one message. `session` identifies the client session (stdio: one per relay;
    /// HTTP: the `Mcp-Session-Id`), `now` is run time.
    pub fn on_message(&mut self, side: Side, session: &str, bytes: &[u8], now: Time) -> Verdict {
        self.on_message_answering(side, session, bytes, now, None)
    }

    /// [`Engine::on_message`], also adding to `answered` the request ids the message
    /// answers ([`Message::answered_ids`]), from the same reading of it (a driver tracking
    /// the answers a stream owes need not read each message twice).
    pub fn on_message_answering(
        &mut self,
        side: Side,
        session: &str,
        bytes: &[u8],
        now: Time,
        answered: Option<&mut Vec<crate::jsonrpc::Id>>,
    ) -> Verdict {
        self.on_classified(side, session, &classify(bytes), bytes, now, answered)
    }

    /// [`Engine::on_message_answering`] for a message already read (`message` is
    /// `classify(bytes)`).
    fn on_classified(
        &mut self,
        side: Side,
        session: &str,
        message: &Message<'_>,
        bytes: &[u8],
        now: Time,
        answered: Option<&mut Vec<crate::jsonrpc::Id>>,
    ) -> Verdict {
        self.settle(now);
        self.session(session).last_seen = now;
        self.taint_expire(session, now);
        if let Some(ids) = answered {
            ids.extend(message.answered_ids());
        }
        match message {
            Message::Invalid(_) => Verdict::pass(),
            Message::Single(v) => self.on_view(side, session, v, bytes, now),
            Message::Batch(_) => self.on_batch(side, session, bytes, now),
        }
    }

    fn on_view(
        &mut self,
        side: Side,
        session: &str,
        v: &View<'_>,
        bytes: &[u8],
        now: Time,
    ) -> Verdict {
        let expired = self
            .sessions
            .get(session)
            .and_then(|s| s.expired)
            .filter(|_| !self.passed);
        if let (Side::Client, Some(answer)) = (side, expired) {
            if v.kind != Kind::Request {
                let mut shaping = Shaping::new(bytes);
                answer(None, &mut shaping);
                return record::verdict_of(&shaping);
            }
        }
        match (side, v.kind) {
            (Side::Client, Kind::Request) => self.on_request(session, v, bytes, now),
            (Side::Server, Kind::Response | Kind::Error) => {
                self.on_response(session, v, bytes, now)
            }
            (Side::Server, Kind::Request) => {
                if let Some(id) = &v.id {
                    let method = v.method.as_deref().unwrap_or_default().to_string();
                    self.session(session)
                        .server_pending
                        .insert(id.clone(), now, method);
                }
                let method = v.method.as_deref().unwrap_or_default().to_string();
                self.on_loose(side, session, &method, bytes, now)
            }
            (Side::Client, Kind::Response | Kind::Error) => {
                let method =
                    v.id.as_ref()
                        .and_then(|id| self.session(session).server_pending.take(id))
                        .map(|(_, m)| m)
                        .unwrap_or_default();
                self.on_loose(side, session, &method, bytes, now)
            }
            (_, Kind::Notification) => {
                let method = v.method.as_deref().unwrap_or_default().to_string();
                if side == Side::Client && method == "notifications/cancelled" {
                    self.taint_cancelled(session, v.params, now);
                }
                self.on_loose(side, session, &method, bytes, now)
            }
        }
    }
}

#[cfg(test)]
mod http_tests;
#[cfg(test)]
mod id_tests;
#[cfg(test)]
mod plan_tests;
#[cfg(test)]
mod servers_tests;
#[cfg(test)]
mod silent_tests;
#[cfg(test)]
mod sim_fast_tests;
#[cfg(test)]
mod sli_tests;
#[cfg(test)]
mod tests;
