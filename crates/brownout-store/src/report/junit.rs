//! JUnit XML, as CI systems read it: one `<testsuite>` per run, one `<testcase>` per
//! steady-state probe, per stage, per SLO gate and (a fleet) per relay. A probe that
//! missed, a stage that was not promoted, a gate that breached and a relay whose faults'
//! removal was not confirmed are `<failure>`s carrying the values; a run
//! brownout could not carry out is an `<error>`; a refused run, or a stage never reached,
//! is `<skipped>`.

use super::error::ReportError;
use super::view::{self, arr, f, s};
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};
use quick_xml::Writer;
use serde_json::Value;

/// How a test case ended.
enum Outcome {
    Pass,
    Failure(String, String),
    Error(String, String),
    Skipped(String),
}

struct Case {
    class: &'static str,
    name: String,
    secs: f64,
    outcome: Outcome,
}

fn secs(a: Option<f64>, b: Option<f64>) -> f64 {
    match (a, b) {
        (Some(a), Some(b)) if b >= a => (b - a) / 1000.0,
        _ => 0.0,
    }
}

fn cases(j: &Value) -> Vec<Case> {
    let mut out = Vec::new();
    let status = s(j, "status");
    if matches!(status, "failed" | "interrupted") {
        out.push(Case {
            class: "brownout.run",
            name: "run".into(),
            secs: 0.0,
            outcome: Outcome::Error(status.into(), s(j, "reason").into()),
        });
    }
    if status == "refused" {
        out.push(Case {
            class: "brownout.run",
            name: "guardrails".into(),
            secs: 0.0,
            outcome: Outcome::Skipped(format!("refused: {}", s(j, "reason"))),
        });
    }
    for (moment, p) in view::probes(j) {
        let met = p.get("met").and_then(Value::as_bool) == Some(true);
        let misses: Vec<&str> = arr(p, "misses").iter().filter_map(Value::as_str).collect();
        let lat: f64 = arr(p, "samples")
            .iter()
            .filter_map(|x| f(x, "latency_ms"))
            .sum();
        out.push(Case {
            class: "brownout.steady_state",
            name: format!("{moment}: {}", s(p, "tool")),
            secs: lat / 1000.0,
            outcome: if met {
                Outcome::Pass
            } else {
                Outcome::Failure(
                    format!("steady state {moment} not met: {}", misses.join("; ")),
                    format!(
                        "success {:.1} % over {} samples; p95 {}; tolerance {}",
                        f(p, "success_pct").unwrap_or(0.0),
                        arr(p, "samples").len(),
                        view::opt_ms(p.get("latency").and_then(|l| f(l, "p95_ms"))),
                        p.get("tolerance").map(Value::to_string).unwrap_or_default()
                    ),
                )
            },
        });
    }
    let ran = arr(j, "stages");
    for x in ran {
        let done = x.get("completed").and_then(Value::as_bool) == Some(true);
        let slis = x.get("slis").cloned().unwrap_or(Value::Null);
        out.push(Case {
            class: "brownout.stage",
            name: s(x, "stage").into(),
            secs: secs(f(x, "start_ms"), f(x, "end_ms")),
            outcome: if done {
                Outcome::Pass
            } else {
                Outcome::Failure(
                    format!(
                        "stage {} was not promoted: {}",
                        s(x, "stage"),
                        s(j, "reason")
                    ),
                    format!(
                        "sessions {:.0} %; calls {}; error rate {}; p99 {}",
                        f(x, "share").unwrap_or(0.0) * 100.0,
                        slis.get("calls")
                            .map_or_else(|| "0".into(), Value::to_string),
                        view::pct(f(&slis, "error_rate")),
                        view::opt_ms(f(&slis, "p99_ms"))
                    ),
                )
            },
        });
    }
    // Stages the experiment planned that the run never reached.
    if let Some(method) = j.pointer("/experiment/method").and_then(Value::as_array) {
        for m in method.iter().skip(ran.len()) {
            out.push(Case {
                class: "brownout.stage",
                name: s(m, "stage").into(),
                secs: 0.0,
                outcome: Outcome::Skipped("not reached".into()),
            });
        }
    }
    for g in arr(j, "gates") {
        let gate = s(g, "gate");
        let breached = g.get("breached").and_then(Value::as_bool) == Some(true);
        out.push(Case {
            class: "brownout.gate",
            name: gate.into(),
            secs: 0.0,
            outcome: if breached {
                Outcome::Failure(
                    format!(
                        "gate breached: {gate} was {} (limit {})",
                        view::gate_value(gate, f(g, "breach_value")),
                        view::gate_value(gate, f(g, "limit"))
                    ),
                    format!(
                        "first breach at {}; breaches {}; worst {}",
                        view::opt_ms(f(g, "first_breach_ms")),
                        g.get("breaches")
                            .map_or_else(|| "0".into(), Value::to_string),
                        view::gate_value(gate, f(g, "worst"))
                    ),
                )
            } else {
                Outcome::Pass
            },
        });
    }
    for (name, v) in super::fleet::cases(j) {
        out.push(Case {
            class: "brownout.relay",
            name,
            secs: 0.0,
            outcome: match v {
                Ok(()) => Outcome::Pass,
                Err(why) => Outcome::Failure(why.clone(), why),
            },
        });
    }
    out
}

