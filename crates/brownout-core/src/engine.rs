//! The engine: feeds each message through the plan and answers with a [`Verdict`].
//!
//! Drivers call [`Engine::on_message`] for every message in either direction, with the
//! session key and the run time. The engine classifies the message, correlates responses
//! with their requests, decides which faults hit (selectors, counters, counter-based random
//! draws) and lets each hit fault shape the message. It also keeps the run summary and an
//! event buffer the driver drains. Decisions depend only on (seed, fault id, session key,
//! per-session sequence number) and the session's own history, never on how the driver's
//! tasks interleave.

use crate::correlate::{Pending, Unanswered, DEFAULT_CAPACITY, DEFAULT_TTL};
use crate::event::{CallEvent, Event, FaultEvent, Outcome};
use crate::faults::rate_limit::{Bucket, Scope};
use crate::faults::registry::Action as RegistryAction;
use crate::faults::simulated::{SimOutcome, SimulatedCall};
use crate::faults::{Ctx, Effect, KindState, Shaping};
use crate::jsonrpc::{self, classify, Id, Kind, Message, View};
use crate::plan::{Fault, Plan};
use crate::rng::{hash_str, salt, StreamKey};
use crate::select::{session_selected, Direction};
use crate::sli::Slis;
use crate::stats::Summary;
use crate::time::Time;
use crate::verdict::{Forward, Outgoing, ProcessAction, Verdict};
use serde_json::value::RawValue;
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
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            max_pending: DEFAULT_CAPACITY,
            pending_ttl: DEFAULT_TTL,
            record_events: true,
            idle_session_ttl: None,
        }
    }
}

/// A call in flight: what the engine needs when its response comes back.
#[derive(Debug)]
struct Call {
    seq: u64,
    method: String,
    tool: Option<String>,
    /// Faults that hit this call and still act on its response.
    response_hits: Vec<usize>,
    /// Ids of faults that already acted on the request.
    applied: Vec<String>,
    generation: u64,
}

#[derive(Debug, Default, Clone)]
struct Counters {
    matches: u64,
    injections: u64,
    bad: bool,
    kind: KindState,
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
    /// A `session_expiry` fault hit: everything the client sends now gets 404, until it
    /// sends `initialize` again.
    expired: bool,
    /// When the session last sent or received a message (idle sessions are forgotten).
    last_seen: Time,
}

/// The decision-making core shared by every driver.
pub struct Engine {
    plan: Arc<Plan>,
    generation: u64,
    config: EngineConfig,
    sessions: HashMap<String, Session, rustc_hash::FxBuildHasher>,
    global_buckets: HashMap<usize, Bucket>,
    timers_fired: Vec<bool>,
    summary: Summary,
    slis: Slis,
    events: Vec<Event>,
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
            global_buckets: HashMap::new(),
            timers_fired: vec![false; n],
            summary: Summary::default(),
            slis: Slis::default(),
            events: Vec::new(),
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
        // new index → old index of the same fault (same id, same kind).
        let carried: Vec<Option<usize>> = plan
            .faults
            .iter()
            .map(|f| {
                self.plan
                    .faults
                    .iter()
                    .position(|o| o.id == f.id && o.effect.kind() == f.effect.kind())
            })
            .collect();
        self.timers_fired = carried
            .iter()
            .map(|old| {
                old.and_then(|i| self.timers_fired.get(i).copied())
                    .unwrap_or(false)
            })
            .collect();
        let mut buckets = std::mem::take(&mut self.global_buckets);
        self.global_buckets = carried
            .iter()
            .enumerate()
            .filter_map(|(new, old)| old.and_then(|i| buckets.remove(&i)).map(|b| (new, b)))
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
                expired: false,
                last_seen: Time::ZERO,
                counters: Vec::new(),
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

