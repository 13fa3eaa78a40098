//! A span per relayed call, built from the engine's events off the relay's path.
//!
//! The relay hands its engine's events to the exporter ([`CallHook::events`]) and, for a
//! client request that carries W3C trace context in `params._meta`, that context
//! ([`CallHook::request`]). On the exporter's thread, [`CallSpans`] keeps each call's fault
//! events until its call event arrives, then makes one span: the call's method and tool,
//! its session label, its outcome, the latency the client felt (the span's length), and a
//! `brownout.fault` span event per fault that acted on it. The span is a child of the
//! client's span when the request named one. Both tables are bounded: what a peer never
//! completes (a fault on a notification, a request never answered before the relay
//! stopped) is forgotten oldest first.

use super::context::{id_key, request_context, Parent};
use super::export::Item;
use super::span::{millis_to_nanos, Event as SpanEvent, Kind, Span, Value};
use super::Otlp;
use brownout_core::event::{CallEvent, Event, FaultEvent, Outcome};
use std::collections::{HashMap, VecDeque};

/// Trace contexts and fault events held for calls not yet completed, at most (each table).
pub const MAX_OPEN: usize = 16_384;

/// The relay's side: queue what the exporter needs, nothing more.
#[derive(Clone)]
pub struct CallHook {
    pub(super) otlp: Otlp,
    /// The relay's start (its time 0) in Unix nanoseconds.
    pub(super) epoch: u64,
}

impl std::fmt::Debug for CallHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallHook")
            .field("epoch", &self.epoch)
            .finish()
    }
}

impl CallHook {
    /// A client message: if it is a request with `_meta.traceparent`, its call's span
    /// continues that trace. Cheap for messages without one (a substring search).
    pub fn request(&self, session: &str, bytes: &[u8]) {
        if let Some((key, parent, state)) = request_context(bytes) {
            let item = Item::Parent {
                session: session.to_string(),
                key,
                parent,
                state,
            };
            self.otlp.queue.offer(item, 0);
        }
    }

    /// The engine's events since the last drain.
    pub fn events(&self, events: Vec<Event>) {
        if events.is_empty() {
            return;
        }
        let calls = events
            .iter()
            .filter(|e| matches!(e, Event::Call(_)))
            .count() as u64;
        self.otlp
            .queue
            .offer(Item::Events(self.epoch, events), calls);
    }

    /// Spans exported and dropped so far (the relay's status).
    pub fn status(&self) -> serde_json::Value {
        self.otlp.status()
    }

    /// The relay's time 0, in Unix nanoseconds.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The exporter this hook feeds.
    pub fn exporter(&self) -> &Otlp {
        &self.otlp
    }
}

/// A bounded map that forgets its oldest entries first.
struct Bounded<K, V> {
    map: HashMap<K, V>,
    order: VecDeque<K>,
}

impl<K: std::hash::Hash + Eq + Clone, V> Default for Bounded<K, V> {
    fn default() -> Self {
        Bounded {
            map: HashMap::new(),
            order: VecDeque::new(),
        }
    }
}

impl<K: std::hash::Hash + Eq + Clone, V> Bounded<K, V> {
    fn entry(&mut self, k: K, new: impl FnOnce() -> V) -> &mut V {
        if !self.map.contains_key(&k) {
            // Keys already taken out linger in `order`; skip them when evicting.
            while self.map.len() >= MAX_OPEN || self.order.len() >= 2 * MAX_OPEN {
                match self.order.pop_front() {
                    Some(old) => {
                        self.map.remove(&old);
                    }
                    None => break,
                }
            }
            self.order.push_back(k.clone());
        }
        self.map.entry(k).or_insert_with(new)
    }

    fn remove(&mut self, k: &K) -> Option<V> {
        self.map.remove(k)
    }
}

