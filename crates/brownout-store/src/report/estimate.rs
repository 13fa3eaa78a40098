//! The report's "Estimate vs actual" section: per stage, what the simulator (calibrated on
//! the baseline) predicted before the stage ran, what happened, and the error.

use super::view::{arr, f, obj, s};
use serde_json::Value;
use std::fmt::Write;

fn pct(v: Option<f64>) -> String {
    v.map_or("—".into(), |v| format!("{:.2} %", v * 100.0))
}

fn ms(v: Option<f64>) -> String {
    v.map_or("—".into(), |v| format!("{v:.1} ms"))
}

/// Append the section (nothing when no stage has a prediction).
pub fn section(o: &mut String, j: &Value) {
    let stages: Vec<&Value> = arr(j, "stages")
        .iter()
        .filter(|st| obj(st, "prediction").is_some())
        .collect();
    if stages.is_empty() {
        if let Some(note) = obj(j, "calibration")
            .and_then(|c| c.get("note"))
            .and_then(Value::as_str)
        {
            let note = super::md_text::text(note);
            let _ = writeln!(o, "## Estimate vs actual\n\nNo prediction: {note}.\n");
        }
        return;
    }
    let _ = writeln!(
        o,
        "## Estimate vs actual\n\nThe simulator, calibrated on the baseline's calls, predicted each stage before it ran.\n\n| stage | error rate predicted | actual | p95 predicted | actual | gates predicted | prediction right |\n|---|---|---|---|---|---|---|"
    );
    for st in stages {
        let p = &st["prediction"];
        // One definition (PredictionError::right): the gates' verdict and the error rate.
        let flag = |k: &str| p.pointer(&format!("/error/{k}")).and_then(Value::as_bool);
        let right = match (flag("verdict_right"), flag("error_rate_right")) {
            (None, _) => "—",
            (Some(true), Some(true)) => "yes",
            (Some(true), Some(false)) => "**no** (error rate)",
            (Some(true), None) => "yes (gates)",
            (Some(false), _) => "**no**",
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {right} |",
            super::md_text::text(s(st, "stage")),
            pct(p.get("slis").and_then(|x| f(x, "error_rate"))),
            pct(st.get("slis").and_then(|x| f(x, "error_rate"))),
            ms(p.get("slis").and_then(|x| f(x, "p95_ms"))),
            ms(st.get("slis").and_then(|x| f(x, "p95_ms"))),
            super::md_text::text(s(p, "verdict")),
        );
    }
    o.push('\n');
}
