//! A call's life: the request (faults decide and act), the response (response effects,
//! correlation), and its completion, recorded once as the client saw it.

use super::{record, Call, Counters, Engine, Side};
use crate::event::Outcome;
use crate::faults::{Answer, Phase, Shaping};
use crate::jsonrpc::{classify, Id, Kind, Message, View};
use crate::select::Direction;
use crate::time::Time;
use crate::verdict::{Forward, Outgoing, Verdict};
use std::sync::Arc;

impl Engine {
    pub(super) fn on_request(
        &mut self,
        session: &str,
        v: &View<'_>,
        bytes: &[u8],
        now: Time,
    ) -> Verdict {
        let method = v.method.as_deref().unwrap_or_default();
        let tool = v.tool.as_deref();
        let passed = self.passed;
        let s = self.session(session);
        let seq = s.next_seq;
        s.next_seq += 1;
        if let Some(answer) = s.expired.filter(|_| !passed) {
            if method != "initialize" {
                return self.on_expired_request(session, v, seq, bytes, now, answer);
            }
            // The client initializes again on the same session key (stdio, where the key
            // never changes): as over HTTP, where that makes a new session, the session
            // starts afresh: the expiry is lifted and per-session counters start again.
            s.expired = None;
            s.counters.iter_mut().for_each(|c| *c = Counters::default());
        }
        let mut args_cache: Option<Option<serde_json::Value>> = None;
        let mut args = || args_cache.get_or_insert_with(|| v.tool_arguments()).clone();
        let mut arg_at = v.argument_reader();
        let mut hits = Vec::new();
        let server = crate::session_key::split(session).0;
        for i in 0..self.plan.faults.len() {
            if self.decide(i, session, server, seq, method, tool, &mut arg_at, now) {
                hits.push(i);
            }
        }
        // Taints: a session that received a changed result has each request checked; a
        // call a result-changing fault hit keeps its arguments' fingerprint. Neither costs
        // anything otherwise.
        if self.watched(session) {
            // A `tools/list` asked again is a re-fetch of `tools/list`.
            let asked = crate::session_key::qualified(session, tool.unwrap_or(method));
            let found = self.book(session).check_raw(
                &asked,
                method == "tools/call",
                bytes,
                &mut args,
                crate::taint::fingerprint,
            );
            self.taint_findings(session, found, Some(&asked), seq, now);
        }
        let alters = hits
            .iter()
            .any(|&i| self.plan.faults[i].effect.alters_result());
        let args_fp = alters.then(|| crate::taint::fingerprint(args().as_ref()));
        let id = v.id.clone();
        if hits.is_empty() {
            if let Some(id) = id {
                let call = Call::new(seq, method, tool, self.generation);
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
            let overrides = f.effect.overrides_reply();
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
        let mut verdict = record::verdict_of(&shaping);
        let call = Call {
            seq,
            method: method.to_string(),
            tool: tool.map(String::from),
            response_hits,
            applied,
            generation: self.generation,
            altered: false,
            altered_by: None,
            args_fp,
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

    /// A request on a session a fault expired (`session_expiry`): 404 / an error, counted
    /// as a failed call, never forwarded.
    pub(super) fn on_expired_request(
        &mut self,
        session: &str,
        v: &View<'_>,
        seq: u64,
        bytes: &[u8],
        now: Time,
        answer: Answer,
    ) -> Verdict {
        let mut shaping = Shaping::new(bytes);
        answer(v.id.as_ref(), &mut shaping);
        let mut verdict = record::verdict_of(&shaping);
        verdict.forward = Forward::Drop;
        if let (Some(reply), Some(id)) = (shaping.reply.take(), v.id.clone()) {
            let call = Call::new(
                seq,
                v.method.as_deref().unwrap_or_default(),
                v.tool.as_deref(),
                self.generation,
            );
            let (out, delay) = self.finish_call(session, &id, call, &reply, now, now);
            verdict
                .reply
                .extend(out.map(|bytes| Outgoing { bytes, delay }));
        }
        verdict
    }

    pub(super) fn track(&mut self, session: &str, id: Id, now: Time, call: Call) {
        let gone = self.session(session).pending.insert(id, now, call);
        self.unanswered(session, gone, now);
    }

    pub(super) fn on_response(
        &mut self,
        session: &str,
        v: &View<'_>,
        bytes: &[u8],
        now: Time,
    ) -> Verdict {
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
            self.check_coverage(session, bytes, now);
        }
        if call.response_hits.is_empty() {
            let (outcome, code) = record::outcome_of(v);
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
        let verdict = record::verdict_of(&shaping);
        let delivered = now + shaping.delay;
        self.complete(session, &id, &call, &shaping, sent_at, delivered, now);
        verdict
    }

    /// Apply the response-side effects of a call's hits.
    pub(super) fn shape_response(
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
                if f.effect.alters_result() {
                    call.altered = true;
                    if call.altered_by.is_none() {
                        call.altered_by = Some((f.id.clone(), f.effect.kind()));
                    }
                }
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
    pub(super) fn finish_call(
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
        self.complete(session, id, &call, &shaping, now, now + delay, now);
        if shaping.drop {
            return (None, delay);
        }
        (
            Some(shaping.output().unwrap_or_else(|| reply.to_vec())),
            delay,
        )
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn complete(
        &mut self,
        session: &str,
        id: &Id,
        call: &Call,
        shaping: &Shaping<'_>,
        sent_at: Time,
        delivered: Time,
        now: Time,
    ) {
        let out = shaping.output();
        let bytes = out.as_deref().unwrap_or(shaping.original);
        let (outcome, code) = if shaping.drop {
            (Outcome::Dropped, None)
        } else {
            match classify(bytes) {
                Message::Single(v) if v.id.as_ref() == Some(id) => record::outcome_of(&v),
                _ => (Outcome::Malformed, None),
            }
        };
        // A changed result taints its session when the client gets it: a held answer
        // when it is due (a client that gave up first, or a run that ended, never saw it).
        let taint = if call.altered && outcome == Outcome::Ok {
            self.taint_of(call, shaping.original, shaping.changed_value(), bytes, now)
        } else {
            None
        };
        if delivered > now {
            // Due later (a delay, a held answer): recorded when it is due, so a run that
            // ends first counts it as unanswered, not as delivered in the future.
            let schema_valid = self.schema_valid(call, outcome, Some(bytes));
            let late = super::deferred::Late {
                at: delivered,
                session: session.to_string(),
                id: id.clone(),
                call: call.clone(),
                sent_at,
                outcome,
                code,
                mutated: shaping.mutated,
                schema_valid,
                taint,
            };
            if let Some(now_due) = self.deferred.push(late) {
                self.record_late(now_due);
            }
            return;
        }
        if let Some(t) = taint {
            self.keep_taint(session, t, now);
        }
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
}