/// The exporter's side: fault events and trace contexts waiting for their call.
#[derive(Default)]
pub struct CallSpans {
    parents: Bounded<(String, String), (Parent, Option<String>)>,
    faults: Bounded<(String, u64), Vec<FaultEvent>>,
}

impl CallSpans {
    pub fn parent(&mut self, session: String, key: String, parent: Parent, state: Option<String>) {
        *self.parents.entry((session, key), || (parent, None)) = (parent, state);
    }

    /// Take a relay's events in; completed calls become spans in `out`.
    pub fn on_events(&mut self, epoch: u64, events: Vec<Event>, out: &mut Vec<Span>) {
        for e in events {
            match e {
                Event::Fault(f) => self
                    .faults
                    .entry((f.session.clone(), f.seq), Vec::new)
                    .push(f),
                Event::Call(c) => out.push(self.call_span(epoch, c)),
                Event::Taint(_) => {}
            }
        }
    }

    /// Let `events` go without spans (the collector is down): what was held for their
    /// calls is forgotten; returns how many calls they completed.
    pub fn skip(&mut self, events: &[Event]) -> u64 {
        let mut calls = 0;
        let held = !self.faults.map.is_empty() || !self.parents.map.is_empty();
        for e in events {
            if let Event::Call(c) = e {
                calls += 1;
                if !held {
                    continue;
                }
                let session = c.session.clone();
                self.faults.remove(&(session.clone(), c.seq));
                if let Some(id) = &c.id {
                    self.parents.remove(&(session, id_key(id)));
                }
            }
        }
        calls
    }

    fn call_span(&mut self, epoch: u64, c: CallEvent) -> Span {
        let end = epoch.saturating_add(millis_to_nanos(c.t_ms));
        let start = end.saturating_sub(millis_to_nanos(c.latency_ms));
        let parent =
            c.id.as_ref()
                .and_then(|id| self.parents.remove(&(c.session.clone(), id_key(id))));
        let name = match &c.tool {
            Some(t) => format!("{} {t}", c.method),
            None => c.method.clone(),
        };
        let mut s = Span::new(name, parent.as_ref().map(|(p, _)| p), start, end);
        s.kind = Kind::Server;
        s.trace_state = parent.and_then(|(_, state)| state);
        s.attr("mcp.method.name", c.method.as_str());
        if let Some(t) = &c.tool {
            s.attr("gen_ai.tool.name", t.as_str());
        }
        if let Some(id) = &c.id {
            s.attr(
                "jsonrpc.request.id",
                brownout_core::splice::raw_id(Some(id)),
            );
        }
        s.attr("brownout.session", c.session.as_str())
            .attr("brownout.outcome", c.outcome.as_str())
            .attr("brownout.latency_ms", c.latency_ms);
        if let Some(code) = c.error_code {
            s.attr("rpc.jsonrpc.error_code", code);
        }
        if c.mutated {
            s.attr("brownout.mutated", true);
        }
        let faults = self
            .faults
            .remove(&(c.session.clone(), c.seq))
            .unwrap_or_default();
        let kinds = fault_attributes(&mut s, &c, &faults, epoch);
        if c.outcome != Outcome::Ok {
            let kind = kinds.first().cloned();
            s.attr(
                "error.type",
                kind.clone()
                    .unwrap_or_else(|| c.outcome.as_str().to_string()),
            );
            s.error = Some(match kind {
                Some(k) => format!("{} ({k} fault)", c.outcome.as_str()),
                None => c.outcome.as_str().to_string(),
            });
        }
        s
    }
}

