//! Millisecond keys: every `*_ms` key of a plan takes a number of milliseconds or a span
//! with a unit (`"500ms"`, `"2s"`, `"1.5m"`, `"1h"`).
//!
//! The fields stay `f64` milliseconds; these helpers are the serde `deserialize_with` and
//! schemars `schema_with` functions that widen what a plan may write:
//!
//! ```ignore
//! #[serde(default, deserialize_with = "crate::millis::opt")]
//! #[schemars(schema_with = "crate::millis::opt_schema")]
//! pub hold_ms: Option<f64>,
//! ```

use schemars::{json_schema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer};

/// The longest span a `*_ms` key takes: a week. Beyond it a value is a typo (`1e30`), and
/// it would overflow the clocks of the drivers that wait it out.
pub const MAX_MS: f64 = 7.0 * 24.0 * 3_600_000.0;

/// The span syntax a `*_ms` key accepts besides a number.
pub const SPAN_PATTERN: &str = r"^\s*[0-9]+(\.[0-9]+)?\s*(ms|s|m|h)\s*$";

#[derive(Deserialize)]
#[serde(untagged)]
enum Raw {
    Number(f64),
    Text(String),
}

/// Milliseconds from a span such as `"250ms"`, `"2s"`, `"1m"`, `"1h"`.
pub fn parse_span(text: &str) -> Option<f64> {
    crate::duration::parse_millis(text)
}

fn from_raw<E: serde::de::Error>(raw: Raw) -> Result<f64, E> {
    let ms = match raw {
        Raw::Number(n) => n,
        Raw::Text(t) => parse_span(&t).ok_or_else(|| {
            E::custom(format!(
                "`{t}` is not a duration: write milliseconds as a number, or a span such as \"500ms\", \"2s\", \"1m\""
            ))
        })?,
    };
    if !ms.is_finite() || ms > MAX_MS {
        return Err(E::custom(format!(
            "{ms} ms is longer than the longest span brownout takes, a week ({MAX_MS} ms)"
        )));
    }
    Ok(ms)
}

/// `deserialize_with` for a required `*_ms` key.
pub fn req<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    from_raw(Raw::deserialize(d)?)
}

/// `deserialize_with` for an optional `*_ms` key (with `#[serde(default)]`).
pub fn opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    match Option::<Raw>::deserialize(d)? {
        None => Ok(None),
        Some(raw) => from_raw(raw).map(Some),
    }
}

/// `schema_with` for a required `*_ms` key: a number ≥ 0 or a span string. One schema
/// rather than an `anyOf`, so a bad value gets a plain message (`minimum` binds numbers
/// only, `pattern` strings only).
pub fn schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": ["number", "string"],
        "minimum": 0,
        "maximum": MAX_MS as u64,
        "pattern": SPAN_PATTERN,
        "description": DESCRIPTION,
        "examples": ["500ms", "2s", "1m"],
    })
}

/// `schema_with` for an optional `*_ms` key (`null` is the same as leaving it out).
pub fn opt_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": ["number", "string", "null"],
        "minimum": 0,
        "maximum": MAX_MS as u64,
        "pattern": SPAN_PATTERN,
        "description": DESCRIPTION,
        "examples": ["500ms", "2s", "1m"],
    })
}

