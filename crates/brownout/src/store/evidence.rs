//! Compliance evidence: the runs of experiments tagged `compliance: [FRAMEWORK:ARTICLE, …]`,
//! per tag, since a date — and the tags with no run since then (gaps an auditor asks about).

use super::{SqliteStore, StoreError};
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
pub fn evidence(s: &SqliteStore, since_unix_ms: i64) -> Result<Vec<TagEvidence>, StoreError> {
    let mut st = s.connection().prepare(
        "SELECT t.value, r.run_id, r.experiment, r.status, r.started_unix_ms
         FROM runs r JOIN journals j USING (run_id),
              json_each(json_extract(j.json, '$.experiment.compliance')) t
         WHERE r.dry_run = 0 AND t.type = 'text'
         ORDER BY t.value, r.started_unix_ms, r.run_id",
    )?;
    let mut tags: BTreeMap<String, TagEvidence> = BTreeMap::new();
    let rows = st.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            EvidenceRun {
                run_id: r.get(1)?,
                experiment: r.get(2)?,
                status: r.get(3)?,
                started_unix_ms: r.get(4)?,
            },
        ))
    })?;
    for row in rows {
        let (tag, run) = row?;
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
