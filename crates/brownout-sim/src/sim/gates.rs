//! SLO gates in virtual time: every completed call and task goes to a core
//! [`GateWatch`], which is evaluated after each call and at every 100 ms of virtual time
//! (as the live runner does on the run clock), so a gate's first breach is found at the
//! call that caused it, and a `for` duration or a window emptying out is seen between calls.
//!
//! How a simulated call maps onto a [`CallObservation`]: an answer is `ok` (correct, or
//! not when a fault drifted or truncated it); a failed attempt the server answered (its base
//! error rate, an injected error, a queue rejection) or the client refused (breaker open,
//! rate limiter, deadline-aware skip) is an `error`; a client timeout or step deadline is
//! `unanswered` and timed out. The outcome is the last attempt's; `attempts` counts them all.

use super::{CallEnd, Sim};
use brownout_core::event::Outcome;
use brownout_core::slo::{
    CallObservation, CallScope, Gate, GateSummary, GateWatch, TaintMark, TaskObservation,
};

// The simulator's hooks, out of line: a run without gates pays one branch per event.
impl Sim<'_> {
    /// Evaluate the gates at every tick boundary up to `at` (a compare per event; the
    /// evaluations themselves out of line).
    #[inline]
    pub(super) fn gates_until(&mut self, at: u64) {
        if let Some(g) = self.gates.as_mut() {
            if g.next_tick_us <= at {
                g.until(at);
            }
        }
    }

    #[inline(never)]
    pub(super) fn gates_call(
        &mut self,
        tool: usize,
        end: CallEnd,
        timed_out: bool,
        latency_us: u64,
        attempts: u32,
    ) {
        let now = self.now;
        if let Some(g) = self.gates.as_mut() {
            g.call(now, tool, end, timed_out, latency_us, attempts);
        }
    }

    #[inline(never)]
    pub(super) fn gates_taint(&mut self, tool: usize, mark: TaintMark) {
        let now = self.now;
        if let Some(g) = self.gates.as_mut() {
            g.taint(now, tool, mark);
        }
    }

    pub(super) fn gates_breached(&self) -> bool {
        self.gates.as_ref().is_some_and(|g| g.breached)
    }

    #[inline(never)]
    pub(super) fn gates_task(&mut self, ok: bool) {
        let now = self.now;
        if let Some(g) = self.gates.as_mut() {
            g.task(now, ok);
        }
    }
}

/// How often gates are evaluated between calls, in microseconds of virtual time.
const TICK_US: u64 = 100_000;

#[derive(Clone)]
pub(super) struct SimGates {
    watch: GateWatch,
    next_tick_us: u64,
    /// One observation per tool, reused call after call (no allocation per call).
    calls: Vec<CallObservation>,
    /// Per tool, the gates that count its calls (scopes matched once, not per call).
    scopes: Vec<CallScope>,
    /// Some gate has breached.
    pub(super) breached: bool,
}

impl SimGates {
    pub(super) fn new(gates: Vec<Gate>, tools: &[String]) -> SimGates {
        let watch = GateWatch::new(gates);
        SimGates {
            scopes: tools
                .iter()
                .map(|t| watch.call_scope("tools/call", Some(t)))
                .collect(),
            watch,
            next_tick_us: 0,
            breached: false,
            calls: tools
                .iter()
                .map(|t| CallObservation {
                    at_ms: 0.0,
                    method: "tools/call".into(),
                    tool: Some(t.clone()),
                    outcome: Outcome::Ok,
                    latency_ms: 0.0,
                    correct: true,
                    timed_out: false,
                    attempts: 1,
                })
                .collect(),
        }
    }

    /// Evaluate at every tick boundary up to `now_us`.
    #[inline(never)]
    fn until(&mut self, now_us: u64) {
        while self.next_tick_us <= now_us {
            self.breached |= self.watch.tick(self.next_tick_us as f64 / 1000.0);
            self.next_tick_us += TICK_US;
        }
    }

    fn call(
        &mut self,
        now_us: u64,
        tool: usize,
        end: CallEnd,
        timed_out: bool,
        latency_us: u64,
        attempts: u32,
    ) {
        let (Some(c), Some(scope)) = (self.calls.get_mut(tool), self.scopes.get(tool)) else {
            return;
        };
        c.at_ms = now_us as f64 / 1000.0;
        c.latency_ms = latency_us as f64 / 1000.0;
        c.attempts = attempts;
        (c.outcome, c.correct, c.timed_out) = match end {
            CallEnd::Ok => (Outcome::Ok, true, false),
            CallEnd::Corrupt => (Outcome::Ok, false, false),
            CallEnd::Fail if timed_out => (Outcome::Unanswered, false, true),
            CallEnd::Fail | CallEnd::Skipped => (Outcome::Error, false, false),
        };
        self.watch.observe_call_in(scope, c);
        self.breached |= self.watch.tick(c.at_ms);
    }

    fn taint(&mut self, now_us: u64, tool: usize, mark: TaintMark) {
        let at_ms = now_us as f64 / 1000.0;
        let name = self.calls.get(tool).and_then(|c| c.tool.as_deref());
        self.watch.observe_taint(at_ms, name, mark);
        self.breached |= self.watch.tick(at_ms);
    }

    fn task(&mut self, now_us: u64, ok: bool) {
        let at_ms = now_us as f64 / 1000.0;
        self.watch.observe_task(&TaskObservation { at_ms, ok });
        self.breached |= self.watch.tick(at_ms);
    }

    /// The last evaluation, at the end of the run, and every gate's summary.
    pub(super) fn finish(mut self, end_us: u64) -> Vec<GateSummary> {
        self.until(end_us);
        self.watch.tick(end_us as f64 / 1000.0);
        self.watch.summaries()
    }
}