    /// Feed one message. `session` identifies the client session (stdio: one per relay;
    /// HTTP: the `Mcp-Session-Id`), `now` is run time.
    pub fn on_message(&mut self, side: Side, session: &str, bytes: &[u8], now: Time) -> Verdict {
        self.session(session).last_seen = now;
        match classify(bytes) {
            Message::Invalid(_) => Verdict::pass(),
            Message::Single(v) => self.on_view(side, session, &v, bytes, now),
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
        if side == Side::Client
            && v.kind != Kind::Request
            && self.sessions.get(session).is_some_and(|s| s.expired)
        {
            let mut shaping = Shaping::new(bytes);
            crate::faults::session_expiry::expired(None, &mut shaping);
            return verdict_of(&shaping);
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
                self.on_loose(side, session, &method, bytes, now)
            }
        }
    }

    /// Whether fault `i` hits this message; advances the fault's counters.
    #[allow(clippy::too_many_arguments)]
    fn decide(
        &mut self,
        i: usize,
        session: &str,
        seq: u64,
        method: &str,
        tool: Option<&str>,
        args: &mut dyn FnMut() -> Option<serde_json::Value>,
        now: Time,
    ) -> bool {
        let plan = Arc::clone(&self.plan);
        let f: &Fault = &plan.faults[i];
        if !f.enabled {
            return false;
        }
        let sel = &f.select;
        if !sel.method_matches(method) {
            return false;
        }
        if method == "initialize" && matches!(f.effect, Effect::SessionExpiry(_)) {
            // An initialize starts a session: there is nothing yet to expire.
            return false;
        }
        let tools_are_targets = match &f.effect {
            Effect::Registry(r) => {
                if method == "tools/call" {
                    match r.action {
                        RegistryAction::Phantom => return r.fails_call(tool, None),
                        RegistryAction::Remove | RegistryAction::Dangling => {
                            if !r.fails_call(tool, sel.tools.as_ref()) {
                                return false;
                            }
                            true
                        }
                        RegistryAction::Hide | RegistryAction::StaleSchema => return false,
                        RegistryAction::ListChanged => false,
                    }
                } else {
                    true
                }
            }
            _ => false,
        };
        if !tools_are_targets && !sel.tool_matches(tool) {
            return false;
        }
        if !sel.arguments_match(args) {
            return false;
        }
        if let Some(frac) = sel.sessions {
            if !session_selected(plan.seed, session, frac) {
                return false;
            }
        }
        if !sel.in_window(now) {
            return false;
        }
        let seed = plan.seed;
        let s = self.session(session);
        let key = StreamKey::new(seed, f.id_hash, s.hash);
        let c = &mut s.counters[i];
        c.matches += 1;
        if c.matches <= sel.after_calls {
            return false;
        }
        if let Some(n) = sel.every_nth {
            if (c.matches - sel.after_calls) % n.max(1) != 0 {
                return false;
            }
        }
        if sel.max_injections.is_some_and(|m| c.injections >= m) {
            return false;
        }
        let p = sel.probability;
        let fire = match &f.correlation {
            Some(corr) => corr.fires(
                p,
                key,
                StreamKey::new(seed, f.id_hash, 0),
                seq,
                now,
                &mut c.bad,
            ),
            None => p >= 1.0 || key.unit(seq, salt::FIRE) < p,
        };
        if fire {
            c.injections += 1;
        }
        fire
    }

