//! The engine's side of taint tracking ([`crate::taint`]): a result a fault changed leaves
//! a taint in its session's book; each later request is checked against the book; what the
//! agent did is recorded as taint events and in the summary. Nothing here runs for a
//! session whose book is empty and a call no result-changing fault hit.

use super::{Call, Engine};
use crate::event::{Event, TaintEvent};
use crate::session_key;
use crate::taint::{introduced, Book, Class, Finding, Taint};
use crate::time::Time;
use serde_json::Value;

/// Where a value of a result sits in the document its tool's `outputSchema` describes: under
/// `/structuredContent`, or inside the JSON of a text item (`/content/0/text/state`).
fn in_document(pointer: &str) -> Option<&str> {
    let under = |rest: &'_ str| rest.is_empty() || rest.starts_with('/');
    if let Some(rest) = pointer.strip_prefix("/structuredContent") {
        return under(rest).then_some(rest);
    }
    let (n, rest) = pointer.strip_prefix("/content/")?.split_once('/')?;
    n.parse::<usize>().ok()?;
    rest.strip_prefix("text").filter(|r| under(r))
}

impl Engine {
    /// A result a fault changed was answered (`changed`: the faults' value of it, if they
    /// built one): what the fault introduced, to keep when the client gets it ([`Engine::keep_taint`]; a held answer later, or never).
    pub(super) fn taint_of(
        &self,
        call: &Call,
        original: &[u8],
        changed: Option<&Value>,
        delivered: &[u8],
        now: Time,
    ) -> Option<Taint> {
        let (fault, kind) = call.altered_by.clone()?;
        let result = |b: &[u8]| {
            serde_json::from_slice::<Value>(b)
                .ok()
                .and_then(|mut v| v.get_mut("result").map(Value::take))
        };
        // The faults already hold the changed message as a value: it is not parsed again. A
        // client that cannot parse the answer cannot act on it either.
        let parsed;
        let after = match changed {
            Some(v) => v.get("result")?,
            None => {
                parsed = result(delivered)?;
                &parsed
            }
        };
        let before = result(original).unwrap_or(Value::Null);
        let max = self.config.taint.max_values;
        let names = call.method == "tools/list";
        let mut values = introduced(&before, after, max, names);
        // A value the tool's schema enumerates is one of a few everybody uses: not
        // distinctive, whatever its length.
        if let Some(schema) = call.tool.as_deref().and_then(|t| self.slis.schema(t)) {
            values.retain(|v| {
                in_document(&v.pointer)
                    .is_none_or(|p| !crate::faults::perturb::enumerated(&schema.raw, p))
            });
        }
        Some(Taint {
            fault,
            kind,
            tool: call.tool.clone().unwrap_or_else(|| call.method.clone()),
            seq: call.seq,
            at: now,
            args: call.args_fp.unwrap_or(0),
            values,
            class: Class::Pending,
            moved_on: false,
        })
    }

    /// The book `session`'s taints go to and its requests are checked against: its agent's
    /// when it is one server's session of an agent that reaches several, else its own.
    pub(super) fn book(&mut self, session: &str) -> &mut Book {
        match session_key::agent(session) {
            Some(agent) => self.agent_taints.entry(agent.to_string()).or_default(),
            None => &mut self.session(session).taints,
        }
    }

    /// Whether `session`'s requests must be checked: its book holds taints.
    pub(super) fn watched(&self, session: &str) -> bool {
        match session_key::agent(session) {
            Some(agent) => self.agent_taints.get(agent).is_some_and(|b| !b.is_empty()),
            None => self
                .sessions
                .get(session)
                .is_some_and(|s| !s.taints.is_empty()),
        }
    }

    /// A changed result reached the client (at `now`): its taint is kept in the session's
    /// book, its window starting now.
    pub(super) fn keep_taint(&mut self, session: &str, mut taint: Taint, now: Time) {
        taint.at = now;
        if let std::borrow::Cow::Owned(q) = session_key::qualified(session, &taint.tool) {
            taint.tool = q;
        }
        let n = taint.values.len();
        let event = TaintEvent {
            values: Some(n),
            ..self.taint_event(session, &taint, "altered", now)
        };
        self.record_taint_event(event);
        let cfg = self.config.taint;
        if let Some(evicted) = self.book(session).add(taint, &cfg) {
            self.closed(session, evicted, now);
        }
    }

    /// Record what a request's check against its session's taints found.
    pub(super) fn taint_findings(
        &mut self,
        session: &str,
        found: Vec<Finding>,
        tool: Option<&str>,
        seq: u64,
        now: Time,
    ) {
        for f in found {
            self.finding(session, f, tool, Some(seq), now);
        }
    }

