//! Calls whose answer is due later than it passed the engine.
//!
//! A `latency` fault, a `timeout` that holds then delivers, a `duplicate` with a gap: the
//! engine decides the answer now and the driver delivers it later. Recording such a call now,
//! at a run time still in the future, would count it as delivered even when the run ends (or
//! the client leaves) before it is: the relay would report what the client never got. So the
//! call waits here and is recorded when its time comes ([`Engine::settle`], at every message,
//! timer, expiry and the end of the run); what is still waiting when the run ends is recorded
//! as unanswered, at the end, with the time the client waited.

use super::{Call, Engine};
use crate::event::Outcome;
use crate::jsonrpc::Id;
use crate::time::Time;
use std::collections::BinaryHeap;

/// Most calls kept waiting; beyond it the soonest due is recorded at once (its time as
/// planned), so memory stays bounded however long the delays.
const MAX_WAITING: usize = 100_000;

/// One call whose answer is due at `at`.
#[derive(Debug)]
pub(super) struct Late {
    pub at: Time,
    pub session: String,
    pub id: Id,
    pub call: Call,
    pub sent_at: Time,
    pub outcome: Outcome,
    pub code: Option<i64>,
    pub mutated: bool,
    pub schema_valid: bool,
    /// What a fault changed in the answer: kept in the session's taints when it is due.
    pub taint: Option<crate::taint::Taint>,
}

/// Ordered by due time, soonest first (ties by arrival, so a seed replays exactly).
#[derive(Debug)]
struct Entry(Late, u64);

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        (self.0.at, self.1) == (o.0.at, o.1)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        // BinaryHeap is a max-heap: the soonest due compares greatest.
        (o.0.at, o.1).cmp(&(self.0.at, self.1))
    }
}

/// The calls waiting for their answer's time.
#[derive(Debug, Default)]
pub(super) struct Deferred {
    heap: BinaryHeap<Entry>,
    arrived: u64,
}

impl Deferred {
    /// Keep `late` until it is due; returns the call to record at once if the queue is full.
    pub fn push(&mut self, late: Late) -> Option<Late> {
        self.arrived += 1;
        self.heap.push(Entry(late, self.arrived));
        if self.heap.len() > MAX_WAITING {
            return self.heap.pop().map(|e| e.0);
        }
        None
    }

    fn pop_due(&mut self, now: Time) -> Option<Late> {
        if self.heap.peek().is_some_and(|e| e.0.at <= now) {
            return self.heap.pop().map(|e| e.0);
        }
        None
    }

    fn pop_any(&mut self) -> Option<Late> {
        self.heap.pop().map(|e| e.0)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }
}

impl Engine {
    /// Record the calls whose answer was due by `now`, in the order they were due.
    pub fn settle(&mut self, now: Time) {
        while let Some(late) = self.deferred.pop_due(now) {
            self.record_late(late);
        }
    }

    /// The run ends at `now`: calls whose answer was still due later were never delivered.
    pub(super) fn settle_undelivered(&mut self, now: Time) {
        while let Some(mut late) = self.deferred.pop_any() {
            late.at = now;
            late.outcome = Outcome::Unanswered;
            late.code = None;
            late.mutated = false;
            late.schema_valid = true;
            // Never delivered: the client saw no changed result.
            late.taint = None;
            self.record_late(late);
        }
    }

    pub(super) fn record_late(&mut self, mut late: Late) {
        if let Some(t) = late.taint.take() {
            // Only while the session lives: a gone client got nothing.
            if self.sessions.contains_key(&late.session) {
                self.keep_taint(&late.session, t, late.at);
            }
        }
        self.record_call_as(
            &late.session,
            &late.id,
            &late.call,
            late.at.saturating_sub(late.sent_at),
            late.outcome,
            late.code,
            late.at,
            late.mutated,
            late.schema_valid,
        );
    }

    /// Calls whose answer is decided but not yet due.
    pub fn calls_awaiting_delivery(&self) -> usize {
        self.deferred.len()
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::{Engine, EngineConfig, Side};
    use crate::time::Time;
    use crate::Plan;

    fn engine(plan: &str) -> Engine {
        let plan = Plan::from_str_named(plan, "p.yaml").unwrap_or_else(|e| panic!("{e}"));
        Engine::new(
            plan,
            EngineConfig {
                record_events: true,
                ..EngineConfig::default()
            },
        )
    }

    const CALL: &[u8] =
        br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{}}}"#;
    const ANSWER: &[u8] = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#;

    /// A delayed answer the run never delivered is unanswered, at the run's end.
    #[test]
    fn an_answer_due_after_the_run_ends_is_unanswered() {
        let mut e = engine("faults:\n  - {kind: latency, added_ms: 10000}\n");
        let _ = e.on_message(Side::Client, "s", CALL, Time::from_millis(0));
        let v = e.on_message(Side::Server, "s", ANSWER, Time::from_millis(1));
        assert!(v.delay >= Time::from_millis(10000), "{v:?}");
        assert_eq!(
            e.summary().report().calls,
            0,
            "not recorded before it is due"
        );
        e.finish(Time::from_millis(3000));
        let r = e.summary().report();
        assert_eq!(r.calls, 1);
        assert_eq!(r.outcomes.get("unanswered"), Some(&1), "{:?}", r.outcomes);
        assert!(r.latency_ms.max <= 3000.0 + 1e-9, "{:?}", r.latency_ms);
    }

    /// One that comes due while the run goes on is recorded as delivered, at its time.
    #[test]
    fn an_answer_due_during_the_run_is_recorded_when_due() {
        let mut e = engine("faults:\n  - {kind: latency, added_ms: 100}\n");
        let _ = e.on_message(Side::Client, "s", CALL, Time::from_millis(0));
        let _ = e.on_message(Side::Server, "s", ANSWER, Time::from_millis(1));
        e.finish(Time::from_millis(5000));
        let r = e.summary().report();
        assert_eq!(r.outcomes.get("ok"), Some(&1), "{:?}", r.outcomes);
        assert!(
            r.latency_ms.max >= 100.0 && r.latency_ms.max < 200.0,
            "{:?}",
            r.latency_ms
        );
    }
}
