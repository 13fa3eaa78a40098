//! An experiment's run as OpenTelemetry spans (`brownout run --otlp URL`), built from its
//! journal when the run ends: a root span for the run, a child per phase — `baseline`,
//! `stage NAME`, each `rollback`, `recovery` — and the breach as an event. Times are the
//! journal's (run-clock milliseconds from the run's start); attributes are the figures the
//! journal records (docs/otel.md). No rollback command line or detail is exported: it may
//! hold a secret.

use super::journal::{Journal, Slis};
use brownout_relay::otlp::span::millis_to_nanos;
use brownout_relay::otlp::span::Event;
use brownout_relay::otlp::{Otlp, Parent, Span, Value};

/// Send the run's spans to `otlp`.
pub fn export(otlp: &Otlp, j: &Journal) {
    for s in spans(j) {
        otlp.send(s);
    }
}

/// The ids of a run's root span, derived from its run id: the load's call spans (and the
/// relays' spans under them) are sent while the run goes on, the root only at its end.
pub fn root(run_id: &str) -> Parent {
    use brownout_core::rng::{hash_str, mix};
    let h = hash_str(run_id);
    let (a, b, c) = (
        mix(h ^ 0x7472_6163),
        mix(h ^ 0x6964_3238),
        mix(h ^ 0x7370_616e),
    );
    let mut trace_id = [0u8; 16];
    trace_id[..8].copy_from_slice(&a.to_le_bytes());
    trace_id[8..].copy_from_slice(&b.to_le_bytes());
    Parent {
        trace_id,
        span_id: c.max(1).to_le_bytes(),
        sampled: true,
    }
}

/// The run's spans, the root first.
pub fn spans(j: &Journal) -> Vec<Span> {
    let origin = j.started_unix_ms.saturating_mul(1_000_000);
    let at = |ms: f64| origin.saturating_add(millis_to_nanos(ms));
    let end = j.ended_unix_ms.saturating_mul(1_000_000).max(origin);
    let title = j.experiment["title"].as_str().unwrap_or("experiment");
    let status = serde_json::to_value(j.status)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default();
    let mut root = Span::new(
        format!("brownout run {}", clip(title, 80)),
        None,
        origin,
        end,
    );
    let ids = self::root(&j.run_id);
    root.trace_id = ids.trace_id;
    root.span_id = ids.span_id;
    root.attr("brownout.run.id", j.run_id.as_str())
        .attr("brownout.run.status", status.as_str())
        .attr("brownout.run.reason", clip(&j.reason, 300))
        .attr("brownout.experiment.file", j.file.as_str())
        .attr("brownout.experiment.title", clip(title, 300))
        .attr("brownout.seed", j.seed)
        .attr("brownout.dry_run", j.dry_run);
    if !matches!(status.as_str(), "completed") {
        root.error = Some(format!("{status}: {}", clip(&j.reason, 300)));
    }
    if let Some(b) = &j.breach {
        root.events.push(Event {
            name: "brownout.breach".into(),
            time_unix_nano: at(b.at_ms),
            attributes: vec![
                ("brownout.gate".into(), Value::from(b.gate.as_str())),
                ("brownout.stage".into(), Value::from(b.stage.as_str())),
                ("brownout.gate.limit".into(), Value::Float(b.limit)),
                (
                    "brownout.gate.value".into(),
                    b.value.map_or(Value::Str("none".into()), Value::Float),
                ),
                (
                    "brownout.abort_latency_ms".into(),
                    Value::Float(b.abort_latency_ms),
                ),
            ],
        });
    }
    let parent = root.as_parent();
    let mut out = vec![root];
    let child = |name: String, start_ms: f64, end_ms: f64| {
        let mut s = Span::new(name, Some(&parent), at(start_ms), at(end_ms));
        s.attr("brownout.run.id", j.run_id.as_str());
        s
    };
    if let Some(b) = &j.baseline {
        let mut s = child("baseline".into(), b.start_ms, b.end_ms);
        s.attr("brownout.phase", "baseline");
        slis(&mut s, &b.slis);
        out.push(s);
    }
    for (i, st) in j.stages.iter().enumerate() {
        let mut s = child(format!("stage {}", st.stage), st.start_ms, st.end_ms);
        s.attr("brownout.phase", "stage")
            .attr("brownout.stage", st.stage.as_str())
            .attr("brownout.stage.index", (i + 1) as u64)
            .attr("brownout.stage.share", st.share)
            .attr("brownout.stage.completed", st.completed);
        for (fault, n) in &st.injections {
            s.attr(&format!("brownout.injections.{fault}"), *n);
        }
        slis(&mut s, &st.slis);
        if let Some(b) = j.breach.as_ref().filter(|b| b.stage == st.stage) {
            s.error = Some(format!("gate breached: {}", b.gate));
        } else if !st.completed {
            s.error = Some("the stage did not complete".into());
        }
        out.push(s);
    }
    for (i, r) in j.rollbacks.iter().enumerate() {
        let mut s = child("rollback".into(), r.start_ms, r.end_ms);
        s.attr("brownout.phase", "rollback")
            .attr("brownout.rollback.index", (i + 1) as u64)
            .attr("brownout.rollback.ok", r.ok);
        if !r.ok {
            s.error = Some("the rollback failed".into());
        }
        out.push(s);
    }
    if let Some(r) = &j.recovery {
        let end_ms = r.faults_left_ms + r.mttr_ms.or(r.within_ms).unwrap_or(0.0);
        let mut s = child("recovery".into(), r.faults_left_ms, end_ms);
        s.attr("brownout.phase", "recovery")
            .attr("brownout.recovered", r.recovered);
        if let Some(m) = r.mttr_ms {
            s.attr("brownout.mttr_ms", m);
        }
        if !r.recovered {
            s.error = Some("did not recover in time".into());
        }
        out.push(s);
    }
    out
}

/// The root of a run's trace, for spans made elsewhere (tests).
pub fn root_of(spans: &[Span]) -> Option<Parent> {
    spans.first().map(Span::as_parent)
}

fn slis(s: &mut Span, x: &Slis) {
    s.attr("brownout.calls", x.calls)
        .attr("brownout.errors", x.errors)
        .attr("brownout.error_rate", x.error_rate);
    for (k, v) in [
        ("p50_ms", x.p50_ms),
        ("p95_ms", x.p95_ms),
        ("p99_ms", x.p99_ms),
    ] {
        if let Some(v) = v {
            s.attr(&format!("brownout.latency.{k}"), v);
        }
    }
}

/// At most `n` characters of `text`.
fn clip(text: &str, n: usize) -> String {
    text.chars().take(n).collect()
}
