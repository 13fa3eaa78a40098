//! With `--otlp`, each logical call the load makes is a client span, and each of its
//! attempts carries that span's W3C trace context in `params._meta.traceparent` (the MCP
//! convention brownout's relays continue): in the collector, a relay's span for the call
//! hangs under the load's span for it, and both under the load's (or the run's) root.
//!
//! The span id of a call is derived from the trace id, the task and the call's ordinal
//! (no random draw), so it is known when the first attempt is sent and the span is built
//! once the call has ended.

use brownout_core::rng::mix;
use brownout_core::slo::CallObservation;
use brownout_relay::otlp::context::traceparent;
use brownout_relay::otlp::span::millis_to_nanos;
use brownout_relay::otlp::span::Kind;
use brownout_relay::otlp::{unix_nanos, Otlp, Parent, Span};
use std::borrow::Cow;

/// Where a load's call spans go, and under which span.
#[derive(Debug, Clone)]
pub struct CallTracer {
    otlp: Otlp,
    parent: Parent,
    /// The load's clock's 0, in Unix nanoseconds (a call's `at_ms` counts from it).
    origin: u64,
}

impl CallTracer {
    /// Call spans under `parent`, timed from now (the load's clock starts about now).
    pub fn new(otlp: Otlp, parent: Parent) -> CallTracer {
        CallTracer {
            otlp,
            parent,
            origin: unix_nanos(),
        }
    }

    /// The span id of call `ordinal` of `task` (never zero: a zero id is invalid).
    pub fn span_id(&self, task: u64, ordinal: u64) -> [u8; 8] {
        let t = &self.parent.trace_id;
        let trace = u64::from_le_bytes([t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]]);
        let id = mix(trace ^ mix(task.wrapping_add(1)) ^ mix(ordinal.wrapping_mul(3) ^ 0x5bd1));
        id.max(1).to_le_bytes()
    }

    /// `params` (a JSON object) with `_meta.traceparent` naming the call's span. A `params`
    /// that is not an object, or that has its own `_meta`, is sent as it is.
    pub fn params<'a>(&self, params: &'a str, span: [u8; 8]) -> Cow<'a, str> {
        let trimmed = params.trim_start();
        let Some(rest) = trimmed.strip_prefix('{') else {
            return Cow::Borrowed(params);
        };
        if rest.contains("\"_meta\"") {
            return Cow::Borrowed(params);
        }
        let tp = traceparent(&self.as_parent(span));
        let sep = if rest.trim_start().starts_with('}') {
            ""
        } else {
            ","
        };
        Cow::Owned(format!(r#"{{"_meta":{{"traceparent":"{tp}"}}{sep}{rest}"#))
    }

    /// The trace context of the parent span itself (the load's or the run's root), for the
    /// requests that are no call of the load's (a session's `initialize`, `tools/list`).
    pub fn root_traceparent(&self) -> String {
        traceparent(&self.parent)
    }

    fn as_parent(&self, span: [u8; 8]) -> Parent {
        Parent {
            span_id: span,
            ..self.parent
        }
    }

    /// The span of one ended call, `span` its id.
    pub fn call(&self, c: &CallObservation, span: [u8; 8]) {
        let end = self.origin.saturating_add(millis_to_nanos(c.at_ms));
        let start = end.saturating_sub(millis_to_nanos(c.latency_ms));
        let name = match &c.tool {
            Some(t) => format!("{} {t}", c.method),
            None => c.method.clone(),
        };
        let mut s = Span::new(name, Some(&self.parent), start, end);
        s.span_id = span;
        s.kind = Kind::Client;
        s.attr("mcp.method.name", c.method.as_str());
        if let Some(t) = &c.tool {
            s.attr("gen_ai.tool.name", t.as_str());
        }
        s.attr("brownout.outcome", c.outcome.as_str())
            .attr("brownout.latency_ms", c.latency_ms)
            .attr("brownout.correct", c.correct)
            .attr("brownout.attempts", u64::from(c.attempts.max(1)));
        if c.timed_out {
            s.attr("brownout.timed_out", true);
        }
        if !c.outcome.is_success() || c.timed_out {
            let what = if c.timed_out {
                "timeout"
            } else {
                c.outcome.as_str()
            };
            s.attr("error.type", what);
            s.error = Some(what.to_string());
        }
        self.otlp.send(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracer() -> CallTracer {
        // A collector nothing listens on: nothing here exports.
        let otlp = Otlp::start("http://127.0.0.1:9", "test").expect("exporter");
        let parent = Parent {
            trace_id: [7; 16],
            span_id: [9; 8],
            sampled: true,
        };
        CallTracer::new(otlp, parent)
    }

    #[test]
    fn params_carry_the_calls_traceparent_and_stay_json() {
        let t = tracer();
        let span = t.span_id(3, 1);
        let p = t.params(r#"{"name":"echo","arguments":{"m":1}}"#, span);
        let v: serde_json::Value = serde_json::from_str(&p).expect("json");
        assert_eq!(v["name"], "echo");
        assert_eq!(v["arguments"]["m"], 1);
        let tp = v["_meta"]["traceparent"].as_str().expect("traceparent");
        let parsed = brownout_relay::otlp::context::parse_traceparent(tp).expect("valid");
        assert_eq!(parsed.trace_id, [7; 16]);
        assert_eq!(parsed.span_id, span);
        // An empty object, and params with their own _meta.
        let e: serde_json::Value = serde_json::from_str(&t.params("{}", span)).expect("json");
        assert!(e["_meta"]["traceparent"].is_string());
        let own = r#"{"_meta":{"progressToken":1},"name":"x"}"#;
        assert_eq!(t.params(own, span), own);
    }

    #[test]
    fn span_ids_differ_per_call_and_are_stable() {
        let t = tracer();
        assert_eq!(t.span_id(1, 2), t.span_id(1, 2));
        let ids: std::collections::HashSet<_> = (0..50)
            .flat_map(|task| (0..20).map(move |o| (task, o)))
            .map(|(task, o)| t.span_id(task, o))
            .collect();
        assert_eq!(ids.len(), 1000);
    }
}
