//! The relay: the engine between a front (how clients reach brownout) and a back (how
//! brownout reaches the server).
//!
//! [`Relay`] owns the engine, the run clock and the event log, and turns each message into
//! a verdict (fail-safe: if brownout itself fails on a message, the original passes and the
//! error goes to stderr; `--strict` fails closed). [`Pipe`] carries a verdict out in one
//! direction: forward now or after a delay, replace, drop, duplicate, hold behind the next
//! message, answer the sender, signal the server. Fronts and backs only move bytes.

pub mod answer;
pub mod child;
pub mod child_back;
pub mod child_session;
pub mod framing;
pub mod handshake;
pub mod head;
pub mod http;
pub mod http_answer;
pub mod http_back;
pub mod http_front;
pub mod http_serve;
pub mod http_sessions;
pub mod lane;
pub mod layers;
mod pipe;
pub mod sse;
pub mod sse_stream;
pub mod stdio;
pub mod up_client;
pub mod upstream_answer;
pub mod url_back;

use crate::events::EventSink;
use brownout_core::engine::{FailedCall, Read};
use brownout_core::jsonrpc::Id;
use brownout_core::stats::Report;
use brownout_core::verdict::{Forward, ProcessAction, Verdict};
use brownout_core::{Capabilities, Capability, Engine, EngineConfig, Plan, PlanErrors, Side, Time};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

pub use pipe::{dead_bytes, dead_end, to_duration, Pipe};

/// Where the bytes of one direction go: a writer task's queue.
pub type Outbox = mpsc::Sender<Vec<u8>>;

/// Queue depth per writer; a full queue slows the reader down (back-pressure).
pub const OUTBOX_DEPTH: usize = 1024;

/// Messages scheduled for later (delayed, duplicated, held by a reorder) at most, over the
/// whole relay. Beyond it, a pipe waits for one to go before scheduling another: the reader
/// behind it slows down (back-pressure) instead of the relay growing without bound.
pub const MAX_SCHEDULED: usize = 65_536;

static SCHEDULED: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(MAX_SCHEDULED);

/// Run `work` on its own task once a scheduling slot is free; it holds the slot until done.
async fn schedule(work: impl std::future::Future<Output = ()> + Send + 'static) {
    // The semaphore is never closed, so acquiring only waits.
    let permit = SCHEDULED.acquire().await.ok();
    tokio::spawn(async move {
        let _slot = permit;
        work.await;
    });
}

/// Messages scheduled for later right now (see [`MAX_SCHEDULED`]).
pub fn scheduled() -> usize {
    MAX_SCHEDULED - SCHEDULED.available_permits()
}

/// Options every relay shares.
#[derive(Debug, Clone, Default)]
pub struct RelayOptions {
    pub strict: bool,
    pub max_pending: Option<usize>,
    /// Forget sessions idle this long (the HTTP relay; stdio keeps its one session).
    pub idle_session_ttl: Option<Duration>,
    /// `--seed`: overrides the seed of every plan this relay runs (reloads included).
    pub seed: Option<u64>,
    /// What this relay's front and back can carry out: a plan with a fault they cannot
    /// perform is refused when it loads (first load and every reload), never counted as
    /// injected.
    pub driver: Driver,
    /// `--otlp`: a span per call to this exporter (see [`crate::otlp`]).
    pub otlp: Option<crate::otlp::Otlp>,
}

/// A relay's name in messages (`proxy stdio -- CMD`) and its [`Capabilities`]: what its
/// front and its back can carry out (see [`layers::driver`]).
#[derive(Debug, Clone, Copy)]
pub struct Driver {
    /// The front's words in the name (`proxy http`).
    pub front: &'static str,
    /// The back's words in the name (`--upstream`); empty for a relay built by hand.
    pub back: &'static str,
    pub can: Capabilities,
}

impl Default for Driver {
    /// A driver that claims everything (tests that build a relay by hand).
    fn default() -> Driver {
        Driver {
            front: "this relay",
            back: "",
            can: Capabilities::all(),
        }
    }
}

