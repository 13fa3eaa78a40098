//! The engine over time: expiring calls and idle sessions, failing calls when the server
//! goes away, ending sessions, timed faults, and the simulator's entry.

use super::{Engine, FailedCall, RELAY_ERROR};
use crate::event::Outcome;
use crate::faults::simulated::SimulatedCall;
use crate::faults::{Ctx, KindState, Phase, Shaping};
use crate::rng::StreamKey;
use crate::select::Direction;
use crate::splice;
use crate::time::Time;
use crate::verdict::ProcessAction;
use std::sync::Arc;

impl Engine {
    /// The simulator's entry: which faults hit a `tools/call` of `tool` in `session` at
    /// `now`, and what they do to it. Same selectors, counters and draws as
    /// [`Engine::on_message`]; no JSON is built and nothing is tracked as pending.
    pub fn on_simulated_call(&mut self, session: &str, tool: &str, now: Time) -> SimulatedCall {
        self.on_simulated_call_to(None, session, tool, now)
    }

    /// [`Engine::on_simulated_call`] for a call to the named server of a workload with
    /// several (a fault's `servers` selector matches it).
    pub fn on_simulated_call_to(
        &mut self,
        server: Option<&str>,
        session: &str,
        tool: &str,
        now: Time,
    ) -> SimulatedCall {
        let s = self.session(session);
        let seq = s.next_seq;
        s.next_seq += 1;
        let mut out = SimulatedCall::default();
        let plan = Arc::clone(&self.plan);
        let mut no_args = |_: &[String]| None;
        for (i, f) in plan.faults.iter().enumerate() {
            if !self.decide(
                i,
                session,
                server,
                seq,
                "tools/call",
                Some(tool),
                &mut no_args,
                now,
            ) {
                continue;
            }
            let (key, state) = self.kind_state(f, i, session);
            let mut c = Ctx {
                key,
                seq,
                now,
                method: "tools/call",
                tool: Some(tool),
                id: None,
                tools: f.select.tools.as_ref(),
                state,
                schema: None,
            };
            if f.effect.simulate(f.direction, &mut c, &mut out) {
                out.injected += 1;
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
        self.settle(now);
        let keys: Vec<String> = self.sessions.keys().cloned().collect();
        for k in keys {
            self.taint_expire(&k, now);
            let gone = self.session(&k).pending.expire(now);
            self.unanswered(&k, gone, now);
            let Some(ttl) = self.config.idle_session_ttl else {
                continue;
            };
            let s = self.session(&k);
            if s.pending.is_empty() && s.expired.is_none() && now.saturating_sub(s.last_seen) > ttl
            {
                if let Some(mut s) = self.sessions.remove(&k) {
                    let taints = s.taints.drain();
                    self.taint_drain(&k, taints, now);
                    self.agent_session_ended(&k, now);
                }
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
            let reply = splice::error_response(Some(&u.id), RELAY_ERROR, &msg, Some(&data));
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
            let taints = s.taints.drain();
            self.taint_drain(session, taints, now);
            self.agent_session_ended(session, now);
        }
    }

    /// End every session (at shutdown).
    pub fn finish(&mut self, now: Time) {
        self.settle(now);
        self.settle_undelivered(now);
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
            .filter_map(|(_, f)| f.effect.timer())
            .min()
    }

    /// Fire timed faults that are due; returns the process actions to carry out.
    pub fn on_timer(&mut self, session: &str, now: Time) -> Vec<ProcessAction> {
        let plan = Arc::clone(&self.plan);
        let mut out = Vec::new();
        for (i, f) in plan.faults.iter().enumerate() {
            let Some(at) = f.effect.timer() else {
                continue;
            };
            if !f.enabled || at > now || self.timers_fired.get(i).copied().unwrap_or(true) {
                continue;
            }
            self.timers_fired[i] = true;
            // A timer belongs to no session and no call: the kind acts on an empty message
            // with a state of its own.
            let mut state = KindState::default();
            let mut c = Ctx {
                key: StreamKey::new(plan.seed, f.id_hash, 0),
                seq: 0,
                now,
                method: "(timer)",
                tool: None,
                id: None,
                tools: f.select.tools.as_ref(),
                state: &mut state,
                schema: None,
            };
            let mut shaping = Shaping::new(b"");
            let Some(action) = f.effect.act(Phase::Request, &mut c, &mut shaping) else {
                continue;
            };
            out.extend(shaping.process);
            self.fault_event(
                session,
                0,
                None,
                "(timer)",
                None,
                f,
                Direction::ToServer,
                action,
                now,
            );
        }
        out
    }
}
