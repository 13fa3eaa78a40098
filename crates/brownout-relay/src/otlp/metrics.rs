//! Metrics over OTLP (`POST …/v1/metrics`): families of numbers read from a snapshot —
//! cumulative sums, gauges, histograms with explicit bounds — encoded into the official
//! protobuf types. What to read is the caller's (the relay's figures:
//! `crate::control::otlp_metrics`); sending goes through the exporter's queue like spans.

use super::span::{key_values, Value};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::InstrumentationScope;
use opentelemetry_proto::tonic::metrics::v1::{
    metric, number_data_point, AggregationTemporality, Gauge, Histogram, HistogramDataPoint,
    Metric, NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum,
};
use opentelemetry_proto::tonic::resource::v1::Resource;

/// Attributes of one data point.
pub type Attributes = Vec<(String, Value)>;

/// One histogram data point: count, sum, and per-bucket counts (not cumulative) for the
/// upper bounds, the last bucket being everything above the last bound.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramPoint {
    pub count: u64,
    pub sum: f64,
    pub bounds: Vec<f64>,
    pub buckets: Vec<u64>,
}

/// What a family holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Points {
    /// A monotonic, cumulative count (since `start`).
    Counter(Vec<(Attributes, u64)>),
    Gauge(Vec<(Attributes, f64)>),
    Histogram(Vec<(Attributes, HistogramPoint)>),
}

/// One metric: its name, what it means, its unit and its points.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    pub name: &'static str,
    pub description: &'static str,
    pub unit: &'static str,
    pub points: Points,
}

/// A snapshot of families taken at `now`, counting since `start` (Unix nanoseconds).
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub start: u64,
    pub now: u64,
    pub families: Vec<Family>,
}

/// The points in a snapshot (what the queue's overflow counts).
pub fn point_count(s: &Snapshot) -> u64 {
    s.families
        .iter()
        .map(|f| match &f.points {
            Points::Counter(p) => p.len(),
            Points::Gauge(p) => p.len(),
            Points::Histogram(p) => p.len(),
        } as u64)
        .sum()
}

/// One export request for a snapshot, from the service `service`.
pub fn request(service: &[(String, Value)], s: &Snapshot) -> ExportMetricsServiceRequest {
    let number = |attrs: &Attributes, v: number_data_point::Value| NumberDataPoint {
        attributes: key_values(attrs),
        start_time_unix_nano: s.start,
        time_unix_nano: s.now,
        value: Some(v),
        ..Default::default()
    };
    let metrics = s
        .families
        .iter()
        .map(|f| Metric {
            name: f.name.into(),
            description: f.description.into(),
            unit: f.unit.into(),
            data: Some(match &f.points {
                Points::Counter(p) => metric::Data::Sum(Sum {
                    data_points: p
                        .iter()
                        .map(|(a, v)| {
                            number(
                                a,
                                number_data_point::Value::AsInt(
                                    i64::try_from(*v).unwrap_or(i64::MAX),
                                ),
                            )
                        })
                        .collect(),
                    aggregation_temporality: AggregationTemporality::Cumulative as i32,
                    is_monotonic: true,
                }),
                Points::Gauge(p) => metric::Data::Gauge(Gauge {
                    data_points: p
                        .iter()
                        .map(|(a, v)| number(a, number_data_point::Value::AsDouble(*v)))
                        .collect(),
                }),
                Points::Histogram(p) => metric::Data::Histogram(Histogram {
                    data_points: p
                        .iter()
                        .map(|(a, h)| HistogramDataPoint {
                            attributes: key_values(a),
                            start_time_unix_nano: s.start,
                            time_unix_nano: s.now,
                            count: h.count,
                            sum: Some(h.sum),
                            bucket_counts: h.buckets.clone(),
                            explicit_bounds: h.bounds.clone(),
                            ..Default::default()
                        })
                        .collect(),
                    aggregation_temporality: AggregationTemporality::Cumulative as i32,
                }),
            }),
            ..Default::default()
        })
        .collect();
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: key_values(service),
                ..Default::default()
            }),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(InstrumentationScope {
                    name: "brownout".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..Default::default()
                }),
                metrics,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn a_snapshot_encodes_and_decodes() {
        let s = Snapshot {
            start: 1,
            now: 2,
            families: vec![
                Family {
                    name: "brownout.calls",
                    description: "calls",
                    unit: "{call}",
                    points: Points::Counter(vec![(vec![("outcome".into(), "ok".into())], 7)]),
                },
                Family {
                    name: "brownout.call.duration",
                    description: "latency",
                    unit: "ms",
                    points: Points::Histogram(vec![(
                        Vec::new(),
                        HistogramPoint {
                            count: 3,
                            sum: 12.0,
                            bounds: vec![5.0],
                            buckets: vec![2, 1],
                        },
                    )]),
                },
            ],
        };
        assert_eq!(point_count(&s), 2);
        let bytes = request(&[], &s).encode_to_vec();
        let back = ExportMetricsServiceRequest::decode(bytes.as_slice()).expect("decodes");
        let m = &back.resource_metrics[0].scope_metrics[0].metrics;
        assert_eq!(m.len(), 2);
        match &m[0].data {
            Some(metric::Data::Sum(sum)) => {
                assert!(sum.is_monotonic);
                assert_eq!(
                    sum.data_points[0].value,
                    Some(number_data_point::Value::AsInt(7))
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