impl Driver {
    /// The relay's name in messages: `` `proxy http --upstream` ``.
    pub fn name(&self) -> String {
        if self.back.is_empty() {
            self.front.to_string()
        } else {
            format!("`{} {}`", self.front, self.back)
        }
    }
}

/// The engine, the clock and the event log of one relay.
pub struct Relay {
    engine: Mutex<Engine>,
    start: Instant,
    strict: bool,
    events: Option<EventSink>,
    /// Live figures of the back (sessions, routes), shown under `back` in the status.
    back_status: Mutex<Option<BackStatus>>,
    seed: Option<u64>,
    driver: Driver,
    /// `--otlp`: the engine's events become spans (checked once per message).
    otlp: Option<crate::otlp::CallHook>,
}

/// A back's live figures, for the status.
pub type BackStatus = Box<dyn Fn() -> serde_json::Value + Send + Sync>;

impl Relay {
    pub fn new(mut plan: Plan, opts: &RelayOptions, events: Option<EventSink>) -> Relay {
        if let Some(seed) = opts.seed {
            plan.seed = seed;
        }
        let mut config = EngineConfig {
            record_events: events.is_some() || opts.otlp.is_some(),
            ..EngineConfig::default()
        };
        if let Some(n) = opts.max_pending {
            config.max_pending = n;
        }
        config.idle_session_ttl = opts.idle_session_ttl.map(|d| Time(d.as_micros() as u64));
        let start = Instant::now();
        Relay {
            engine: Mutex::new(Engine::new(plan, config)),
            start,
            strict: opts.strict,
            events,
            back_status: Mutex::new(None),
            seed: opts.seed,
            driver: opts.driver,
            otlp: opts.otlp.as_ref().map(|o| o.hook(start)),
        }
    }

    /// Run time: microseconds since the relay started.
    pub fn now(&self) -> Time {
        Time(self.start.elapsed().as_micros() as u64)
    }

    /// The seed `--seed` forces on every plan, if given.
    pub fn seed_override(&self) -> Option<u64> {
        self.seed
    }

    /// Refuse a plan with a fault this relay cannot perform (see [`Driver`]); `file` names
    /// the plan in the errors.
    pub fn check_plan(&self, plan: &Plan, file: &str) -> Result<(), PlanErrors> {
        plan.check_driver(&self.driver.name(), self.driver.can, file)
    }

    /// Replace the plan atomically (see [`Engine::set_plan`]).
    pub fn set_plan(&self, mut plan: Plan) {
        if let Some(seed) = self.seed {
            plan.seed = seed;
        }
        self.engine().set_plan(plan);
    }

