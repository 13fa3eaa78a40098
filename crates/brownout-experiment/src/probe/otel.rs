//! A probe's result as OpenTelemetry spans (`brownout probe --otlp URL`): one span per
//! probe — its target (never a header's value or a URL's credentials), pass or fail and
//! why — with a child span per phase (`initialize`, `tools_call`, …) laid end to end.

use super::ProbeResult;
use brownout_relay::otlp::span::millis_to_nanos;
use brownout_relay::otlp::{Otlp, Span};

/// Send the spans of one probe to `otlp`.
pub fn export(otlp: &Otlp, r: &ProbeResult) {
    for s in spans(r) {
        otlp.send(s);
    }
}

/// The probe's span, then its phases'.
pub fn spans(r: &ProbeResult) -> Vec<Span> {
    let start = millis_to_nanos(r.at_ms);
    let end = start.saturating_add(millis_to_nanos(r.total_ms));
    let mut root = Span::new("brownout probe", None, start, end);
    root.kind = brownout_relay::otlp::span::Kind::Client;
    root.attr("brownout.probe.target", r.target.as_str())
        .attr("brownout.probe.ok", r.ok)
        .attr("brownout.latency_ms", r.total_ms);
    if let Some(f) = &r.failure {
        root.attr("error.type", f.as_str());
        root.error = Some(f.clone());
    }
    let parent = root.as_parent();
    let mut out = vec![root];
    let mut at = start;
    for p in &r.phases {
        let next = at.saturating_add(millis_to_nanos(p.ms));
        let mut s = Span::new(p.phase.as_str(), Some(&parent), at, next);
        s.attr("brownout.probe.phase", p.phase.as_str())
            .attr("brownout.latency_ms", p.ms);
        out.push(s);
        at = next;
    }
    out
}
