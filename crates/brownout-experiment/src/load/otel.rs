//! `brownout load --otlp URL`: a client span per logical call the load made (retries
//! included, the latency from the call's intended start), under one root span for the
//! whole load.

use brownout_core::slo::CallObservation;
use brownout_relay::otlp::span::Kind;
use brownout_relay::otlp::{unix_nanos, Otlp, Span};

/// The load's trace: its root span (sent at the end) and its time 0.
pub struct LoadSpans {
    otlp: Otlp,
    root: Span,
    /// The load's run clock's 0, in Unix nanoseconds.
    origin: u64,
}

impl LoadSpans {
    /// Start the load's trace now (its run clock starts about now too).
    pub fn start(otlp: Otlp, sessions: usize) -> LoadSpans {
        let origin = unix_nanos();
        let mut root = Span::new("brownout load", None, origin, origin);
        root.attr("brownout.load.sessions", sessions as u64);
        LoadSpans { otlp, root, origin }
    }

    /// One ended call.
    pub fn call(&self, c: &CallObservation) {
        let end = self.origin.saturating_add(ms_to_nanos(c.at_ms));
        let start = end.saturating_sub(ms_to_nanos(c.latency_ms));
        let name = match &c.tool {
            Some(t) => format!("{} {t}", c.method),
            None => c.method.clone(),
        };
        let mut s = Span::new(name, Some(&self.root.as_parent()), start, end);
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

    /// End the load's root span with its totals and send it.
    pub fn finish(mut self, calls: u64, errors: u64) {
        self.root.end_unix_nano = unix_nanos().max(self.root.start_unix_nano);
        self.root
            .attr("brownout.calls", calls)
            .attr("brownout.errors", errors);
        self.otlp.send(self.root);
    }
}

fn ms_to_nanos(ms: f64) -> u64 {
    if ms.is_finite() && ms > 0.0 {
        (ms * 1e6) as u64
    } else {
        0
    }
}
