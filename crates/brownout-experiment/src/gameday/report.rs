//! A GameDay's reports: Markdown (how each point was earned or lost, the ladder reached,
//! the trend against earlier GameDays), HTML (the same, one escaped page), JSON (the
//! record) and JUnit XML (one testsuite, one testcase per experiment). Every text that came
//! from a file or a run is escaped for its format.

use super::record::Record;
use brownout_store::report::{Format, ReportError};
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};
use quick_xml::Writer;

/// The report in a format.
pub fn render(r: &Record, format: Format) -> Result<String, ReportError> {
    Ok(match format {
        Format::Md => markdown(r),
        Format::Html => {
            brownout_store::report::html::page(&format!("GameDay: {}", r.title), &markdown(r))
        }
        Format::Json => serde_json::to_string_pretty(r)? + "\n",
        Format::Junit => junit(r)?,
    })
}

/// Text for a Markdown table cell or line: no line breaks, no markup.
fn md(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' | '\r' => o.push(' '),
            '|' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' | '\\' | '!' => {
                o.push('\\');
                o.push(c);
            }
            c if c.is_control() => {}
            c => o.push(c),
        }
    }
    o
}

fn pct(x: f64) -> String {
    format!("{}%", (x * 1000.0).round() / 10.0)
}

/// The Markdown report.
pub fn markdown(r: &Record) -> String {
    let mut o = String::new();
    let what = if r.dry_run { "expected score" } else { "score" };
    o.push_str(&format!("# GameDay: {}\n\n", md(&r.title)));
    o.push_str(&format!(
        "**{}** — {what} **{:.1}/100**, grade **{}**. {}\n\n",
        md(&r.status),
        r.score,
        md(&r.grade),
        md(&r.reason)
    ));
    o.push_str(&format!(
        "GameDay {} · file {} · {} experiment(s){}\n\n",
        md(&r.gameday_id),
        md(&r.file),
        r.experiments.len(),
        if r.continue_on_failure {
            " · continue on failure"
        } else {
            ""
        }
    ));
    o.push_str("## Escalation ladder\n\n");
    match &r.ladder.reached {
        Some(id) => o.push_str(&format!(
            "Reached step {} of {} (`{}`), the widest completed stage at {} of the sessions.\n\n",
            r.ladder.step,
            r.ladder.of,
            md(id),
            pct(r.ladder.widest_share)
        )),
        None => o.push_str(&format!(
            "No experiment completed: step 0 of {}.\n\n",
            r.ladder.of
        )),
    }
    if let Some(at) = &r.stopped_at {
        o.push_str(&format!("Stopped escalating at `{}`.\n\n", md(at)));
    }
    o.push_str("## How the points were earned\n\n");
    o.push_str("| # | experiment | status | weight | points | how |\n|---|---|---|---|---|---|\n");
    for (i, e) in r.experiments.iter().enumerate() {
        o.push_str(&format!(
            "| {} | {} — {} | {} | {} | {:.1} / {:.1} | {} |\n",
            i + 1,
            md(&e.id),
            md(&e.title),
            md(&e.status),
            e.weight,
            e.points,
            e.max_points,
            md(&e.why)
        ));
    }
    o.push('\n');
    for e in &r.experiments {
        if !e.reason.is_empty() || !e.factors.is_empty() {
            o.push_str(&format!("- **{}**: {}", md(&e.id), md(&e.reason)));
            if let Some(id) = &e.run_id {
                o.push_str(&format!(" (run {})", md(id)));
            }
            o.push('\n');
            for f in &e.factors {
                o.push_str(&format!(
                    "  - {} {:.2}: {}\n",
                    md(&f.name),
                    f.value,
                    md(&f.from)
                ));
            }
        }
    }
    o.push_str(
        "\nScore: a completed experiment earns 0.5 + 0.5 × the mean of its measured factors \
         (margin ρ, MTTR against `recovery.within`, MTTD against its first stage, 1 − \
         silent_rate); anything else earns 0; weighted mean × 100. Grade A ≥ 90, B ≥ 80, \
         C ≥ 70, D ≥ 60, F below (docs/gameday.md).\n\n",
    );
    o.push_str("## Trend\n\n");
    if r.previous.is_empty() {
        o.push_str("No earlier GameDay of this title in the store.\n");
    } else {
        o.push_str("| GameDay | started | status | score | grade |\n|---|---|---|---|---|\n");
        for p in &r.previous {
            o.push_str(&format!(
                "| {} | {} | {} | {:.1} | {} |\n",
                md(&p.gameday_id),
                brownout_store::report::view::utc(p.started_unix_ms),
                md(&p.status),
                p.score,
                md(&p.grade)
            ));
        }
        if let Some(last) = r.previous.last() {
            o.push_str(&format!(
                "\nThis GameDay: {:.1} ({:+.1} against the previous one).\n",
                r.score,
                r.score - last.score
            ));
        }
    }
    o
}

