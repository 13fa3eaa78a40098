//! `GET /metrics`: the relay's live figures in the Prometheus text format, rendered with
//! `prometheus-client` from a snapshot of the engine at scrape time (the engine keeps the
//! counts; nothing is counted twice).
//!
//! Families: calls by method, tool and outcome; latency histograms by method and tool;
//! injections by fault and kind; per tool availability, correctness and ETA (correct = no
//! error, `isError` false, `structuredContent` valid against the advertised `outputSchema`);
//! schema violations; results faults changed and what the agent did with them (silent and
//! safe rates, docs/silent.md); sessions; pending requests; active faults; with `--otlp`,
//! spans exported and dropped (docs/otel.md).

use crate::relay::Relay;
use brownout_core::sli::LATENCY_BUCKETS_MS;
use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

type Labels = Vec<(&'static str, String)>;

/// One labelled histogram: sum (seconds), count, and per-bucket counts with their upper
/// bounds (seconds, not cumulative; the encoder accumulates).
type HistogramRow = (Labels, f64, u64, Vec<(f64, u64)>);

/// One metric family as read at scrape time: every labelled value, already computed.
#[derive(Debug)]
enum Snapshot {
    Counter(Vec<(Labels, u64)>),
    Gauge(Vec<(Labels, f64)>),
    Histogram(Vec<HistogramRow>),
}

impl EncodeMetric for Snapshot {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        match self {
            Snapshot::Counter(rows) => {
                for (labels, v) in rows {
                    encoder
                        .encode_family(labels)?
                        .encode_counter::<NoLabelSet, u64, f64>(v, None)?;
                }
            }
            Snapshot::Gauge(rows) => {
                for (labels, v) in rows {
                    encoder.encode_family(labels)?.encode_gauge(v)?;
                }
            }
            Snapshot::Histogram(rows) => {
                for (labels, sum, count, buckets) in rows {
                    encoder
                        .encode_family(labels)?
                        .encode_histogram::<NoLabelSet>(*sum, *count, buckets, None)?;
                }
            }
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        match self {
            Snapshot::Counter(_) => MetricType::Counter,
            Snapshot::Gauge(_) => MetricType::Gauge,
            Snapshot::Histogram(_) => MetricType::Histogram,
        }
    }
}

/// Render the relay's metrics (and how many faults are active) as Prometheus text.
pub fn render(relay: &Relay, active_faults: usize) -> String {
    let mut families = relay.with_engine(|engine| {
        let mut calls = Vec::new();
        let mut latency = Vec::new();
        let (mut availability, mut correctness, mut eta, mut violations) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (method, tool, s) in engine.slis().series() {
            for (outcome, n) in &s.outcomes {
                calls.push((
                    vec![
                        ("method", method.to_string()),
                        ("tool", tool.to_string()),
                        ("outcome", outcome.to_string()),
                    ],
                    *n,
                ));
            }
            let buckets = LATENCY_BUCKETS_MS
                .iter()
                .map(|ms| ms / 1000.0)
                .chain([f64::INFINITY])
                .zip(s.buckets.iter().copied())
                .collect();
            latency.push((
                vec![("method", method.to_string()), ("tool", tool.to_string())],
                s.latency_sum_ms / 1000.0,
                s.responded,
                buckets,
            ));
            if method == "tools/call" {
                let t = || vec![("tool", tool.to_string())];
                availability.push((t(), s.availability()));
                correctness.push((t(), s.correctness()));
                eta.push((t(), s.eta()));
                violations.push((t(), s.schema_violations));
            }
        }
        let silent = engine.summary().silent();
        let results = vec![
            (vec![("class", "altered".to_string())], silent.altered),
            (vec![("class", "propagated".to_string())], silent.propagated),
            (vec![("class", "noticed".to_string())], silent.noticed),
            (vec![("class", "unobserved".to_string())], silent.unobserved),
        ];
        let injections = engine
            .summary()
            .report()
            .injections
            .into_iter()
            .map(|(id, i)| (vec![("fault", id), ("kind", i.kind)], i.count))
            .collect();
        vec![
            ("brownout_calls", "Completed calls by method, tool and outcome", Snapshot::Counter(calls)),
            ("brownout_call_latency_seconds", "Latency of answered calls, as the client saw it", Snapshot::Histogram(latency)),
            ("brownout_injections", "Fault injections by fault id and kind", Snapshot::Counter(injections)),
            ("brownout_tool_availability", "Answered tools/call over tools/call, per tool", Snapshot::Gauge(availability)),
            ("brownout_tool_correctness", "Correct answers over answers, per tool (no error, isError false, structuredContent valid against the advertised outputSchema)", Snapshot::Gauge(correctness)),
            ("brownout_tool_eta", "Effective tool availability: availability x correctness, per tool", Snapshot::Gauge(eta)),
            ("brownout_schema_violations", "Results whose structuredContent broke the tool's advertised outputSchema", Snapshot::Counter(violations)),
            ("brownout_altered_results", "Results a fault changed (class altered), and what the agent did with them: propagated (acted on a value the fault introduced: failed silently), noticed (re-fetched or cancelled: failed safely), unobserved (neither within the window)", Snapshot::Counter(results)),
            ("brownout_silent_rate", "Propagated over altered results: the share that failed silently", Snapshot::Gauge(vec![(Vec::new(), silent.silent_rate)])),
            ("brownout_safe_rate", "Noticed over altered results: the share that failed safely", Snapshot::Gauge(vec![(Vec::new(), silent.safe_rate)])),
            ("brownout_sessions", "Sessions the relay tracks", Snapshot::Gauge(vec![(Vec::new(), engine.session_count() as f64)])),
            ("brownout_pending_requests", "Requests awaiting an answer", Snapshot::Gauge(vec![(Vec::new(), engine.pending_count() as f64)])),
            ("brownout_faults_active", "Faults in the running plan", Snapshot::Gauge(vec![(Vec::new(), active_faults as f64)])),
        ]
    });
    if let Some(otlp) = relay.otlp() {
        let o = otlp.exporter();
        families.push((
            "brownout_otlp_spans_exported",
            "Spans the OTLP collector took (--otlp)",
            Snapshot::Counter(vec![(Vec::new(), o.exported())]),
        ));
        families.push((
            "brownout_otlp_spans_dropped",
            "Spans dropped: the export queue was full or the collector did not take them (--otlp)",
            Snapshot::Counter(vec![(Vec::new(), o.dropped())]),
        ));
    }
    let mut registry = Registry::default();
    for (name, help, metric) in families {
        registry.register(name, help, metric);
    }
    let mut out = String::new();
    if prometheus_client::encoding::text::encode(&mut out, &registry).is_err() {
        out = "# brownout: the metrics could not be encoded\n".into();
    }
    out
}
