//! `brownout load --otlp URL`: one root span for the whole load; the client span of each
//! logical call the load made (retries included, the latency from the call's intended
//! start) hangs under it ([`super::trace`]).

use brownout_relay::otlp::{unix_nanos, Otlp, Span};

/// The load's trace: its root span (sent at the end) and its time 0.
pub struct LoadSpans {
    otlp: Otlp,
    root: Span,
}

impl LoadSpans {
    /// Start the load's trace now (its run clock starts about now too).
    pub fn start(otlp: Otlp, sessions: usize) -> LoadSpans {
        let origin = unix_nanos();
        let mut root = Span::new("brownout load", None, origin, origin);
        root.attr("brownout.load.sessions", sessions as u64);
        LoadSpans { otlp, root }
    }

    /// Where the load's calls put their spans: under the root.
    pub fn tracer(&self) -> super::trace::CallTracer {
        super::trace::CallTracer::new(self.otlp.clone(), self.root.as_parent())
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
