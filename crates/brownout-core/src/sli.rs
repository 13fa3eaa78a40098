//! Live SLIs per method and tool: calls by outcome, latency buckets, and correctness — no
//! error, `isError` false, and `structuredContent` valid against the `outputSchema` the
//! server advertised in `tools/list` (learned as that answer passes through the relay),
//! and not a result a fault drifted or truncated (wrong by construction).
//! Availability, correctness and effective tool availability (ETA = A × C) follow.

use crate::event::Outcome;
use rustc_hash::FxHashMap;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Upper bounds of the latency buckets, in milliseconds (Prometheus-style, cumulative when
/// exported; the last bucket, +Inf, is implied).
pub const LATENCY_BUCKETS_MS: [f64; 14] = [
    1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0, 30000.0,
];

/// How many distinct (method, tool) series are kept; a peer inventing tool names cannot
/// grow memory without bound. Calls beyond it are counted under tool `_other`.
pub const MAX_SERIES: usize = 1000;

/// The figures of one (method, tool).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    pub calls: u64,
    pub outcomes: BTreeMap<&'static str, u64>,
    /// Calls answered: a result (`isError` or not) or a JSON-RPC error (see [`Slis::record`]).
    pub responded: u64,
    pub correct: u64,
    /// Results whose `structuredContent` broke the advertised `outputSchema`.
    pub schema_violations: u64,
    /// Per-bucket counts (not cumulative), `LATENCY_BUCKETS_MS.len() + 1` of them.
    pub buckets: Vec<u64>,
    pub latency_sum_ms: f64,
}

impl Series {
    /// Answered calls over calls.
    pub fn availability(&self) -> f64 {
        ratio(self.responded, self.calls)
    }

    /// Correct answers over answers.
    pub fn correctness(&self) -> f64 {
        ratio(self.correct, self.responded)
    }

    /// Effective tool availability: availability × correctness.
    pub fn eta(&self) -> f64 {
        self.availability() * self.correctness()
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        1.0
    } else {
        a as f64 / b as f64
    }
}

/// Live SLIs of a relay.
#[derive(Default)]
pub struct Slis {
    /// method → tool → figures (two levels, so a lookup borrows instead of allocating).
    series: BTreeMap<String, BTreeMap<String, Series>>,
    /// How many (method, tool) series exist.
    count: usize,
    schemas: FxHashMap<String, Arc<ToolSchema>>,
}

/// A tool's advertised `outputSchema`: as written, and compiled.
pub struct ToolSchema {
    pub raw: Value,
    pub validator: jsonschema::Validator,
}

impl std::fmt::Debug for ToolSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSchema")
            .field("raw", &self.raw)
            .finish()
    }
}

impl std::fmt::Debug for Slis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slis")
            .field("series", &self.count)
            .field("schemas", &self.schemas.len())
            .finish()
    }
}

impl Slis {
    /// Learn the output schemas a `tools/list` answer advertises (the server's own bytes).
    /// A schema that does not compile is ignored: the tool is then judged without one.
    pub fn learn_tools_list(&mut self, response: &[u8]) {
        let Ok(v) = serde_json::from_slice::<Value>(response) else {
            return;
        };
        let Some(tools) = v.pointer("/result/tools").and_then(Value::as_array) else {
            return;
        };
        for t in tools {
            let (Some(name), Some(schema)) =
                (t.get("name").and_then(Value::as_str), t.get("outputSchema"))
            else {
                continue;
            };
            if self.schemas.len() >= MAX_SERIES && !self.schemas.contains_key(name) {
                continue;
            }
            if let Ok(validator) = jsonschema::validator_for(schema) {
                let raw = schema.clone();
                let ts = Arc::new(ToolSchema { raw, validator });
                self.schemas.insert(name.to_string(), ts);
            }
        }
    }

    /// A tool's advertised output schema, if it has one.
    pub fn schema(&self, tool: &str) -> Option<Arc<ToolSchema>> {
        self.schemas.get(tool).cloned()
    }

    /// Whether a tool has an advertised output schema.
    pub fn has_schema(&self, tool: &str) -> bool {
        self.schemas.contains_key(tool)
    }

    /// Does this `tools/call` answer keep the tool's advertised schema? `true` when the tool
    /// advertised none. A tool with an output schema must return `structuredContent`
    /// (unless the result is an `isError` one, judged by its outcome instead).
    pub fn structured_valid(&self, tool: &str, response: &[u8]) -> bool {
        let Some(validator) = self.schemas.get(tool) else {
            return true;
        };
        let Ok(v) = serde_json::from_slice::<Value>(response) else {
            return false;
        };
        match v.pointer("/result/structuredContent") {
            Some(sc) => validator.validator.is_valid(sc),
            None => false,
        }
    }

