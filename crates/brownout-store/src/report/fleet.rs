//! The reports' per-relay view of a fleet run (`target.fleet`): a Markdown table of each
//! relay — the stages whose faults it carried, when they went on, when it confirmed their
//! removal, or since when it could not be reached and when its lease ran out — and, for
//! JUnit, one verdict per relay (its faults confirmed removed, or not).

use super::md_text::{code, text};
use super::view::{arr, f, opt_ms, s};
use serde_json::Value;
use std::fmt::Write;

/// One relay's verdict: `Ok(())` when nothing of this run is left to doubt on it, else why.
pub fn verdict(r: &Value) -> Result<(), String> {
    if let Some(since) = f(r, "unreachable_since_ms") {
        return Err(format!(
            "not reached since {}: its faults were left to lapse with their lease at {}{}",
            opt_ms(Some(since)),
            opt_ms(f(r, "lease_lapsed_ms")),
            r.get("detail")
                .and_then(Value::as_str)
                .map_or(String::new(), |d| format!(" ({d})"))
        ));
    }
    if f(r, "faults_on_ms").is_some() && f(r, "removed_ms").is_none() {
        return Err("its faults' removal was never confirmed".into());
    }
    Ok(())
}

/// The relays as (name, verdict), for JUnit's test cases.
pub fn cases(j: &Value) -> Vec<(String, Result<(), String>)> {
    arr(j, "fleet")
        .iter()
        .map(|r| (format!("relay {}", s(r, "admin")), verdict(r)))
        .collect()
}

/// Append the "Relays" section (nothing unless the run's target was a fleet).
pub fn section(o: &mut String, j: &Value) {
    let relays = arr(j, "fleet");
    if relays.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "## Relays\n\n| relay | stages with faults | faults on | removal confirmed | not reached since | lease ran out | in the fleet |\n|---|---|---|---|---|---|---|"
    );
    for r in relays {
        let stages: Vec<&str> = arr(r, "stages").iter().filter_map(Value::as_str).collect();
        let membership = match (f(r, "joined_ms"), f(r, "left_ms")) {
            (_, Some(left)) => format!("left at {}", opt_ms(Some(left))),
            (Some(j), _) if j > 1000.0 => format!("joined at {}", opt_ms(Some(j))),
            _ => "from the start".into(),
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} |",
            code(s(r, "admin")),
            if stages.is_empty() {
                "—".to_string()
            } else {
                text(&stages.join(", "))
            },
            opt_ms(f(r, "faults_on_ms")),
            opt_ms(f(r, "removed_ms")),
            opt_ms(f(r, "unreachable_since_ms")),
            opt_ms(f(r, "lease_lapsed_ms")),
            membership,
        );
    }
    let _ = writeln!(
        o,
        "\nTimes are from the run's start. A relay not reached dropped its faults by itself when their lease ran out.\n"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_relay_not_reached_is_a_failure_and_a_row() {
        let j = json!({"fleet": [
            {"admin": "http://10.0.0.1:9901", "url": "u", "joined_ms": 0.0, "left_ms": null,
             "stages": ["one"], "faults_on_ms": 1200.0, "removed_ms": 5000.0,
             "unreachable_since_ms": null, "lease_lapsed_ms": null},
            {"admin": "http://10.0.0.2:9901", "url": "u", "joined_ms": 0.0, "left_ms": null,
             "stages": ["one"], "faults_on_ms": 1200.0, "removed_ms": null,
             "unreachable_since_ms": 3000.0, "lease_lapsed_ms": 8000.0, "detail": "timed out"},
        ]});
        let c = cases(&j);
        assert!(c[0].1.is_ok());
        let why = c[1].1.clone().expect_err("not reached");
        assert!(why.contains("timed out"), "{why}");
        let mut o = String::new();
        section(&mut o, &j);
        assert_eq!(o.matches("| `http://10.0.0.").count(), 2, "{o}");
        assert!(o.contains("## Relays"), "{o}");
        let mut none = String::new();
        section(&mut none, &json!({}));
        assert!(none.is_empty());
    }
}