/// Text XML 1.0 can carry: control characters (but tab and line breaks) dropped.
fn xml(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r'))
        .collect()
}

fn x<E: std::fmt::Display>(e: E) -> ReportError {
    ReportError::Xml(e.to_string())
}

/// JUnit XML: one testsuite, one testcase per experiment — completed passes, aborted or
/// deviated fails, failed/not run/interrupted is an error, refused or skipped is skipped.
pub fn junit(r: &Record) -> Result<String, ReportError> {
    let count = |f: fn(&str) -> bool| {
        r.experiments
            .iter()
            .filter(|e| f(&e.status))
            .count()
            .to_string()
    };
    let failures = count(|s| matches!(s, "aborted" | "deviated"));
    let errors = count(|s| matches!(s, "failed" | "not_run" | "interrupted"));
    let skipped = count(|s| {
        !matches!(
            s,
            "completed" | "checked" | "aborted" | "deviated" | "failed" | "not_run" | "interrupted"
        )
    });
    let tests = r.experiments.len().to_string();
    let time = format!(
        "{:.3}",
        r.ended_unix_ms.saturating_sub(r.started_unix_ms) as f64 / 1000.0
    );
    let stamp = chrono::DateTime::from_timestamp_millis(r.started_unix_ms as i64)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%S").to_string())
        .unwrap_or_default();
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))
        .map_err(x)?;
    let mut root = BytesStart::new("testsuites");
    root.push_attribute(("name", "brownout gameday"));
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
    suite.push_attribute(("name", xml(&r.title).as_str()));
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
    suite.push_attribute(("id", xml(&r.gameday_id).as_str()));
    suite.push_attribute(("file", xml(&r.file).as_str()));
    w.write_event(Event::Start(suite)).map_err(x)?;
    w.write_event(Event::Start(BytesStart::new("properties")))
        .map_err(x)?;
    for (k, v) in [
        ("gameday_id", r.gameday_id.clone()),
        ("status", r.status.clone()),
        ("reason", r.reason.clone()),
        ("score", format!("{:.1}", r.score)),
        ("grade", r.grade.clone()),
        (
            "ladder",
            format!(
                "{} of {}{}",
                r.ladder.step,
                r.ladder.of,
                r.ladder
                    .reached
                    .as_ref()
                    .map_or(String::new(), |s| format!(" ({s})"))
            ),
        ),
    ] {
        let mut p = BytesStart::new("property");
        p.push_attribute(("name", k));
        p.push_attribute(("value", xml(&v).as_str()));
        w.write_event(Event::Empty(p)).map_err(x)?;
    }
    w.write_event(Event::End(BytesEnd::new("properties")))
        .map_err(x)?;
    for e in &r.experiments {
        let mut t = BytesStart::new("testcase");
        let name = xml(&format!("{}: {}", e.id, e.title));
        t.push_attribute(("name", name.as_str()));
        t.push_attribute(("classname", "brownout.gameday"));
        let secs = format!("{:.3}", e.duration_ms as f64 / 1000.0);
        t.push_attribute(("time", secs.as_str()));
        let text = xml(&format!(
            "{} — {:.1} of {:.1} points: {}",
            e.reason, e.points, e.max_points, e.why
        ));
        let message = xml(&e.reason);
        let (tag, ty) = match e.status.as_str() {
            "completed" | "checked" => {
                w.write_event(Event::Empty(t)).map_err(x)?;
                continue;
            }
            "aborted" | "deviated" => ("failure", e.status.as_str()),
            "failed" | "not_run" | "interrupted" => ("error", e.status.as_str()),
            _ => ("skipped", "skipped"),
        };
        w.write_event(Event::Start(t)).map_err(x)?;
        let mut f = BytesStart::new(tag);
        f.push_attribute(("message", message.as_str()));
        if tag == "skipped" {
            w.write_event(Event::Empty(f)).map_err(x)?;
        } else {
            f.push_attribute(("type", ty));
            w.write_event(Event::Start(f)).map_err(x)?;
            w.write_event(Event::Text(BytesText::new(&text)))
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
    let mut s = String::from_utf8(w.into_inner()).map_err(x)?;
    s.push('\n');
    Ok(s)
}