    /// Live figures for the admin API: sessions, pending requests, and the run summary
    /// (calls, outcomes, error rate, injections per fault, latency percentiles).
    pub fn status(&self) -> serde_json::Value {
        let mut v = {
            let now = self.now();
            let mut engine = self.engine();
            // Answers that came due since the last message count now.
            engine.settle(now);
            serde_json::json!({
                "sessions": engine.session_count(),
                "pending": engine.pending_count(),
                "summary": report(&engine),
            })
        };
        if let Some(f) = self
            .back_status
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            v["back"] = f();
        }
        if let Some(otlp) = &self.otlp {
            v["otlp"] = otlp.status();
        }
        v
    }

    /// The `--otlp` hook, if the relay exports spans.
    pub fn otlp(&self) -> Option<&crate::otlp::CallHook> {
        self.otlp.as_ref()
    }

    /// Show a back's live figures under `back` in the status.
    pub fn set_back_status(&self, f: BackStatus) {
        *self.back_status.lock().unwrap_or_else(|p| p.into_inner()) = Some(f);
    }

    /// Whether the engine keeps state for `session`, and for how many sessions in all.
    pub fn session_state(&self, session: &str) -> (bool, usize) {
        let engine = self.engine();
        (engine.has_session(session), engine.session_count())
    }

    /// Read the engine under its lock (metrics snapshots).
    pub fn with_engine<T>(&self, f: impl FnOnce(&Engine) -> T) -> T {
        f(&self.engine())
    }

    fn engine(&self) -> MutexGuard<'_, Engine> {
        // A panic inside the engine is caught below; the state it left is still usable.
        self.engine.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Decide what happens to one message.
    pub fn handle(&self, side: Side, session: &str, bytes: &[u8]) -> Verdict {
        self.handle_at(side, session, bytes, self.now(), Decide::All)
    }

    /// Read a message of `session` and say whether no fault can touch it now
    /// ([`Engine::read`]; never with `--otlp`, which marks requests as they pass): one that
    /// [`Read::passes`] may be written first and recorded after. Either way
    /// [`Relay::handle_read`] goes on with it, without reading it again.
    pub fn read<'a>(&self, side: Side, session: &str, bytes: &'a [u8]) -> Read<'a> {
        if self.otlp.is_some() {
            return Read::decided(bytes);
        }
        self.engine().read(side, session, bytes, || self.now())
    }

    /// Go on with a message [`Relay::read`] read: one that passed has gone on and is only
    /// recorded (no fault decides on it, even one added meanwhile); any other is decided as
    /// [`Relay::handle`] does.
    pub fn handle_read(&self, side: Side, session: &str, read: &Read<'_>) -> Verdict {
        let bytes = read.bytes();
        self.handle_at(side, session, bytes, self.now(), Decide::Read(read))
    }

    /// [`Relay::handle`] for a client request that can take only one answer message (an
    /// HTTP client that accepts JSON, not SSE): faults that would send more pass it by,
    /// uncounted.
    pub fn handle_single_answer(&self, session: &str, bytes: &[u8]) -> Verdict {
        let can = self.driver.can.without(Capability::MultipleAnswers);
        self.handle_at(Side::Client, session, bytes, self.now(), Decide::With(can))
    }

    /// [`Relay::handle`] for a server message on a stream that owes answers: the ids it
    /// answers are removed from `owed`, from the engine's own reading of the message. With
    /// `late`, its last byte reaches the client that long after now (a front pacing the
    /// answer: `slow_stream`, `bandwidth`): the call it answers is recorded as completed
    /// then, the latency the client felt.
    pub fn handle_owing(
        &self,
        session: &str,
        bytes: &[u8],
        late: Option<Duration>,
        owed: &mut Vec<Id>,
    ) -> Verdict {
        let now = self.now();
        let now = late.map_or(now, |late| Time(now.0 + late.as_micros() as u64));
        if owed.is_empty() {
            return self.handle_at(Side::Server, session, bytes, now, Decide::All);
        }
        let mut answered = Vec::new();
        let v = self.handle_at(
            Side::Server,
            session,
            bytes,
            now,
            Decide::Answering(&mut answered),
        );
        owed.retain(|id| !answered.contains(id));
        v
    }

    fn handle_at(
        &self,
        side: Side,
        session: &str,
        bytes: &[u8],
        now: Time,
        decide: Decide<'_>,
    ) -> Verdict {
        if let (Some(otlp), Side::Client) = (&self.otlp, side) {
            otlp.request(session, bytes);
        }
        let mut engine = self.engine();
        let result = catch_unwind(AssertUnwindSafe(|| match decide {
            Decide::All => engine.on_message(side, session, bytes, now),
            Decide::With(can) => engine.on_message_with(side, session, bytes, now, can),
            Decide::Read(read) => engine.on_read(side, session, read, now),
            Decide::Answering(ids) => {
                engine.on_message_answering(side, session, bytes, now, Some(ids))
            }
        }));
        let verdict = match result {
            Ok(v) => v,
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                if self.strict {
                    eprintln!("brownout: internal error on a message ({what}); --strict: not forwarding it");
                    Verdict {
                        forward: Forward::Drop,
                        ..Verdict::pass()
                    }
                } else {
                    eprintln!(
                        "brownout: internal error on a message ({what}); forwarding it unchanged"
                    );
                    Verdict::pass()
                }
            }
        };
        self.flush_events(&mut engine);
        verdict
    }

    fn flush_events(&self, engine: &mut Engine) {
        // A fault that can never fire is worth saying, with or without an event log.
        for w in engine.take_coverage_warnings() {
            eprintln!("brownout: warning: {w}");
            if let Some(sink) = &self.events {
                sink.write_record(&w);
            }
        }
        match (&self.events, &self.otlp) {
            (None, None) => {}
            // Only moved under the lock; the sink's writer task encodes them.
            (Some(sink), None) => sink.write_all(engine.drain_events().collect()),
            // Spans are built on the exporter's thread.
            (None, Some(otlp)) => otlp.events(engine.drain_events().collect()),
            (Some(sink), Some(otlp)) => {
                let events: Vec<_> = engine.drain_events().collect();
                otlp.events(events.clone());
                sink.write_all(events);
            }
        }
    }

    /// The server of `session` is gone: every call in flight gets a clear error (`reason`),
    /// and `ended` ("the server ended (exit status 1)") goes to stderr with how many. The
    /// one place a dead server's callers are failed; the back delivers the answers.
    pub fn server_gone(&self, session: &str, reason: &str, ended: &str) -> Vec<FailedCall> {
        let failed = self.fail_pending(session, reason);
        if !failed.is_empty() {
            eprintln!(
                "brownout: {ended}; {} call(s) in flight answered with an error",
                failed.len()
            );
        }
        failed
    }

    /// brownout answers call `id` in the server's place with a clear error (`why`: the
    /// server failed, went silent or refused): the error passes the engine as the server's
    /// message, so the failure is counted. Returns the verdict and the error to carry out.
    pub fn owed_error(&self, session: &str, id: &Id, why: &str) -> (Verdict, Vec<u8>) {
        let err = relay_error(Some(id), &format!("brownout: {why}"));
        let v = self.handle(Side::Server, session, &err);
        (v, err)
    }

    /// The server went away: clear errors for every call in flight.
    pub fn fail_pending(&self, session: &str, reason: &str) -> Vec<FailedCall> {
        let now = self.now();
        let mut engine = self.engine();
        let out = engine.fail_pending(session, reason, now);
        self.flush_events(&mut engine);
        out
    }

    pub fn next_timer(&self) -> Option<Time> {
        self.engine().next_timer()
    }

    pub fn on_timer(&self, session: &str) -> Vec<ProcessAction> {
        let now = self.now();
        let mut engine = self.engine();
        let out = engine.on_timer(session, now);
        self.flush_events(&mut engine);
        out
    }

    /// A session ended (HTTP DELETE, its server process gone): forget it.
    pub fn end_session(&self, session: &str) {
        let now = self.now();
        let mut engine = self.engine();
        engine.end_session(session, now);
        self.flush_events(&mut engine);
    }

    pub fn expire(&self) {
        let now = self.now();
        let mut engine = self.engine();
        engine.expire(now);
        self.flush_events(&mut engine);
    }

    /// End the run: calls still in flight are recorded as unanswered; returns the summary.
    pub async fn finish(&self) -> Report {
        let report = {
            let now = self.now();
            let mut engine = self.engine();
            engine.finish(now);
            self.flush_events(&mut engine);
            report(&engine)
        };
        if let Some(sink) = &self.events {
            sink.close().await;
        }
        report
    }

    pub fn restart_policy(&self) -> brownout_core::faults::process::RestartPolicy {
        self.engine().plan().restart_policy()
    }
}

/// A JSON-RPC error from brownout itself (the server failed, a limit was hit).
pub fn relay_error(id: Option<&Id>, message: &str) -> Vec<u8> {
    brownout_core::splice::error_response(id, -32603, message, None)
}

/// The run summary with its per-method and per-tool lines and every fault of the plan.
fn report(engine: &Engine) -> Report {
    engine
        .summary()
        .report()
        .with_slis(engine.slis())
        .with_faults(
            engine
                .plan()
                .faults
                .iter()
                .map(|f| (f.id.as_str(), f.effect.kind())),
        )
}

/// Which faults decide on a message the relay hands the engine.
enum Decide<'a> {
    /// Every fault.
    All,
    /// Only faults that need no more than these (a client that takes one JSON answer).
    With(Capabilities),
    /// As [`Engine::read`] said: none if the message has gone on untouched, every fault
    /// otherwise.
    Read(&'a Read<'a>),
    /// Every fault; the ids the message answers are added to the list.
    Answering(&'a mut Vec<Id>),
}

#[cfg(test)]
mod both_fronts;
#[cfg(test)]
mod tests;