    fn on_request(&mut self, session: &str, v: &View<'_>, bytes: &[u8], now: Time) -> Verdict {
        let method = v.method.as_deref().unwrap_or_default();
        let tool = v.tool.as_deref();
        let s = self.session(session);
        let seq = s.next_seq;
        s.next_seq += 1;
        if s.expired {
            if method != "initialize" {
                return self.on_expired_request(session, v, seq, bytes, now);
            }
            // The client initializes again on the same session key (stdio, where the key
            // never changes): as over HTTP, where that makes a new session, the session
            // starts afresh: the expiry is lifted and per-session counters start again.
            s.expired = false;
            s.counters.iter_mut().for_each(|c| *c = Counters::default());
        }
        let mut args_cache: Option<Option<serde_json::Value>> = None;
        let mut args = || args_cache.get_or_insert_with(|| v.tool_arguments()).clone();
        let mut hits = Vec::new();
        for i in 0..self.plan.faults.len() {
            if self.decide(i, session, seq, method, tool, &mut args, now) {
                hits.push(i);
            }
        }
        let id = v.id.clone();
        if hits.is_empty() {
            if let Some(id) = id {
                let call = Call {
                    seq,
                    method: method.to_string(),
                    tool: tool.map(String::from),
                    response_hits: Vec::new(),
                    applied: Vec::new(),
                    generation: self.generation,
                };
                self.track(session, id, now, call);
            }
            return Verdict::pass();
        }
        let plan = Arc::clone(&self.plan);
        let mut shaping = Shaping::new(bytes);
        let mut applied = Vec::new();
        let mut response_hits = Vec::new();
        for &i in &hits {
            let f = &plan.faults[i];
            if f.effect.acts_on_response(f.direction) {
                response_hits.push(i);
            }
            // The first short-circuit answer stands, except that an expiry overrides it:
            // the session is gone whatever else was going to happen to this call.
            let overrides = matches!(f.effect, Effect::SessionExpiry(_));
            if !f.effect.acts_on_request(f.direction) || (shaping.reply.is_some() && !overrides) {
                continue;
            }
            if let Some(action) = self.apply(
                f,
                i,
                session,
                seq,
                method,
                tool,
                id.as_ref(),
                now,
                &mut shaping,
                Phase::Request,
            ) {
                applied.push(f.id.clone());
                self.fault_event(
                    session,
                    seq,
                    id.as_ref(),
                    method,
                    tool,
                    f,
                    Direction::ToServer,
                    action,
                    now,
                );
            }
        }
        let mut verdict = verdict_of(&shaping);
        let call = Call {
            seq,
            method: method.to_string(),
            tool: tool.map(String::from),
            response_hits,
            applied,
            generation: self.generation,
        };
        match (shaping.reply.take(), id) {
            (Some(reply), Some(id)) => {
                // Short-circuit: the answer is made here; response effects still shape it.
                let (out, delay) =
                    self.finish_call(session, &id, call, &reply, now, now + shaping.delay);
                verdict
                    .reply
                    .extend(out.map(|bytes| Outgoing { bytes, delay }));
                verdict.forward = Forward::Drop;
            }
            (Some(_), None) => verdict.forward = Forward::Drop,
            (None, Some(id)) => {
                if shaping.drop {
                    self.call_event(
                        session,
                        &id,
                        &call,
                        Time::ZERO,
                        Outcome::Dropped,
                        None,
                        now,
                        false,
                        None,
                    );
                } else {
                    self.track(session, id, now, call);
                }
            }
            (None, None) => {}
        }
        verdict
    }

    /// A request on a session a `session_expiry` fault expired: 404 / an error, counted as a
    /// failed call, never forwarded.
    fn on_expired_request(
        &mut self,
        session: &str,
        v: &View<'_>,
        seq: u64,
        bytes: &[u8],
        now: Time,
    ) -> Verdict {
        let mut shaping = Shaping::new(bytes);
        crate::faults::session_expiry::expired(v.id.as_ref(), &mut shaping);
        let mut verdict = verdict_of(&shaping);
        verdict.forward = Forward::Drop;
        if let (Some(reply), Some(id)) = (shaping.reply.take(), v.id.clone()) {
            let call = Call {
                seq,
                method: v.method.as_deref().unwrap_or_default().to_string(),
                tool: v.tool.as_deref().map(String::from),
                response_hits: Vec::new(),
                applied: Vec::new(),
                generation: self.generation,
            };
            let (out, delay) = self.finish_call(session, &id, call, &reply, now, now);
            verdict
                .reply
                .extend(out.map(|bytes| Outgoing { bytes, delay }));
        }
        verdict
    }

