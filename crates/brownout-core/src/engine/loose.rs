//! Messages outside any call (notifications, server requests and their answers) and
//! batches, whose elements go through the engine one by one.

use super::{record, Engine, Side};
use crate::faults::{Phase, Shaping};
use crate::jsonrpc::{classify, Message};
use crate::select::Direction;
use crate::time::Time;
use crate::verdict::{Forward, Outgoing, Verdict};
use serde_json::value::RawValue;
use std::sync::Arc;

/// Whether fault `f` is asked about a message outside any call going `dir` with `method`
/// ([`Engine::on_loose`]; [`Engine::passes`] asks the same).
pub(super) fn loose_candidate(f: &crate::plan::Fault, dir: Direction, method: &str) -> bool {
    f.effect.acts_on_loose_messages()
        && f.direction == dir
        && f.select.method_matches(method)
        && f.select.tools.is_none()
}

impl Engine {
    /// A message outside any call: notifications, server requests and their answers.
    pub(super) fn on_loose(
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
            .filter(|&i| loose_candidate(&plan.faults[i], dir, method))
            .collect();
        if candidates.is_empty() {
            return Verdict::pass();
        }
        let s = self.session(session);
        // Loose messages draw from their own sequence space, apart from calls.
        let seq = (1u64 << 63) | s.next_loose;
        s.next_loose += 1;
        let mut shaping = Shaping::new(bytes);
        let mut none = |_: &[String]| None;
        for i in candidates {
            if !self.decide(
                i,
                session,
                crate::session_key::split(session).0,
                seq,
                method,
                None,
                &mut none,
                now,
            ) {
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
        record::verdict_of(&shaping)
    }

    /// Batches: each element goes through the engine on its own; the forwarded batch keeps
    /// the elements that still go on, short-circuit answers go back as one batch, and the
    /// longest delay applies to the whole batch.
    pub(super) fn on_batch(
        &mut self,
        side: Side,
        session: &str,
        bytes: &[u8],
        now: Time,
    ) -> Verdict {
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
