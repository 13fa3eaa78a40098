//! Whether a fault hits a message (selectors, counters, draws), and letting a hit act.

use super::{Engine, Session};
use crate::faults::{Ctx, KindState, Phase, Shaping, Targets};
use crate::jsonrpc::Id;
use crate::plan::Fault;
use crate::rng::{salt, StreamKey};
use crate::select::session_selected;
use crate::time::Time;
use std::sync::Arc;

/// What a fault's selector says of a message ([`Engine::reach`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reach {
    /// It cannot hit this message.
    No,
    /// It hits, uncounted (its kind says so for this method).
    Always,
    /// It hits if its counters admit the message and its draw fires.
    Counted,
}

impl Engine {
    /// Whether fault `i` hits this message; advances the fault's counters.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn decide(
        &mut self,
        i: usize,
        session: &str,
        server: Option<&str>,
        seq: u64,
        method: &str,
        tool: Option<&str>,
        arg_at: &mut dyn FnMut(&[String]) -> Option<serde_json::Value>,
        now: Time,
    ) -> bool {
        if self.passed {
            return false;
        }
        let plan = Arc::clone(&self.plan);
        let f: &Fault = &plan.faults[i];
        match self.reach(f, session, server, method, tool, arg_at, now) {
            Reach::No => return false,
            Reach::Always => return true,
            Reach::Counted => {}
        }
        let sel = &f.select;
        let seed = plan.seed;
        let s = self.session(session);
        let key = StreamKey::new(seed, f.id_hash, s.hash);
        let c = &mut s.counters[i];
        if !c.admits(sel) {
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

    /// What fault `f`'s selector says of a message, before its counters and draws: nothing
    /// here changes state, so [`Engine::passes`](super::Engine::passes) asks it too, and a
    /// message every fault says [`Reach::No`] of passes whatever the counters hold.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn reach(
        &self,
        f: &Fault,
        session: &str,
        server: Option<&str>,
        method: &str,
        tool: Option<&str>,
        arg_at: &mut dyn FnMut(&[String]) -> Option<serde_json::Value>,
        now: Time,
    ) -> Reach {
        if !f.enabled {
            return Reach::No;
        }
        if let Some(can) = self.call_can {
            if f.effect
                .needs(f.direction)
                .iter()
                .any(|n| !can.has(n.capability))
            {
                return Reach::No;
            }
        }
        let sel = &f.select;
        if !sel.method_matches(method) {
            return Reach::No;
        }
        match f.effect.targets(method, tool, sel.tools.as_ref()) {
            Targets::Skip => return Reach::No,
            Targets::Always => return Reach::Always,
            Targets::IgnoreTools => {}
            Targets::BySelector => {
                if !sel.tool_matches(tool) {
                    return Reach::No;
                }
            }
        }
        if !sel.server_matches(server) {
            return Reach::No;
        }
        if !sel.arguments_match(arg_at) {
            return Reach::No;
        }
        if let Some(frac) = sel.sessions {
            // Drawn from the key below its server: an agent is in the radius on every
            // server it reaches, or on none (see `crate::session_key`).
            let base = crate::session_key::split(session).1;
            if !session_selected(self.plan.seed, base, frac) {
                return Reach::No;
            }
        }
        if !sel.in_window(now) {
            return Reach::No;
        }
        Reach::Counted
    }

    /// The state fault `i` keeps for `session` (or for all sessions, if its kind says so),
    /// and the session's draw key for it.
    pub(super) fn kind_state(
        &mut self,
        f: &Fault,
        i: usize,
        session: &str,
    ) -> (StreamKey, &mut KindState) {
        let seed = self.plan.seed;
        let hash = self.session(session).hash;
        let key = StreamKey::new(seed, f.id_hash, hash);
        let state = if f.effect.shared_state() {
            self.shared.entry(i).or_default()
        } else {
            &mut self.session(session).counters[i].kind
        };
        (key, state)
    }

    /// Let fault `f` (number `i`) shape the message in `phase`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn apply(
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
        // Only kinds that shape results read the schema: the lookup is skipped for the rest.
        let schema = if f.effect.alters_result() {
            tool.and_then(|t| self.slis.schema(t))
        } else {
            None
        };
        let (key, state) = self.kind_state(f, i, session);
        let mut c = Ctx {
            key,
            seq,
            now,
            method,
            tool,
            id,
            tools: f.select.tools.as_ref(),
            state,
            schema: schema.as_deref(),
        };
        let result = f.effect.act(phase, &mut c, s);
        if let Some(answer) = s.expire.take() {
            let session: &mut Session = self.session(session);
            session.expired = Some(answer);
        }
        result
    }
}
