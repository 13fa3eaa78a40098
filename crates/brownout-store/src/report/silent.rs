//! The report's "Failed safely or silently" section: of the results the faults changed, how
//! many the agent acted on (silent failures) and how many it noticed (safe ones), over the
//! run and per stage (docs/silent.md).

use super::view::{arr, obj, s};
use serde_json::Value;
use std::fmt::Write;

fn n(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn pct(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_f64)
        .map_or("—".into(), |x| format!("{:.1} %", x * 100.0))
}

/// The headline in the words of the people who asked for it (`None`: no result changed, or
/// a journal from before brownout followed them).
pub fn headline(j: &Value) -> Option<String> {
    let t = obj(j, "silent")?;
    let altered = n(t, "altered");
    (altered > 0).then(|| {
        format!(
            "Of the {altered} results a fault changed, {} failed safely (the agent noticed) and {} silently (it acted on the wrong value); {} unobserved.",
            pct(t, "safe_rate"),
            pct(t, "silent_rate"),
            n(t, "unobserved") + n(t, "pending"),
        )
    })
}

/// Append the section (nothing when no fault changed a result).
pub fn section(o: &mut String, j: &Value) {
    let Some(line) = headline(j) else {
        return;
    };
    let _ = writeln!(o, "## Failed safely or silently\n\n{line}\n");
    let _ = writeln!(
        o,
        "| stage | results changed | acted on (silent) | noticed (safe) | unobserved | silent rate | safe rate |\n|---|---|---|---|---|---|---|"
    );
    for st in arr(j, "stages") {
        let Some(t) = obj(st, "silent") else { continue };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} |",
            super::md_text::text(s(st, "stage")),
            n(t, "altered"),
            n(t, "propagated"),
            n(t, "noticed"),
            n(t, "unobserved") + n(t, "pending"),
            pct(t, "silent_rate"),
            pct(t, "safe_rate"),
        );
    }
    servers(o, j);
    let _ = writeln!(
        o,
        "\nA result counts as acted on when a later request of the same agent carried a value the fault put into it; as noticed when the agent asked for it again with the same arguments, or cancelled (docs/silent.md says how to read these).\n"
    );
}

/// With several servers: where the changed results came from, server by server (a value
/// acted on may have been acted on at another server).
fn servers(o: &mut String, j: &Value) {
    let list = arr(j, "servers");
    if list.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "\n| server | calls | not ok | results changed there | acted on (anywhere) | noticed | unobserved |\n|---|---|---|---|---|---|---|"
    );
    for sv in list {
        let t = obj(sv, "silent").unwrap_or(&Value::Null);
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} |",
            s(sv, "name").replace('|', "\\|"),
            n(sv, "calls"),
            n(sv, "errors"),
            n(t, "altered"),
            n(t, "propagated"),
            n(t, "noticed"),
            n(t, "unobserved") + n(t, "pending"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_section_says_how_many_failed_safely_and_silently() {
        let j = json!({
            "silent": {"altered": 40, "propagated": 30, "noticed": 8, "unobserved": 2, "pending": 0,
                       "silent_rate": 0.75, "safe_rate": 0.2},
            "stages": [{"stage": "10%", "silent": {"altered": 40, "propagated": 30, "noticed": 8,
                        "unobserved": 2, "pending": 0, "silent_rate": 0.75, "safe_rate": 0.2}}]
        });
        let mut o = String::new();
        section(&mut o, &j);
        assert!(
            o.contains("Of the 40 results a fault changed, 20.0 % failed safely"),
            "{o}"
        );
        assert!(o.contains("75.0 % silently"), "{o}");
        assert!(
            o.contains("| 10% | 40 | 30 | 8 | 2 | 75.0 % | 20.0 % |"),
            "{o}"
        );
        let mut many = String::new();
        let mut j = j.clone();
        j["servers"] = json!([
            {"name": "incidents", "calls": 50, "errors": 0,
             "silent": {"altered": 40, "propagated": 30, "noticed": 8, "unobserved": 2}},
            {"name": "ops", "calls": 50, "errors": 1, "silent": {"altered": 0}}]);
        section(&mut many, &j);
        assert!(
            many.contains("| incidents | 50 | 0 | 40 | 30 | 8 | 2 |"),
            "{many}"
        );
        assert!(many.contains("| ops | 50 | 1 | 0 | 0 | 0 | 0 |"), "{many}");
        let mut none = String::new();
        section(&mut none, &json!({"silent": {"altered": 0}}));
        section(&mut none, &json!({}));
        assert!(none.is_empty());
    }
}