    fn track(&mut self, session: &str, id: Id, now: Time, call: Call) {
        let gone = self.session(session).pending.insert(id, now, call);
        self.unanswered(session, gone, now);
    }

    fn on_response(&mut self, session: &str, v: &View<'_>, bytes: &[u8], now: Time) -> Verdict {
        let taken =
            v.id.as_ref()
                .and_then(|id| self.session(session).pending.take(id));
        let Some((sent_at, call)) = taken else {
            return self.on_loose(Side::Server, session, "", bytes, now);
        };
        let Some(id) = v.id.clone() else {
            return Verdict::pass();
        };
        if call.method == "tools/list" && v.kind == Kind::Response {
            // What the server advertised, before any registry fault: the truth the
            // correctness SLI judges answers by.
            self.slis.learn_tools_list(bytes);
        }
        if call.response_hits.is_empty() {
            let (outcome, code) = outcome_of(v);
            self.call_event(
                session,
                &id,
                &call,
                now.saturating_sub(sent_at),
                outcome,
                code,
                now,
                false,
                Some(bytes),
            );
            return Verdict::pass();
        }
        let mut shaping = Shaping::new(bytes);
        let mut call = call;
        self.shape_response(session, &id, &mut call, now, &mut shaping);
        let verdict = verdict_of(&shaping);
        let delivered = now + shaping.delay;
        self.complete(session, &id, &call, &shaping, sent_at, delivered);
        verdict
    }

    /// Apply the response-side effects of a call's hits.
    fn shape_response(
        &mut self,
        session: &str,
        id: &Id,
        call: &mut Call,
        now: Time,
        shaping: &mut Shaping<'_>,
    ) {
        if call.generation != self.generation {
            return;
        }
        let plan = Arc::clone(&self.plan);
        for &i in &call.response_hits.clone() {
            let f = &plan.faults[i];
            if let Some(action) = self.apply(
                f,
                i,
                session,
                call.seq,
                &call.method,
                call.tool.as_deref(),
                Some(id),
                now,
                shaping,
                Phase::Response,
            ) {
                call.applied.push(f.id.clone());
                self.fault_event(
                    session,
                    call.seq,
                    Some(id),
                    &call.method,
                    call.tool.as_deref(),
                    f,
                    Direction::ToClient,
                    action,
                    now,
                );
            }
        }
    }

    /// Make a short-circuit answer pass through the response effects and record the call.
    fn finish_call(
        &mut self,
        session: &str,
        id: &Id,
        mut call: Call,
        reply: &[u8],
        now: Time,
        ready: Time,
    ) -> (Option<Vec<u8>>, Time) {
        let mut shaping = Shaping::new(reply);
        self.shape_response(session, id, &mut call, now, &mut shaping);
        let delay = ready.saturating_sub(now) + shaping.delay;
        self.complete(session, id, &call, &shaping, now, now + delay);
        if shaping.drop {
            return (None, delay);
        }
        (
            Some(shaping.output().unwrap_or_else(|| reply.to_vec())),
            delay,
        )
    }

    fn complete(
        &mut self,
        session: &str,
        id: &Id,
        call: &Call,
        shaping: &Shaping<'_>,
        sent_at: Time,
        delivered: Time,
    ) {
        let out = shaping.output();
        let bytes = out.as_deref().unwrap_or(shaping.original);
        let (outcome, code) = if shaping.drop {
            (Outcome::Dropped, None)
        } else {
            match classify(bytes) {
                Message::Single(v) if v.id.as_ref() == Some(id) => outcome_of(&v),
                _ => (Outcome::Malformed, None),
            }
        };
        self.call_event(
            session,
            id,
            call,
            delivered.saturating_sub(sent_at),
            outcome,
            code,
            delivered,
            shaping.mutated,
            Some(bytes),
        );
    }