    /// The client cancelled a request it sent after receiving changed results: it gave up on
    /// its task — those results were noticed. A cancel of a request sent before them, or of one
    /// no longer in flight, says nothing about them.
    pub(super) fn taint_cancelled(&mut self, session: &str, params: Option<&str>, now: Time) {
        if !self.watched(session) {
            return;
        }
        let id = params
            .and_then(|p| serde_json::from_str::<Value>(p).ok())
            .and_then(|p| match p.get("requestId")? {
                Value::String(s) => Some(crate::jsonrpc::Id::Str(s.clone())),
                Value::Number(n) => Some(crate::jsonrpc::Id::Num(n.to_string())),
                _ => None,
            });
        let Some((sent_at, seq)) = id.and_then(|id| {
            self.session(session)
                .pending
                .get_sent(&id)
                .map(|(t, c)| (t, c.seq))
        }) else {
            return;
        };
        let found = match session_key::agent(session) {
            Some(_) => self.book(session).cancelled_since(sent_at),
            None => self.session(session).taints.cancelled(seq),
        };
        for f in found {
            self.finding(session, f, None, None, now);
        }
    }

    /// A session left: when it was the last of its agent's sessions, the agent's taints
    /// close with it.
    pub(super) fn agent_session_ended(&mut self, session: &str, now: Time) {
        let Some(agent) = session_key::agent(session) else {
            return;
        };
        if self
            .sessions
            .keys()
            .any(|k| session_key::agent(k) == Some(agent))
        {
            return;
        }
        if let Some(mut book) = self.agent_taints.remove(agent) {
            let taints = book.drain();
            self.taint_drain(agent, taints, now);
        }
    }

    /// Close the taints of `session` whose window has passed.
    pub(super) fn taint_expire(&mut self, session: &str, now: Time) {
        let cfg = self.config.taint;
        if let Some(agent) = session_key::agent(session) {
            let closed = match self.agent_taints.get_mut(agent) {
                Some(book) if !book.is_empty() => book.expire(now, &cfg),
                _ => return,
            };
            for t in closed {
                self.closed(agent, t, now);
            }
            return;
        }
        let Some(s) = self.sessions.get_mut(session) else {
            return;
        };
        if s.taints.is_empty() {
            return;
        }
        for t in s.taints.expire(now, &cfg) {
            self.closed(session, t, now);
        }
    }

    /// Close every taint of a session that is going away.
    pub(super) fn taint_drain(&mut self, session: &str, taints: Vec<Taint>, now: Time) {
        for t in taints {
            self.closed(session, t, now);
        }
    }

    /// A taint left its book: a pending one went unobserved (a noticed one was recorded
    /// when it was noticed).
    fn closed(&mut self, session: &str, t: Taint, now: Time) {
        if t.class == Class::Unobserved {
            let e = self.taint_event(session, &t, "unobserved", now);
            self.record_taint_event(e);
        }
    }

    fn finding(
        &mut self,
        session: &str,
        f: Finding,
        to_tool: Option<&str>,
        to_seq: Option<u64>,
        now: Time,
    ) {
        let e = TaintEvent {
            t_ms: now.as_millis_f64(),
            session: session.to_string(),
            class: f.class.as_str(),
            fault: f.fault,
            kind: f.kind,
            from_tool: f.from_tool,
            from_seq: f.from_seq,
            to_tool: to_tool.map(String::from),
            to_seq,
            from_pointer: f.from_pointer,
            to_pointer: f.to_pointer,
            value: f.shown,
            values: None,
            after_notice: f.class == Class::Propagated && f.was == Class::Noticed,
        };
        self.record_taint_event(e);
    }

    fn taint_event(&self, session: &str, t: &Taint, class: &'static str, now: Time) -> TaintEvent {
        TaintEvent {
            t_ms: now.as_millis_f64(),
            session: session.to_string(),
            class,
            fault: t.fault.clone(),
            kind: t.kind,
            from_tool: t.tool.clone(),
            from_seq: t.seq,
            to_tool: None,
            to_seq: None,
            from_pointer: None,
            to_pointer: None,
            value: None,
            values: None,
            after_notice: false,
        }
    }

    fn record_taint_event(&mut self, e: TaintEvent) {
        self.summary
            .record_taint(&e.from_tool, e.class, e.after_notice);
        if self.config.record_events {
            self.events.push(Event::Taint(e));
        }
    }
}