const DESCRIPTION: &str = "milliseconds, or a span with a unit: \"500ms\", \"2s\", \"1m\", \"1h\"";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_milliseconds() {
        assert_eq!(parse_span("500ms"), Some(500.0));
        assert_eq!(parse_span(" 2s "), Some(2000.0));
        assert_eq!(parse_span("1.5m"), Some(90_000.0));
        assert_eq!(parse_span("1h"), Some(3_600_000.0));
        assert_eq!(parse_span("50%"), None);
        assert_eq!(parse_span("fast"), None);
        let re = regex::Regex::new(SPAN_PATTERN).expect("pattern");
        for ok in ["500ms", "2s", "1.5m", "1h"] {
            assert!(re.is_match(ok) && parse_span(ok).is_some(), "{ok}");
        }
        assert!(!re.is_match("5 days"));
    }

    /// Every `*_ms` key of every kind (and of the shared selector keys) takes a span.
    #[test]
    fn every_ms_key_of_every_kind_takes_a_span() {
        let schema = crate::plan::plan_schema();
        let validator = jsonschema::validator_for(&schema).expect("schema");
        let kinds = schema["properties"]["faults"]["items"]["oneOf"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut checked = 0;
        for k in &kinds {
            let name = k["title"].as_str().unwrap_or_default();
            let props = k["properties"].as_object().cloned().unwrap_or_default();
            for key in props.keys().filter(|p| p.ends_with("_ms")) {
                let mut fault = serde_json::json!({"kind": name});
                for r in k["required"].as_array().into_iter().flatten() {
                    if let Some(r) = r.as_str().filter(|r| *r != "kind") {
                        fault[r] = serde_json::json!(1);
                    }
                }
                for (value, ok) in [
                    ("2s", true),
                    ("500ms", true),
                    ("fast", false),
                    ("50%", false),
                ] {
                    fault[key] = serde_json::json!(value);
                    let plan = serde_json::json!({"faults": [fault.clone()]});
                    assert_eq!(validator.is_valid(&plan), ok, "{name}.{key} = {value:?}");
                }
                checked += 1;
            }
        }
        assert!(checked >= 14, "only {checked} *_ms keys found");
    }

    #[test]
    fn spans_load_as_milliseconds() {
        let p = crate::Plan::from_str_named(
            "faults:\n  - kind: latency\n    added_ms: \"500ms\"\n    jitter_ms: 0.5s\n  - kind: timeout\n    hold_ms: 2s\n  - kind: drop\n    probability: 0.5\n    correlation: {mode: episodes, episode_ms: 1m, intensity: 0.9}\n",
            "p.yaml",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let Some(l) = p.faults[0]
            .effect
            .downcast::<crate::faults::latency::Latency>()
        else {
            panic!("latency")
        };
        assert_eq!((l.added_ms, l.jitter_ms), (Some(500.0), Some(500.0)));
        let Some(t) = p.faults[1]
            .effect
            .downcast::<crate::faults::timeout::Timeout>()
        else {
            panic!("timeout")
        };
        assert_eq!(t.hold_ms, Some(2000.0));
        let errs = crate::Plan::from_str_named(
            "faults:\n  - kind: latency\n    added_ms: soon\n  - kind: timeout\n    hold_ms: -5\n",
            "p.yaml",
        )
        .map(|_| ())
        .expect_err("not a span");
        assert_eq!(errs.errors[0].key, "faults[0].added_ms", "{errs}");
        assert!(!errs.to_string().contains("anyOf"), "{errs}");
        assert!(errs.errors[1].message.contains("from 0 to"), "{errs}");
        assert!(errs.errors[0].message.contains("\"500ms\""), "{errs}");
    }
}

#[cfg(test)]
mod limit_tests {
    /// `1e30` ms is a typo, not a wait: refused, as numbers and as spans.
    #[test]
    fn spans_beyond_a_week_are_refused() {
        let errs = crate::Plan::from_str_named(
            "faults:\n  - kind: latency\n    added_ms: 1e30\n  - kind: timeout\n    hold_ms: \"9999h\"\n",
            "p.yaml",
        )
        .map(|_| ())
        .expect_err("too long");
        let text = errs.to_string();
        assert!(text.contains("from 0 to 604800000 "), "{text}");
        assert!(text.contains("longer than the longest span"), "{text}");
        assert!(crate::Plan::from_str_named(
            "faults:\n  - {kind: latency, added_ms: 7d}\n",
            "p.yaml"
        )
        .is_err());
        assert!(crate::Plan::from_str_named(
            "faults:\n  - {kind: latency, added_ms: 168h}\n",
            "p.yaml"
        )
        .is_ok());
    }
}