    /// A message outside any call: notifications, server requests and their answers.
    fn on_loose(
        &mut self,
        side: Side,
        session: &str,
        method: &str,
        bytes: &[u8],
        now: Time,
    ) -> Verdict {
        let dir = side.direction();
        let plan = Arc::clone(&self.plan);
        let candidates: Vec<usize> = (0..plan.faults.len())
            .filter(|&i| {
                let f = &plan.faults[i];
                f.effect.acts_on_loose_messages()
                    && f.direction == dir
                    && f.select.method_matches(method)
                    && f.select.tools.is_none()
            })
            .collect();
        if candidates.is_empty() {
            return Verdict::pass();
        }
        let s = self.session(session);
        // Loose messages draw from their own sequence space, apart from calls.
        let seq = (1u64 << 63) | s.next_loose;
        s.next_loose += 1;
        let mut shaping = Shaping::new(bytes);
        let mut none = || None;
        for i in candidates {
            if !self.decide(i, session, seq, method, None, &mut none, now) {
                continue;
            }
            let f = &plan.faults[i];
            let phase = if dir == Direction::ToServer {
                Phase::Request
            } else {
                Phase::Response
            };
            if let Some(action) = self.apply(
                f,
                i,
                session,
                seq,
                method,
                None,
                None,
                now,
                &mut shaping,
                phase,
            ) {
                self.fault_event(session, seq, None, method, None, f, dir, action, now);
            }
        }
        verdict_of(&shaping)
    }

    /// Let fault `f` shape the message.
    #[allow(clippy::too_many_arguments)]
    fn apply(
        &mut self,
        f: &Fault,
        i: usize,
        session: &str,
        seq: u64,
        method: &str,
        tool: Option<&str>,
        id: Option<&Id>,
        now: Time,
        s: &mut Shaping<'_>,
        phase: Phase,
    ) -> Option<String> {
        let seed = self.plan.seed;
        let global_bucket = match &f.effect {
            Effect::RateLimit(r) if r.scope == Scope::Global => Some(
                self.global_buckets
                    .entry(i)
                    .or_insert_with(|| Bucket::full(r.capacity(), now))
                    .clone(),
            ),
            _ => None,
        };
        let sess = self.session(session);
        let key = StreamKey::new(seed, f.id_hash, sess.hash);
        let counters = &mut sess.counters[i];
        let mut c = Ctx {
            key,
            seq,
            now,
            method,
            tool,
            id,
            state: &mut counters.kind,
        };
        let result = match (&f.effect, phase) {
            (Effect::Latency(l), _) => Some(l.apply(&c, s)),
            (Effect::ColdStart(cs), Phase::Request) => cs.apply(&mut c, s),
            (Effect::Error(e), Phase::Request) => Some(e.apply_request(&c, s)),
            (Effect::Error(e), Phase::Response) => Some(e.apply_response(&c, s)),
            (Effect::Timeout(t), _) => Some(t.apply(&c, s)),
            (Effect::Malformed(m), _) => Some(m.apply(&c, s)),
            (Effect::Drop(d), _) => Some(d.apply(&c, s)),
            (Effect::Duplicate(d), _) => Some(d.apply(&c, s)),
            (Effect::Reorder(r), _) => Some(r.apply(&c, s)),
            (Effect::RateLimit(r), Phase::Request) => {
                let mut bucket = match global_bucket {
                    Some(b) => b,
                    None => c
                        .state
                        .bucket
                        .take()
                        .unwrap_or_else(|| Bucket::full(r.capacity(), now)),
                };
                let out = r.apply(&c, &mut bucket, s);
                if r.scope == Scope::Global {
                    self.global_buckets.insert(i, bucket);
                } else {
                    c.state.bucket = Some(bucket);
                }
                out
            }
            (Effect::SchemaDrift(d), Phase::Response) => d.apply(&c, s),
            (Effect::PartialResult(p), Phase::Response) => p.apply(&c, s),
            (Effect::Registry(r), Phase::Request) => r.apply_request(&c, s),
            (Effect::Registry(r), Phase::Response) => {
                r.apply_response(&c, f.select.tools.as_ref(), s)
            }
            (Effect::Process(p), Phase::Request) => Some(p.apply(&c, s)),
            (Effect::HttpStatus(h), Phase::Request) => Some(h.apply(&c, s)),
            (Effect::Connection(k), Phase::Request) => Some(k.apply_request(&c, s)),
            (Effect::Connection(k), Phase::Response) => k.apply_response(s),
            (Effect::SlowStream(k), Phase::Request) => Some(k.apply(&c, s)),
            (Effect::Bandwidth(k), Phase::Request) => Some(k.apply(&c, s)),
            (Effect::SessionExpiry(k), Phase::Request) => {
                let out = k.apply(&c, s);
                self.session(session).expired = true;
                Some(out)
            }
            _ => None,
        };
        result
    }

