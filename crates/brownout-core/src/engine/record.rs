//! What the engine records: fault events, call events, the run summary and the SLIs; and
//! how a shaped message becomes a verdict.

use super::{Call, Engine};
use crate::correlate::Unanswered;
use crate::event::{CallEvent, Event, FaultEvent, Outcome};
use crate::faults::Shaping;
use crate::jsonrpc::{Id, Kind, View};
use crate::plan::Fault;
use crate::select::Direction;
use crate::time::Time;
use crate::verdict::{Forward, Outgoing, Verdict};

impl Engine {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn fault_event(
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
            id: id.cloned(),
            method: method.to_string(),
            tool: tool.map(String::from),
            direction: dir.as_str(),
            fault: f.id.clone(),
            kind: f.effect.kind(),
            action,
        }));
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn call_event(
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
        let schema_valid = self.schema_valid(call, outcome, delivered);
        self.record_call_as(
            session,
            id,
            call,
            latency,
            outcome,
            code,
            at,
            mutated,
            schema_valid,
        );
    }

    /// Whether a delivered answer's structured content is valid against its tool's
    /// advertised `outputSchema` (true where there is nothing to check).
    pub(super) fn schema_valid(
        &mut self,
        call: &Call,
        outcome: Outcome,
        delivered: Option<&[u8]>,
    ) -> bool {
        match (&call.tool, delivered) {
            (Some(tool), Some(bytes)) if outcome == Outcome::Ok && call.method == "tools/call" => {
                self.slis.structured_valid(tool, bytes)
            }
            _ => true,
        }
    }

    /// Record a finished call: the summary, the SLIs and (when asked for) its event.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn record_call_as(
        &mut self,
        session: &str,
        id: &Id,
        call: &Call,
        latency: Time,
        outcome: Outcome,
        code: Option<i64>,
        at: Time,
        mutated: bool,
        schema_valid: bool,
    ) {
        // The summary and the SLIs are always kept; the event itself is built only when
        // someone reads it.
        self.summary
            .record_call(outcome, latency.as_micros(), mutated);
        // With several servers behind the relay, a tool's figures are the server's
        // (`SERVER/TOOL`): two servers may have tools of one name.
        let tool = call
            .tool
            .as_deref()
            .map(|t| crate::session_key::qualified(session, t));
        self.slis.record(
            &call.method,
            tool.as_deref(),
            outcome,
            latency.as_millis_f64(),
            schema_valid,
            call.altered,
        );
        if !self.config.record_events {
            return;
        }
        self.events.push(Event::Call(CallEvent {
            t_ms: at.as_millis_f64(),
            session: session.to_string(),
            seq: call.seq,
            id: Some(id.clone()),
            method: call.method.clone(),
            tool: call.tool.clone(),
            latency_ms: latency.as_millis_f64(),
            outcome,
            error_code: code,
            faults: call.applied.clone(),
            mutated,
        }));
    }

    pub(super) fn unanswered(&mut self, session: &str, gone: Vec<Unanswered<Call>>, now: Time) {
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
}

pub(super) fn outcome_of(v: &View<'_>) -> (Outcome, Option<i64>) {
    match v.kind {
        Kind::Error => (Outcome::Error, v.error_code()),
        Kind::Response if v.is_tool_error() => (Outcome::ToolError, None),
        Kind::Response => (Outcome::Ok, None),
        _ => (Outcome::Malformed, None),
    }
}

pub(super) fn verdict_of(s: &Shaping<'_>) -> Verdict {
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
