//! brownout's spans before they are encoded: a name, ids, times and attributes, turned into
//! the official OTLP protobuf types (`opentelemetry-proto`) in batches.

use super::context::{new_span_id, new_trace_id, Parent};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    any_value, AnyValue, ArrayValue, InstrumentationScope, KeyValue,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{
    span, status, ResourceSpans, ScopeSpans, Span as Pb, Status,
};
use std::time::{SystemTime, UNIX_EPOCH};

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Strs(Vec<String>),
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Str(s.to_string())
    }
}
impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Str(s)
    }
}
impl From<i64> for Value {
    fn from(n: i64) -> Value {
        Value::Int(n)
    }
}
impl From<u64> for Value {
    fn from(n: u64) -> Value {
        Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
    }
}
impl From<f64> for Value {
    fn from(n: f64) -> Value {
        Value::Float(n)
    }
}
impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

/// The kind of a span (OTLP `SpanKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Internal,
    Server,
    Client,
}

/// A point in a span's life with its own attributes (a fault that acted, say).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub name: String,
    pub time_unix_nano: u64,
    pub attributes: Vec<(String, Value)>,
}

/// One finished span.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub parent_span_id: Option<[u8; 8]>,
    pub trace_state: Option<String>,
    pub name: String,
    pub kind: Kind,
    pub start_unix_nano: u64,
    pub end_unix_nano: u64,
    pub attributes: Vec<(String, Value)>,
    pub events: Vec<Event>,
    /// `Some(message)`: the span ended in error (OTLP status `ERROR`).
    pub error: Option<String>,
}

impl Span {
    /// A span named `name` from `start` to `end` (Unix nanoseconds): a child of `parent`
    /// when given (same trace), else the root of a new trace.
    pub fn new(name: impl Into<String>, parent: Option<&Parent>, start: u64, end: u64) -> Span {
        let (trace_id, parent_span_id) = match parent {
            Some(p) => (p.trace_id, Some(p.span_id)),
            None => (new_trace_id(), None),
        };
        Span {
            trace_id,
            span_id: new_span_id(),
            parent_span_id,
            trace_state: None,
            name: name.into(),
            kind: Kind::Internal,
            start_unix_nano: start,
            end_unix_nano: end.max(start),
            attributes: Vec::new(),
            events: Vec::new(),
            error: None,
        }
    }

    /// This span as the parent of others.
    pub fn as_parent(&self) -> Parent {
        Parent {
            trace_id: self.trace_id,
            span_id: self.span_id,
            sampled: true,
        }
    }

    pub fn attr(&mut self, key: &str, value: impl Into<Value>) -> &mut Span {
        self.attributes.push((key.to_string(), value.into()));
        self
    }
}

/// Milliseconds (a run clock's, a latency) as nanoseconds; not a number or negative: 0.
pub fn millis_to_nanos(ms: f64) -> u64 {
    if ms.is_finite() && ms > 0.0 {
        (ms * 1e6) as u64
    } else {
        0
    }
}

/// Now, in Unix nanoseconds.
pub fn unix_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

fn any(v: &Value) -> AnyValue {
    let value = match v {
        Value::Str(s) => any_value::Value::StringValue(s.clone()),
        Value::Int(n) => any_value::Value::IntValue(*n),
        Value::Float(x) => any_value::Value::DoubleValue(*x),
        Value::Bool(b) => any_value::Value::BoolValue(*b),
        Value::Strs(list) => any_value::Value::ArrayValue(ArrayValue {
            values: list
                .iter()
                .map(|s| AnyValue {
                    value: Some(any_value::Value::StringValue(s.clone())),
                })
                .collect(),
        }),
    };
    AnyValue { value: Some(value) }
}

pub(super) fn key_values(attrs: &[(String, Value)]) -> Vec<KeyValue> {
    attrs
        .iter()
        .map(|(k, v)| KeyValue {
            key: k.clone(),
            value: Some(any(v)),
            ..Default::default()
        })
        .collect()
}

fn encode_span(s: &Span) -> Pb {
    Pb {
        trace_id: s.trace_id.to_vec(),
        span_id: s.span_id.to_vec(),
        trace_state: s.trace_state.clone().unwrap_or_default(),
        parent_span_id: s.parent_span_id.map(|p| p.to_vec()).unwrap_or_default(),
        name: s.name.clone(),
        kind: match s.kind {
            Kind::Internal => span::SpanKind::Internal,
            Kind::Server => span::SpanKind::Server,
            Kind::Client => span::SpanKind::Client,
        } as i32,
        start_time_unix_nano: s.start_unix_nano,
        end_time_unix_nano: s.end_unix_nano,
        attributes: key_values(&s.attributes),
        events: s
            .events
            .iter()
            .map(|e| span::Event {
                time_unix_nano: e.time_unix_nano,
                name: e.name.clone(),
                attributes: key_values(&e.attributes),
                ..Default::default()
            })
            .collect(),
        status: Some(match &s.error {
            Some(message) => Status {
                message: message.clone(),
                code: status::StatusCode::Error as i32,
            },
            None => Status {
                message: String::new(),
                code: status::StatusCode::Unset as i32,
            },
        }),
        ..Default::default()
    }
}

/// One export request for `spans`, from the service `service` (its resource).
pub fn request(service: &[(String, Value)], spans: &[Span]) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: key_values(service),
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "brownout".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..Default::default()
                }),
                spans: spans.iter().map(encode_span).collect(),
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
    fn a_span_encodes_and_decodes_with_its_parent_and_attributes() {
        let parent = Parent {
            trace_id: [7; 16],
            span_id: [9; 8],
            sampled: true,
        };
        let mut s = Span::new("tools/call echo", Some(&parent), 10, 5);
        s.attr("mcp.method.name", "tools/call").attr("n", 3u64);
        s.error = Some("fault".into());
        let bytes = request(&[("service.name".into(), "brownout".into())], &[s]).encode_to_vec();
        let back = ExportTraceServiceRequest::decode(bytes.as_slice()).expect("decodes");
        let span = &back.resource_spans[0].scope_spans[0].spans[0];
        assert_eq!(span.trace_id, vec![7; 16]);
        assert_eq!(span.parent_span_id, vec![9; 8]);
        assert_eq!(
            span.end_time_unix_nano, 10,
            "an end before the start is the start"
        );
        assert_eq!(span.attributes.len(), 2);
        assert_eq!(span.status.as_ref().map(|s| s.code), Some(2));
    }
}