    #[allow(clippy::too_many_arguments)]
    fn fault_event(
        &mut self,
        session: &str,
        seq: u64,
        id: Option<&Id>,
        method: &str,
        tool: Option<&str>,
        f: &Fault,
        dir: Direction,
        action: String,
        now: Time,
    ) {
        self.summary.record_fault(&f.id, f.effect.kind());
        if !self.config.record_events {
            return;
        }
        self.events.push(Event::Fault(FaultEvent {
            t_ms: now.as_millis_f64(),
            session: session.to_string(),
            seq,
            id: id.map(Id::to_json),
            method: method.to_string(),
            tool: tool.map(String::from),
            direction: dir.as_str(),
            fault: f.id.clone(),
            kind: f.effect.kind(),
            action,
        }));
    }

    #[allow(clippy::too_many_arguments)]
    fn call_event(
        &mut self,
        session: &str,
        id: &Id,
        call: &Call,
        latency: Time,
        outcome: Outcome,
        code: Option<i64>,
        at: Time,
        mutated: bool,
        delivered: Option<&[u8]>,
    ) {
        // The summary and the SLIs are always kept; the event itself is built only when
        // someone reads it.
        self.summary
            .record_call(outcome, latency.as_micros(), mutated);
        let schema_valid = match (&call.tool, delivered) {
            (Some(tool), Some(bytes)) if outcome == Outcome::Ok && call.method == "tools/call" => {
                self.slis.structured_valid(tool, bytes)
            }
            _ => true,
        };
        self.slis.record(
            &call.method,
            call.tool.as_deref(),
            outcome,
            latency.as_millis_f64(),
            schema_valid,
        );
        if !self.config.record_events {
            return;
        }
        self.events.push(Event::Call(CallEvent {
            t_ms: at.as_millis_f64(),
            session: session.to_string(),
            seq: call.seq,
            id: Some(id.to_json()),
            method: call.method.clone(),
            tool: call.tool.clone(),
            latency_ms: latency.as_millis_f64(),
            outcome,
            error_code: code,
            faults: call.applied.clone(),
            mutated,
        }));
    }

    fn unanswered(&mut self, session: &str, gone: Vec<Unanswered<Call>>, now: Time) {
        for u in gone {
            self.call_event(
                session,
                &u.id,
                &u.entry,
                now.saturating_sub(u.sent_at),
                Outcome::Unanswered,
                None,
                now,
                false,
                None,
            );
        }
    }