fn x<E: std::fmt::Display>(e: E) -> ReportError {
    ReportError::Xml(e.to_string())
}

/// The JUnit document.
pub fn render(j: &Value) -> Result<String, ReportError> {
    let cases = cases(j);
    let count =
        |p: fn(&Outcome) -> bool| cases.iter().filter(|c| p(&c.outcome)).count().to_string();
    let failures = count(|o| matches!(o, Outcome::Failure(..)));
    let errors = count(|o| matches!(o, Outcome::Error(..)));
    let skipped = count(|o| matches!(o, Outcome::Skipped(..)));
    let tests = cases.len().to_string();
    let started = j
        .get("started_unix_ms")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let ended = j
        .get("ended_unix_ms")
        .and_then(Value::as_i64)
        .unwrap_or(started);
    let time = format!("{:.3}", (ended - started).max(0) as f64 / 1000.0);
    let stamp = chrono::DateTime::from_timestamp_millis(started)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%S").to_string())
        .unwrap_or_default();
    let title = view::title(j);
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))
        .map_err(x)?;
    let mut root = BytesStart::new("testsuites");
    root.push_attribute(("name", "brownout"));
    for (k, v) in [
        ("tests", &tests),
        ("failures", &failures),
        ("errors", &errors),
        ("time", &time),
    ] {
        root.push_attribute((k, v.as_str()));
    }
    w.write_event(Event::Start(root)).map_err(x)?;
    let mut suite = BytesStart::new("testsuite");
    suite.push_attribute(("name", title.as_str()));
    for (k, v) in [
        ("tests", &tests),
        ("failures", &failures),
        ("errors", &errors),
        ("skipped", &skipped),
        ("time", &time),
        ("timestamp", &stamp),
    ] {
        suite.push_attribute((k, v.as_str()));
    }
    suite.push_attribute(("id", crate::store::ingest::run_id(j).as_str()));
    suite.push_attribute(("file", s(j, "file")));
    w.write_event(Event::Start(suite)).map_err(x)?;
    w.write_event(Event::Start(BytesStart::new("properties")))
        .map_err(x)?;
    let seed = j.get("seed").map(Value::to_string).unwrap_or_default();
    let silent = super::silent::headline(j).unwrap_or_default();
    for (k, v) in [
        ("run_id", crate::store::ingest::run_id(j)),
        ("status", s(j, "status").to_string()),
        ("reason", s(j, "reason").to_string()),
        ("seed", seed),
        ("brownout_version", s(j, "brownout_version").to_string()),
        ("failed_safely_or_silently", silent),
    ]
    .into_iter()
    .filter(|(k, v)| *k != "failed_safely_or_silently" || !v.is_empty())
    {
        let mut p = BytesStart::new("property");
        p.push_attribute(("name", k));
        p.push_attribute(("value", v.as_str()));
        w.write_event(Event::Empty(p)).map_err(x)?;
    }
    w.write_event(Event::End(BytesEnd::new("properties")))
        .map_err(x)?;
    for c in &cases {
        let mut t = BytesStart::new("testcase");
        t.push_attribute(("name", c.name.as_str()));
        t.push_attribute(("classname", c.class));
        t.push_attribute(("time", format!("{:.3}", c.secs).as_str()));
        let (tag, ty, msg, body) = match &c.outcome {
            Outcome::Pass => {
                w.write_event(Event::Empty(t)).map_err(x)?;
                continue;
            }
            Outcome::Failure(m, b) => ("failure", "breach", m.as_str(), b.as_str()),
            Outcome::Error(ty, m) => ("error", ty.as_str(), m.as_str(), m.as_str()),
            Outcome::Skipped(m) => ("skipped", "skipped", m.as_str(), ""),
        };
        w.write_event(Event::Start(t)).map_err(x)?;
        let mut e = BytesStart::new(tag);
        e.push_attribute(("message", msg));
        e.push_attribute(("type", ty));
        if body.is_empty() {
            w.write_event(Event::Empty(e)).map_err(x)?;
        } else {
            w.write_event(Event::Start(e)).map_err(x)?;
            w.write_event(Event::Text(BytesText::new(body)))
                .map_err(x)?;
            w.write_event(Event::End(BytesEnd::new(tag))).map_err(x)?;
        }
        w.write_event(Event::End(BytesEnd::new("testcase")))
            .map_err(x)?;
    }
    w.write_event(Event::End(BytesEnd::new("testsuite")))
        .map_err(x)?;
    w.write_event(Event::End(BytesEnd::new("testsuites")))
        .map_err(x)?;
    let mut out = String::from_utf8(w.into_inner()).map_err(x)?;
    out.push('\n');
    Ok(out)
}
