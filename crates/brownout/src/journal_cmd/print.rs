//! Human output of `journal list` and `journal query`: aligned text tables.

use crate::store::readonly::QueryResult;
use crate::store::trend::Trend;
use crate::store::RunSummary;
use serde_json::Value;

/// Unix ms as `2026-11-23 20:41:26Z`.
pub fn utc(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M:%SZ").to_string())
        .unwrap_or_else(|| ms.to_string())
}

/// Milliseconds as `850ms`, `12.3s`, `4m05s`.
pub fn dur(ms: f64) -> String {
    if ms < 1000.0 {
        format!("{ms:.0}ms")
    } else if ms < 60_000.0 {
        format!("{:.1}s", ms / 1000.0)
    } else {
        let s = (ms / 1000.0).round() as u64;
        format!("{}m{:02}s", s / 60, s % 60)
    }
}

fn aligned(header: &[String], rows: &[Vec<String>]) {
    let mut w: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (k, c) in r.iter().enumerate() {
            if let Some(x) = w.get_mut(k) {
                *x = (*x).max(c.chars().count());
            }
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (k, c) in cells.iter().enumerate() {
            let pad = w
                .get(k)
                .copied()
                .unwrap_or(0)
                .saturating_sub(c.chars().count());
            s.push_str(c);
            if k + 1 < cells.len() {
                s.push_str(&" ".repeat(pad + 2));
            }
        }
        println!("{}", s.trim_end());
    };
    line(header);
    for r in rows {
        line(r);
    }
}

/// `journal list`.
pub fn runs(runs: &[RunSummary]) {
    if runs.is_empty() {
        println!("no runs (every `brownout run` keeps its journal here; `brownout journal import FILE` adds old ones)");
        return;
    }
    let header: Vec<String> = [
        "RUN",
        "STARTED",
        "STATUS",
        "DURATION",
        "MTTR",
        "BREACH",
        "EXPERIMENT",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            vec![
                r.run_id.clone(),
                utc(r.started_unix_ms),
                r.status.clone(),
                dur(r.duration_ms as f64),
                r.mttr_ms.map_or_else(|| "-".into(), dur),
                r.breach_gate.clone().unwrap_or_else(|| "-".into()),
                r.experiment.clone(),
            ]
        })
        .collect();
    aligned(&header, &rows);
}

/// `journal query`.
pub fn table(r: &QueryResult) {
    let rows: Vec<Vec<String>> = r
        .rows
        .iter()
        .map(|row| {
            row.iter()
                .map(|v| match v {
                    Value::Null => "NULL".into(),
                    Value::String(s) => s.clone(),
                    v => v.to_string(),
                })
                .collect()
        })
        .collect();
    aligned(&r.columns, &rows);
}

/// `journal trend`.
pub fn trend(t: &Trend) {
    println!("experiment: {}", t.experiment);
    println!(
        "runs: {}; pass rate: {}",
        t.runs.len(),
        t.pass_rate
            .map_or_else(|| "—".into(), |p| format!("{:.0} %", p * 100.0))
    );
    let header: Vec<String> = [
        "RUN",
        "STARTED",
        "STATUS",
        "MTTR",
        "STAGE P99",
        "STAGE ERRORS",
        "BASELINE P95",
        "MTTD",
        "PROBE MTTR",
        "ρ",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let opt = |x: Option<f64>| x.map_or_else(|| "-".into(), dur);
    let rows: Vec<Vec<String>> = t
        .runs
        .iter()
        .map(|r| {
            vec![
                r.run_id.clone(),
                utc(r.started_unix_ms),
                r.status.clone(),
                opt(r.mttr_ms),
                opt(r.stage_p99_ms),
                r.stage_error_rate
                    .map_or_else(|| "-".into(), |e| format!("{:.2}%", e * 100.0)),
                opt(r.baseline_p95_ms),
                opt(r.ttd_ms),
                opt(r.probe_ttr_ms),
                r.robustness
                    .map_or_else(|| "-".into(), |x| format!("{x:+.3}")),
            ]
        })
        .collect();
    aligned(&header, &rows);
    if t.drifts.is_empty() {
        println!("drift: none");
    }
    for d in &t.drifts {
        println!("DRIFT: {}", d.message);
    }
}
