//! The relay's metrics over OTLP (`--otlp`): the figures `GET /metrics` shows — calls by
//! method, tool and outcome, latency histograms, injections by fault and kind, sessions,
//! pending requests, spans exported and dropped — read from the engine every
//! [`EVERY`] and when the relay stops, and queued for the exporter (docs/otel.md).

use crate::otlp::metrics::{Family, HistogramPoint, Points, Snapshot};
use crate::otlp::{unix_nanos, Otlp, Value};
use crate::relay::Relay;
use brownout_core::sli::LATENCY_BUCKETS_MS;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// How often the relay's metrics are exported.
pub const EVERY: Duration = Duration::from_secs(10);

/// Export the relay's metrics every [`EVERY`] while it lives (the task ends with it).
pub fn spawn(relay: &Arc<Relay>) {
    let Some(otlp) = relay.otlp().map(|h| h.exporter().clone()) else {
        return;
    };
    let relay: Weak<Relay> = Arc::downgrade(relay);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(EVERY);
        tick.tick().await;
        loop {
            tick.tick().await;
            let Some(relay) = relay.upgrade() else { return };
            push(&relay, &otlp);
        }
    });
}

/// Export the relay's metrics now (its last figures, when it stops).
pub fn push_now(relay: &Relay) {
    if let Some(h) = relay.otlp() {
        push(relay, h.exporter());
    }
}

fn push(relay: &Relay, otlp: &Otlp) {
    let start = relay.otlp().map_or(0, |h| h.epoch());
    otlp.send_metrics(Snapshot {
        start,
        now: unix_nanos(),
        families: families(relay, otlp),
    });
}

/// The relay's figures as metric families.
pub fn families(relay: &Relay, otlp: &Otlp) -> Vec<Family> {
    let mut out = relay.with_engine(|engine| {
        let (mut calls, mut latency) = (Vec::new(), Vec::new());
        for (method, tool, s) in engine.slis().series() {
            let labels = |extra: Option<(&str, &str)>| {
                let mut l = vec![("mcp.method.name".to_string(), Value::from(method))];
                if !tool.is_empty() {
                    l.push(("gen_ai.tool.name".to_string(), Value::from(tool)));
                }
                if let Some((k, v)) = extra {
                    l.push((k.to_string(), Value::from(v)));
                }
                l
            };
            for (outcome, n) in &s.outcomes {
                calls.push((labels(Some(("brownout.outcome", outcome))), *n));
            }
            latency.push((
                labels(None),
                HistogramPoint {
                    count: s.buckets.iter().sum(),
                    sum: s.latency_sum_ms,
                    bounds: LATENCY_BUCKETS_MS.to_vec(),
                    buckets: s.buckets.clone(),
                },
            ));
        }
        let injections = engine
            .summary()
            .report()
            .injections
            .into_iter()
            .map(|(id, i)| {
                (
                    vec![
                        ("brownout.fault.id".to_string(), Value::from(id)),
                        ("brownout.fault.kind".to_string(), Value::from(i.kind)),
                    ],
                    i.count,
                )
            })
            .collect();
        vec![
            Family {
                name: "brownout.calls",
                description: "Completed calls by method, tool and outcome",
                unit: "{call}",
                points: Points::Counter(calls),
            },
            Family {
                name: "brownout.call.duration",
                description: "Latency of answered calls, as the client felt it",
                unit: "ms",
                points: Points::Histogram(latency),
            },
            Family {
                name: "brownout.injections",
                description: "Fault injections by fault id and kind",
                unit: "{injection}",
                points: Points::Counter(injections),
            },
            Family {
                name: "brownout.sessions",
                description: "Sessions the relay tracks",
                unit: "{session}",
                points: Points::Gauge(vec![(Vec::new(), engine.session_count() as f64)]),
            },
            Family {
                name: "brownout.pending_requests",
                description: "Requests awaiting an answer",
                unit: "{request}",
                points: Points::Gauge(vec![(Vec::new(), engine.pending_count() as f64)]),
            },
        ]
    });
    out.push(Family {
        name: "brownout.otlp.spans_dropped",
        description: "Spans dropped: the export queue was full or the collector did not take them",
        unit: "{span}",
        points: Points::Counter(vec![(Vec::new(), otlp.dropped())]),
    });
    out
}