    /// The simulator's entry: which faults hit a `tools/call` of `tool` in `session` at
    /// `now`, and what they do to it. Same selectors, counters and draws as
    /// [`Engine::on_message`]; no JSON is built and nothing is tracked as pending.
    pub fn on_simulated_call(&mut self, session: &str, tool: &str, now: Time) -> SimulatedCall {
        let s = self.session(session);
        let seq = s.next_seq;
        s.next_seq += 1;
        let mut out = SimulatedCall::default();
        let plan = Arc::clone(&self.plan);
        let mut no_args = || None;
        for (i, f) in plan.faults.iter().enumerate() {
            if !self.decide(i, session, seq, "tools/call", Some(tool), &mut no_args, now) {
                continue;
            }
            let hit = if let Effect::RateLimit(r) = &f.effect {
                let mut shaping = Shaping::new(b"");
                let limited = self
                    .apply(
                        f,
                        i,
                        session,
                        seq,
                        "tools/call",
                        Some(tool),
                        None,
                        now,
                        &mut shaping,
                        Phase::Request,
                    )
                    .is_some();
                if limited {
                    out.outcome = SimOutcome::FailFast;
                    out.injected += 1;
                }
                let _ = r;
                limited
            } else {
                let seed = plan.seed;
                let sess = self.session(session);
                let key = StreamKey::new(seed, f.id_hash, sess.hash);
                let mut c = Ctx {
                    key,
                    seq,
                    now,
                    method: "tools/call",
                    tool: Some(tool),
                    id: None,
                    state: &mut sess.counters[i].kind,
                };
                f.effect.simulate(f.direction, &mut c, &mut out)
            };
            if hit {
                self.summary.record_fault(&f.id, f.effect.kind());
            }
        }
        out
    }

    /// Expire old pending requests in every session (call now and then).
    /// Give up on calls older than the pending TTL and, with `idle_session_ttl`, forget
    /// sessions idle (nothing in flight, no message) that long: HTTP clients come and go,
    /// and a long run must not keep every session it ever saw. A forgotten session that
    /// speaks again starts with fresh per-session counters (its blast-radius membership is
    /// a hash of its key and does not change).
    pub fn expire(&mut self, now: Time) {
        let keys: Vec<String> = self.sessions.keys().cloned().collect();
        for k in keys {
            let gone = self.session(&k).pending.expire(now);
            self.unanswered(&k, gone, now);
            let Some(ttl) = self.config.idle_session_ttl else {
                continue;
            };
            let s = self.session(&k);
            if s.pending.is_empty() && !s.expired && now.saturating_sub(s.last_seen) > ttl {
                self.sessions.remove(&k);
            }
        }
    }

    /// The server went away: answer every call in flight in `session` with a clear error.
    pub fn fail_pending(&mut self, session: &str, reason: &str, now: Time) -> Vec<FailedCall> {
        let gone = self.session(session).pending.drain();
        let mut out = Vec::new();
        for u in gone {
            let msg = format!("brownout: {reason}");
            let data = serde_json::json!({"brownout": true, "method": u.entry.method});
            let reply = jsonrpc::error_response(Some(&u.id), RELAY_ERROR, &msg, Some(&data));
            self.call_event(
                session,
                &u.id,
                &u.entry,
                now.saturating_sub(u.sent_at),
                Outcome::Error,
                Some(RELAY_ERROR),
                now,
                false,
                None,
            );
            out.push(FailedCall { id: u.id, reply });
        }
        out
    }

    /// Forget a session; its calls in flight are recorded as unanswered.
    pub fn end_session(&mut self, session: &str, now: Time) {
        if let Some(mut s) = self.sessions.remove(session) {
            let gone = s.pending.drain();
            self.unanswered(session, gone, now);
        }
    }

    /// End every session (at shutdown).
    pub fn finish(&mut self, now: Time) {
        let keys: Vec<String> = self.sessions.keys().cloned().collect();
        for k in keys {
            self.end_session(&k, now);
        }
    }

    /// The next run time at which a timed fault (`process` with `at_ms`) fires.
    pub fn next_timer(&self) -> Option<Time> {
        self.plan
            .faults
            .iter()
            .enumerate()
            .filter(|(i, f)| f.enabled && !self.timers_fired.get(*i).copied().unwrap_or(true))
            .filter_map(|(_, f)| match &f.effect {
                Effect::Process(p) => p.at_ms.map(|ms| Time((ms * 1000.0) as u64)),
                _ => None,
            })
            .min()
    }