    /// Record one completed call. Answered means the client got a result (`isError` or
    /// not) or a JSON-RPC error that a server sent; malformed, dropped and unanswered calls
    /// were not answered. Correct means `Ok`, schema-valid and not `altered`: a result a
    /// fault drifted or truncated is wrong by construction, whether or not an
    /// `outputSchema` would catch it.
    pub fn record(
        &mut self,
        method: &str,
        tool: Option<&str>,
        outcome: Outcome,
        latency_ms: f64,
        schema_valid: bool,
        altered: bool,
    ) {
        let tool = tool.unwrap_or("");
        let known = self
            .series
            .get(method)
            .is_some_and(|tools| tools.contains_key(tool));
        let tool = if known || self.count < MAX_SERIES {
            tool
        } else {
            "_other"
        };
        if !self
            .series
            .get(method)
            .is_some_and(|t| t.contains_key(tool))
        {
            self.count += 1;
            self.series.entry(method.to_string()).or_default().insert(
                tool.to_string(),
                Series {
                    buckets: vec![0; LATENCY_BUCKETS_MS.len() + 1],
                    ..Series::default()
                },
            );
        }
        let Some(s) = self.series.get_mut(method).and_then(|t| t.get_mut(tool)) else {
            return;
        };
        s.calls += 1;
        *s.outcomes.entry(outcome.as_str()).or_default() += 1;
        let responded = matches!(outcome, Outcome::Ok | Outcome::ToolError | Outcome::Error);
        if responded {
            s.responded += 1;
            s.latency_sum_ms += latency_ms;
            let i = LATENCY_BUCKETS_MS
                .iter()
                .position(|&b| latency_ms <= b)
                .unwrap_or(LATENCY_BUCKETS_MS.len());
            s.buckets[i] += 1;
        }
        if outcome == Outcome::Ok && !schema_valid {
            s.schema_violations += 1;
        }
        if outcome == Outcome::Ok && schema_valid && !altered {
            s.correct += 1;
        }
    }

    /// Every (method, tool) series, in order; tool is empty for methods without one.
    pub fn series(&self) -> impl Iterator<Item = (&str, &str, &Series)> {
        self.series
            .iter()
            .flat_map(|(m, tools)| tools.iter().map(move |(t, s)| (m.as_str(), t.as_str(), s)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIST: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[
        {"name":"get_incident","inputSchema":{"type":"object"},
         "outputSchema":{"type":"object","properties":{"severity":{"type":"integer"}},"required":["severity"]}},
        {"name":"echo","inputSchema":{"type":"object"}}]}}"#;

    #[test]
    fn correctness_follows_the_advertised_output_schema() {
        let mut s = Slis::default();
        s.learn_tools_list(LIST.as_bytes());
        assert!(s.has_schema("get_incident") && !s.has_schema("echo"));
        let good = br#"{"jsonrpc":"2.0","id":2,"result":{"content":[],"structuredContent":{"severity":2}}}"#;
        let drifted = br#"{"jsonrpc":"2.0","id":3,"result":{"content":[],"structuredContent":{"severity":"2"}}}"#;
        let missing = br#"{"jsonrpc":"2.0","id":4,"result":{"content":[]}}"#;
        assert!(s.structured_valid("get_incident", good));
        assert!(!s.structured_valid("get_incident", drifted));
        assert!(!s.structured_valid("get_incident", missing));
        assert!(s.structured_valid("echo", missing));
        for (valid, outcome) in [
            (true, Outcome::Ok),
            (false, Outcome::Ok),
            (true, Outcome::ToolError),
            (true, Outcome::Unanswered),
        ] {
            s.record(
                "tools/call",
                Some("get_incident"),
                outcome,
                12.0,
                valid,
                false,
            );
        }
        let (_, _, g) = s.series().next().expect("a series");
        assert_eq!(
            (g.calls, g.responded, g.correct, g.schema_violations),
            (4, 3, 1, 1)
        );
        assert_eq!(g.availability(), 0.75);
        assert!((g.correctness() - 1.0 / 3.0).abs() < 1e-12);
        assert!((g.eta() - 0.25).abs() < 1e-12);
        // 12 ms lands in the 25 ms bucket, three times (answered calls only).
        assert_eq!(g.buckets[4], 3);
    }

    #[test]
    fn series_are_bounded() {
        let mut s = Slis::default();
        for i in 0..MAX_SERIES + 10 {
            s.record(
                "tools/call",
                Some(&format!("t{i}")),
                Outcome::Ok,
                1.0,
                true,
                false,
            );
        }
        assert_eq!(s.series().count(), MAX_SERIES + 1);
        let other = s.series().find(|(_, t, _)| *t == "_other").expect("_other");
        assert_eq!(other.2.calls, 10);
    }

    #[test]
    fn an_altered_result_is_never_correct() {
        let mut s = Slis::default();
        s.record("tools/call", Some("echo"), Outcome::Ok, 1.0, true, true);
        s.record("tools/call", Some("echo"), Outcome::Ok, 1.0, true, false);
        let (_, _, g) = s.series().next().expect("a series");
        assert_eq!((g.responded, g.correct, g.schema_violations), (2, 1, 0));
    }
}
