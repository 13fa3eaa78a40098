//! The journal's fields as the reports read them (from JSON, tolerant of missing keys).

use serde_json::Value;

pub fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}
pub fn f(v: &Value, k: &str) -> Option<f64> {
    v.get(k).and_then(Value::as_f64)
}
pub fn arr<'a>(v: &'a Value, k: &str) -> &'a [Value] {
    v.get(k)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}
pub fn obj<'a>(v: &'a Value, k: &str) -> Option<&'a Value> {
    v.get(k).filter(|x| !x.is_null())
}

/// The run's title.
pub fn title(j: &Value) -> String {
    crate::store::ingest::experiment_name(j)
}

/// The verdict in a few words, and whether it is a pass.
pub fn verdict(j: &Value) -> (String, bool) {
    let st = s(j, "status");
    let word = match st {
        "completed" => "PASSED — the hypothesis held",
        "deviated" => "FAILED — the system deviated from the hypothesis",
        "aborted" => "FAILED — aborted by an SLO gate",
        "failed" => "ERROR — brownout could not run it",
        "interrupted" => "INTERRUPTED",
        "refused" => "REFUSED by a guardrail — nothing was sent to the target",
        "not_run" => "NOT RUN — the steady state did not hold before any fault",
        other => other,
    };
    (word.to_string(), st == "completed")
}

/// Milliseconds for people.
pub fn ms(x: f64) -> String {
    if x.abs() < 1000.0 {
        format!("{x:.0} ms")
    } else {
        format!("{:.2} s", x / 1000.0)
    }
}

pub fn opt_ms(x: Option<f64>) -> String {
    x.map_or_else(|| "—".into(), ms)
}

pub fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "—".into(), |x| format!("{:.2} %", x * 100.0))
}

/// A gate's value in its unit (ratios as %, latencies as ms), from its text.
pub fn gate_value(gate: &str, x: Option<f64>) -> String {
    let Some(x) = x else { return "—".into() };
    let head = gate.trim_start();
    let latency = head.starts_with('p') && head[1..].starts_with(|c: char| c.is_ascii_digit());
    if latency {
        ms(x)
    } else if head.starts_with("amplification") {
        format!("{x:.2}×")
    } else {
        format!("{:.2} %", x * 100.0)
    }
}

/// Unix ms as an ISO time.
pub fn utc(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|| ms.to_string())
}

/// Start and end of the run, and its length.
pub fn when(j: &Value) -> (String, String) {
    let a = j
        .get("started_unix_ms")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let b = j.get("ended_unix_ms").and_then(Value::as_i64).unwrap_or(a);
    (utc(a), ms((b - a) as f64))
}

/// Each steady-state probe: (moment, probe).
pub fn probes(j: &Value) -> Vec<(&'static str, &Value)> {
    let mut out = Vec::new();
    for (m, k) in [
        ("before", "steady_state_before"),
        ("after", "steady_state_after"),
    ] {
        if let Some(ss) = obj(j, k) {
            for p in arr(ss, "probes") {
                out.push((m, p));
            }
        }
    }
    out
}