/// The `brownout.fault.*` attributes and one `brownout.fault` span event per fault event of
/// the call; returns the kinds of the faults that acted, in order.
fn fault_attributes(s: &mut Span, c: &CallEvent, faults: &[FaultEvent], epoch: u64) -> Vec<String> {
    if c.faults.is_empty() && faults.is_empty() {
        return Vec::new();
    }
    let mut ids: Vec<String> = c.faults.clone();
    let mut kinds: Vec<String> = Vec::new();
    for f in faults {
        if !ids.contains(&f.fault) {
            ids.push(f.fault.clone());
        }
        if !kinds.iter().any(|k| k == f.kind) {
            kinds.push(f.kind.to_string());
        }
        let mut attributes = vec![
            (
                "brownout.fault.id".to_string(),
                Value::from(f.fault.as_str()),
            ),
            ("brownout.fault.kind".to_string(), Value::from(f.kind)),
            (
                "brownout.fault.direction".to_string(),
                Value::from(f.direction),
            ),
            (
                "brownout.fault.action".to_string(),
                Value::from(f.action.as_str()),
            ),
        ];
        attributes.extend(parameters(f));
        s.events.push(SpanEvent {
            name: "brownout.fault".into(),
            time_unix_nano: epoch.saturating_add(millis_to_nanos(f.t_ms)),
            attributes,
        });
    }
    let delay: f64 = faults
        .iter()
        .filter_map(|f| {
            parameters(f)
                .into_iter()
                .find(|(k, _)| k == "brownout.fault.delay_ms")
        })
        .filter_map(|(_, v)| match v {
            Value::Float(x) => Some(x),
            _ => None,
        })
        .sum();
    s.attr("brownout.fault.count", ids.len() as u64);
    s.attributes
        .push(("brownout.fault.ids".into(), Value::Strs(ids)));
    s.attributes
        .push(("brownout.fault.kinds".into(), Value::Strs(kinds.clone())));
    if delay > 0.0 {
        s.attr("brownout.fault.delay_ms", delay);
    }
    for f in faults {
        for (k, v) in parameters(f) {
            if k != "brownout.fault.delay_ms" && !s.attributes.iter().any(|(a, _)| *a == k) {
                s.attributes.push((k, v));
            }
        }
    }
    kinds
}

/// The parameters that matter, read from what the fault did (`delay 250.0ms`, `HTTP 503`,
/// `JSON-RPC error -32000`): the engine says it in words; brownout's own wording is stable.
fn parameters(f: &FaultEvent) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let a = f.action.as_str();
    if let Some(ms) = number_after(a, "delay ").and_then(|n| n.parse::<f64>().ok()) {
        out.push(("brownout.fault.delay_ms".into(), Value::Float(ms)));
    }
    if let Some(code) = number_after(a, "HTTP ").and_then(|n| n.parse::<i64>().ok()) {
        out.push(("brownout.fault.http_status".into(), Value::Int(code)));
    }
    if let Some(code) = number_after(a, "error ").and_then(|n| n.parse::<i64>().ok()) {
        out.push(("brownout.fault.error_code".into(), Value::Int(code)));
    }
    out
}

