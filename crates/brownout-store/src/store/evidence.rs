//! Compliance evidence: the runs of experiments tagged `compliance: [FRAMEWORK:ARTICLE, …]`,
//! per tag, since a date — and the tags with no run since then (gaps an auditor asks about).

use super::backend::Backend;
use super::val::Val;
use super::StoreError;
use serde::Serialize;
use std::collections::BTreeMap;

/// One run as evidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvidenceRun {
    pub run_id: String,
    pub experiment: String,
    pub status: String,
    pub started_unix_ms: i64,
}

/// A tag and its runs since the date.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TagEvidence {
    pub tag: String,
    pub runs: Vec<EvidenceRun>,
    /// The latest run carrying the tag, at any time.
    pub last_unix_ms: i64,
    /// No run since the date: a gap.
    pub gap: bool,
}

/// Every tag the store has seen, oldest-first runs since `since_unix_ms` per tag.
pub fn evidence<B: Backend + ?Sized>(
    s: &B,
    since_unix_ms: i64,
) -> Result<Vec<TagEvidence>, StoreError> {
    let d = s.dialect();
    let sql = format!(
        "SELECT t.value, r.run_id, r.experiment, r.status, r.started_unix_ms
         FROM runs r JOIN journals j USING (run_id), {}
         WHERE r.dry_run = 0 AND {}
         ORDER BY t.value, r.started_unix_ms, r.run_id",
        d.json_texts("j.json", &["experiment", "compliance"]),
        d.json_text_filter()
    );
    let mut tags: BTreeMap<String, TagEvidence> = BTreeMap::new();
    let at = |r: &[Val], k: usize| r.get(k).cloned().unwrap_or(Val::Null);
    for row in s.select(&sql, &[])? {
        let tag = at(&row, 0).string();
        let run = EvidenceRun {
            run_id: at(&row, 1).string(),
            experiment: at(&row, 2).string(),
            status: at(&row, 3).string(),
            started_unix_ms: at(&row, 4).int().unwrap_or(0),
        };
        let e = tags.entry(tag.clone()).or_insert(TagEvidence {
            tag,
            runs: Vec::new(),
            last_unix_ms: 0,
            gap: true,
        });
        e.last_unix_ms = e.last_unix_ms.max(run.started_unix_ms);
        if run.started_unix_ms >= since_unix_ms {
            e.gap = false;
            e.runs.push(run);
        }
    }
    Ok(tags.into_values().collect())
}

/// The evidence as Markdown: a summary per tag, the gaps, then the runs.
pub fn markdown(tags: &[TagEvidence], since: &str) -> String {
    use std::fmt::Write;
    let day = |ms: i64| {
        chrono::DateTime::from_timestamp_millis(ms)
            .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
            .unwrap_or_default()
    };
    let mut o = format!("# Compliance evidence since {since}\n\n");
    if tags.is_empty() {
        o.push_str("No run in the store carries a `compliance` tag.\n");
        return o;
    }
    let _ = writeln!(
        o,
        "| requirement | runs | passed | last run | evidence |\n|---|---|---|---|---|"
    );
    for t in tags {
        let passed = t.runs.iter().filter(|r| r.status == "completed").count();
        let _ = writeln!(
            o,
            "| `{}` | {} | {passed} | {} | {} |",
            t.tag,
            t.runs.len(),
            day(t.last_unix_ms),
            if t.gap { "**gap: none since**" } else { "yes" }
        );
    }
    let gaps: Vec<&str> = tags
        .iter()
        .filter(|t| t.gap)
        .map(|t| t.tag.as_str())
        .collect();
    if !gaps.is_empty() {
        let _ = writeln!(
            o,
            "\n## Gaps\n\nNo run since {since} for: {}.",
            gaps.iter()
                .map(|g| format!("`{g}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for t in tags.iter().filter(|t| !t.gap) {
        let _ = writeln!(
            o,
            "\n## `{}`\n\n| run | started | status | experiment |\n|---|---|---|---|",
            t.tag
        );
        for r in &t.runs {
            let _ = writeln!(
                o,
                "| `{}` | {} | {} | {} |",
                r.run_id,
                day(r.started_unix_ms),
                r.status,
                r.experiment.replace('|', "\\|")
            );
        }
    }
    o
}