    /// Fire timed faults that are due; returns the process actions to carry out.
    pub fn on_timer(&mut self, session: &str, now: Time) -> Vec<ProcessAction> {
        let plan = Arc::clone(&self.plan);
        let mut out = Vec::new();
        for (i, f) in plan.faults.iter().enumerate() {
            let Effect::Process(p) = &f.effect else {
                continue;
            };
            let Some(at) = p.at_ms.map(|ms| Time((ms * 1000.0) as u64)) else {
                continue;
            };
            if !f.enabled || at > now || self.timers_fired.get(i).copied().unwrap_or(true) {
                continue;
            }
            self.timers_fired[i] = true;
            let action = p.action();
            out.push(action);
            self.fault_event(
                session,
                0,
                None,
                "(timer)",
                None,
                f,
                Direction::ToServer,
                action.to_string(),
                now,
            );
        }
        out
    }

    /// Batches: each element goes through the engine on its own; the forwarded batch keeps
    /// the elements that still go on, short-circuit answers go back as one batch, and the
    /// longest delay applies to the whole batch.
    fn on_batch(&mut self, side: Side, session: &str, bytes: &[u8], now: Time) -> Verdict {
        let Ok(items) = serde_json::from_slice::<Vec<&RawValue>>(bytes) else {
            return Verdict::pass();
        };
        let mut verdict = Verdict::pass();
        let mut forward: Vec<Vec<u8>> = Vec::new();
        let mut replies: Vec<Vec<u8>> = Vec::new();
        let mut changed = false;
        let mut reply_delay = Time::ZERO;
        for raw in items {
            let el = raw.get().as_bytes();
            let v = match classify(el) {
                Message::Single(v) => self.on_view(side, session, &v, el, now),
                _ => Verdict::pass(),
            };
            changed |= !v.is_pass();
            verdict.delay = verdict.delay.max(v.delay);
            verdict.process.extend(v.process);
            verdict.extra.extend(v.extra);
            for r in v.reply {
                reply_delay = reply_delay.max(r.delay);
                replies.push(r.bytes);
            }
            match v.forward {
                Forward::Original => forward.push(el.to_vec()),
                Forward::Replace(b) => forward.push(b),
                Forward::Drop => {}
            }
        }
        if !changed {
            return Verdict::pass();
        }
        verdict.forward = if forward.is_empty() {
            Forward::Drop
        } else {
            Forward::Replace(join_batch(&forward))
        };
        if !replies.is_empty() {
            verdict.reply.push(Outgoing {
                bytes: join_batch(&replies),
                delay: reply_delay,
            });
        }
        verdict
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Request,
    Response,
}

fn join_batch(items: &[Vec<u8>]) -> Vec<u8> {
    let mut out = vec![b'['];
    for (i, it) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(it);
    }
    out.push(b']');
    out
}

fn outcome_of(v: &View<'_>) -> (Outcome, Option<i64>) {
    match v.kind {
        Kind::Error => (Outcome::Error, v.error_code()),
        Kind::Response if v.is_tool_error() => (Outcome::ToolError, None),
        Kind::Response => (Outcome::Ok, None),
        _ => (Outcome::Malformed, None),
    }
}

fn verdict_of(s: &Shaping<'_>) -> Verdict {
    let forward = if !s.forwards() {
        Forward::Drop
    } else {
        match s.output() {
            Some(bytes) => Forward::Replace(bytes),
            None => Forward::Original,
        }
    };
    Verdict {
        forward,
        delay: s.delay,
        duplicates: s.duplicates,
        duplicate_gap: s.duplicate_gap,
        hold: s.hold,
        reply: Vec::new(),
        extra: s
            .extra
            .iter()
            .map(|b| Outgoing {
                bytes: b.clone(),
                delay: s.delay,
            })
            .collect(),
        process: s.process.clone(),
        http: s.http.clone(),
        stream: s.stream.clone(),
    }
}

#[cfg(test)]
mod tests;