/// The number right after `prefix` in `text` (`-32000`, `250.0`).
fn number_after<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let at = text.find(prefix)? + prefix.len();
    let rest = &text[at..];
    let end = rest
        .char_indices()
        .find(|&(i, ch)| !(ch.is_ascii_digit() || ch == '.' || (ch == '-' && i == 0)))
        .map_or(rest.len(), |(i, _)| i);
    let n = rest[..end].trim_end_matches('.');
    (!n.is_empty() && n != "-").then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use brownout_core::jsonrpc::Id;

    fn fault(session: &str, seq: u64, action: &str) -> Event {
        Event::Fault(FaultEvent {
            t_ms: 1.0,
            session: session.into(),
            seq,
            id: Some(Id::Num(seq.to_string())),
            method: "tools/call".into(),
            tool: Some("echo".into()),
            direction: "to_client",
            fault: "slow".into(),
            kind: "latency",
            action: action.into(),
        })
    }

    fn call(session: &str, seq: u64, faults: &[&str], outcome: Outcome) -> Event {
        Event::Call(CallEvent {
            t_ms: 30.0,
            session: session.into(),
            seq,
            id: Some(Id::Num(seq.to_string())),
            method: "tools/call".into(),
            tool: Some("echo".into()),
            latency_ms: 20.0,
            outcome,
            error_code: None,
            faults: faults.iter().map(|s| s.to_string()).collect(),
            mutated: false,
        })
    }

    fn attr<'a>(s: &'a Span, k: &str) -> Option<&'a Value> {
        s.attributes.iter().find(|(a, _)| a == k).map(|(_, v)| v)
    }

    #[test]
    fn a_call_span_carries_its_faults_and_its_clients_parent() {
        let mut spans = CallSpans::default();
        let parent = Parent {
            trace_id: [1; 16],
            span_id: [2; 8],
            sampled: true,
        };
        spans.parent("s".into(), "n:1".into(), parent, Some("k=v".into()));
        let mut out = Vec::new();
        spans.on_events(
            1_000_000_000,
            vec![
                fault("s", 1, "delay 250.5ms"),
                call("s", 1, &["slow"], Outcome::Ok),
                call("s", 2, &[], Outcome::Error),
            ],
            &mut out,
        );
        assert_eq!(out.len(), 2);
        let (a, b) = (&out[0], &out[1]);
        assert_eq!(a.trace_id, [1; 16]);
        assert_eq!(a.parent_span_id, Some([2; 8]));
        assert_eq!(a.trace_state.as_deref(), Some("k=v"));
        assert_eq!(a.end_unix_nano - a.start_unix_nano, 20_000_000);
        assert_eq!(a.events.len(), 1);
        assert_eq!(
            attr(a, "brownout.fault.delay_ms"),
            Some(&Value::Float(250.5))
        );
        assert_eq!(
            attr(a, "brownout.fault.ids"),
            Some(&Value::Strs(vec!["slow".into()]))
        );
        assert!(a.error.is_none());
        // The other call: no parent (a new trace), no fault attribute, an error status.
        assert_eq!(b.parent_span_id, None);
        assert!(b
            .attributes
            .iter()
            .all(|(k, _)| !k.starts_with("brownout.fault")));
        assert_eq!(attr(b, "error.type"), Some(&Value::from("error")));
        assert!(b.error.is_some());
    }

    #[test]
    fn fault_parameters_are_read_from_the_action() {
        let f = |a: &str| match fault("s", 1, a) {
            Event::Fault(f) => parameters(&f),
            _ => unreachable!(),
        };
        assert_eq!(
            f("short-circuit: JSON-RPC error -32000"),
            vec![("brownout.fault.error_code".to_string(), Value::Int(-32000))]
        );
        assert_eq!(
            f("brownout: HTTP 503 Service Unavailable"),
            vec![("brownout.fault.http_status".to_string(), Value::Int(503))]
        );
        assert!(f("dropped").is_empty());
    }

    #[test]
    fn calls_skipped_while_the_collector_is_down_are_counted_and_forgotten() {
        let mut spans = CallSpans::default();
        let parent = Parent {
            trace_id: [1; 16],
            span_id: [2; 8],
            sampled: true,
        };
        spans.parent("s".into(), "n:1".into(), parent, None);
        let events = vec![
            fault("s", 1, "delay 1ms"),
            call("s", 1, &["slow"], Outcome::Ok),
            call("s", 2, &[], Outcome::Ok),
        ];
        assert_eq!(spans.skip(&events), 2);
        assert!(spans.parents.map.is_empty());
        // Fault records are not held while the collector is down.
        assert!(spans.faults.map.is_empty());
    }

    #[test]
    fn the_tables_stay_bounded() {
        let mut spans = CallSpans::default();
        let mut out = Vec::new();
        let events = (0..(MAX_OPEN as u64 + 100))
            .map(|i| fault("s", i, "delay 1ms"))
            .collect();
        spans.on_events(0, events, &mut out);
        assert!(out.is_empty());
        assert_eq!(spans.faults.map.len(), MAX_OPEN);
        assert!(spans.faults.order.len() <= 2 * MAX_OPEN);
    }
}
