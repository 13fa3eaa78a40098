//! The journal store: idempotent import, list filters, export and re-import, a migration
//! from schema version 1, and a live round trip (`brownout run` → store → report).

mod common;
#[path = "store_support/mod.rs"]
mod support;

use brownout::store::{schema, SqliteStore, Store};
use serde_json::Value;
use support::*;

#[test]
fn importing_the_same_journals_twice_keeps_each_run_once() {
    let dir = common::tmp();
    let store = store_with_both(dir.path());
    let again = journal_json(
        &store,
        &[
            "import",
            "--json",
            &completed().display().to_string(),
            &aborted().display().to_string(),
        ],
    );
    let inserted: Vec<bool> = again
        .as_array()
        .expect("array")
        .iter()
        .map(|x| x["inserted"].as_bool().expect("inserted"))
        .collect();
    assert_eq!(inserted, [false, false], "{again}");
    let runs = journal_json(&store, &["list", "--json"]);
    assert_eq!(runs.as_array().map(Vec::len), Some(2), "{runs}");
    let q = journal_json(&store, &["query", "--json", "SELECT count(*) FROM series"]);
    let series = read_json(&completed())["series"]
        .as_array()
        .map_or(0, Vec::len)
        + read_json(&aborted())["series"]
            .as_array()
            .map_or(0, Vec::len);
    assert_eq!(
        q["rows"][0][0], series as u64,
        "series rows are not duplicated"
    );
}

#[test]
fn list_filters_by_experiment_status_label_and_since() {
    let dir = common::tmp();
    let store = store_with_both(dir.path());
    let one = |args: &[&str]| -> Vec<String> {
        let mut a = vec!["list", "--json"];
        a.extend_from_slice(args);
        journal_json(&store, &a)
            .as_array()
            .expect("array")
            .iter()
            .map(|r| r["status"].as_str().expect("status").to_string())
            .collect()
    };
    assert_eq!(one(&["--status", "aborted"]), ["aborted"]);
    assert_eq!(
        one(&["--experiment", "a green test experiment"]),
        ["completed"]
    );
    assert_eq!(one(&["--label", "service=incidents"]), ["completed"]);
    assert_eq!(one(&["--label", "env=staging"]).len(), 2);
    assert!(one(&["--since", "2100-01-01"]).is_empty());
    assert_eq!(one(&["--since", "2020-01-01T00:00:00Z"]).len(), 2);
    let (code, _, err) = journal(&store, &["list", "--label", "env"]);
    assert_eq!(code, 2);
    assert!(err.contains("KEY=VALUE"), "{err}");
    let (code, _, err) = journal(&store, &["list", "--since", "yesterday"]);
    assert_eq!(code, 2);
    assert!(err.contains("--since"), "{err}");
}

#[test]
fn show_and_report_find_a_run_by_a_prefix_of_its_id() {
    let dir = common::tmp();
    let store = store_with_both(dir.path());
    let runs = journal_json(&store, &["list", "--json", "--status", "aborted"]);
    let id = runs[0]["run_id"].as_str().expect("id").to_string();
    let shown = journal_json(&store, &["show", &id[..20], "--json"]);
    assert_eq!(
        shown,
        read_json(&aborted()),
        "the stored journal is the file's"
    );
    let (code, md, err) = journal(&store, &["show", &id]);
    assert_eq!(code, 0, "{err}");
    assert!(
        md.starts_with("# ✗ FAILED — aborted by an SLO gate"),
        "{md}"
    );
    let (code, _, err) = journal(&store, &["show", "19990101"]);
    assert_eq!(code, 2);
    assert!(err.contains("no run"), "{err}");
}

#[test]
fn export_writes_json_lines_that_import_back_and_a_csv_of_runs() {
    let dir = common::tmp();
    let store = store_with_both(dir.path());
    let lines = dir.path().join("all.jsonl");
    let (code, _, err) = journal(
        &store,
        &[
            "export",
            "--format",
            "jsonl",
            "-o",
            &lines.display().to_string(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&lines).expect("export");
    let docs: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a journal per line"))
        .collect();
    assert_eq!(docs.len(), 2);
    // Each line, as a file, imports into another store with the same run id.
    let other = dir.path().join("other/journal.sqlite");
    for (k, d) in docs.iter().enumerate() {
        let f = dir.path().join(format!("{k}.json"));
        std::fs::write(&f, d.to_string()).expect("write");
        journal_json(&other, &["import", "--json", &f.display().to_string()]);
    }
    let ids = |s: &std::path::Path| -> Vec<Value> {
        journal_json(s, &["list", "--json"])
            .as_array()
            .expect("a")
            .iter()
            .map(|r| r["run_id"].clone())
            .collect()
    };
    assert_eq!(ids(&store), ids(&other));
    // The export file itself imports (a .jsonl holds a journal per line), adding nothing new.
    let third = dir.path().join("third/journal.sqlite");
    let first = journal_json(&third, &["import", "--json", &lines.display().to_string()]);
    assert_eq!(first.as_array().map(Vec::len), Some(2), "{first}");
    assert_eq!(ids(&store), ids(&third));
    let again = journal_json(&other, &["import", "--json", &lines.display().to_string()]);
    assert!(
        again
            .as_array()
            .expect("a")
            .iter()
            .all(|x| x["inserted"] == false),
        "{again}"
    );
    let (code, csv_text, err) = journal(&store, &["export", "--format", "csv"]);
    assert_eq!(code, 0, "{err}");
    let mut r = csv::Reader::from_reader(csv_text.as_bytes());
    let headers = r.headers().expect("headers").clone();
    assert!(headers.iter().any(|h| h == "mttr_ms"), "{headers:?}");
    let status = headers
        .iter()
        .position(|h| h == "status")
        .expect("status column");
    let mut statuses: Vec<String> = r
        .records()
        .map(|x| x.expect("row")[status].to_string())
        .collect();
    statuses.sort();
    assert_eq!(statuses, ["aborted", "completed"]);
}

#[test]
fn a_file_that_is_not_a_journal_is_refused_and_the_rest_imported() {
    let dir = common::tmp();
    let store = dir.path().join("journal.sqlite");
    let bad = dir.path().join("plan.json");
    std::fs::write(&bad, r#"{"faults": []}"#).expect("write");
    let (code, out, err) = journal(
        &store,
        &[
            "import",
            &bad.display().to_string(),
            &completed().display().to_string(),
        ],
    );
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("plan.json") && err.contains("no `status` key"),
        "{err}"
    );
    assert!(out.contains("imported"), "{out}");
}

#[test]
fn a_version_1_store_migrates_to_the_current_version_with_its_runs() {
    let dir = common::tmp();
    let path = dir.path().join("old.sqlite");
    {
        let mut old = SqliteStore::open_at_version(&path, 1).expect("v1 store");
        assert_eq!(old.version(), 1);
        old.import(&read_json(&completed()))
            .expect("import into v1");
        let labels: i64 = old
            .connection()
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name = 'labels'",
                [],
                |r| r.get(0),
            )
            .expect("query");
        assert_eq!(labels, 0, "version 1 has no labels table");
    }
    let s = SqliteStore::open(&path).expect("migrate");
    assert_eq!(s.version(), schema::VERSION);
    let v: i64 = s
        .connection()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .expect("version");
    assert_eq!(v, schema::VERSION);
    let backfilled: Vec<(String, String)> = {
        let mut st = s
            .connection()
            .prepare("SELECT key, value FROM labels ORDER BY key")
            .expect("prepare");
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("q")
            .map(|x| x.expect("row"))
            .collect()
    };
    assert_eq!(
        backfilled,
        [
            ("env".to_string(), "staging".to_string()),
            ("service".into(), "incidents".into())
        ]
    );
    drop(s);
    // The migrated store works for the commands: a label filter, a new import.
    let runs = journal_json(&path, &["list", "--json", "--label", "env=staging"]);
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
    journal_json(
        &path,
        &["import", "--json", &aborted().display().to_string()],
    );
    assert_eq!(
        journal_json(&path, &["list", "--json", "--label", "env=staging"])
            .as_array()
            .map(Vec::len),
        Some(2)
    );
}

#[test]
fn a_store_newer_than_brownout_is_refused_not_damaged() {
    let dir = common::tmp();
    let path = dir.path().join("new.sqlite");
    {
        let c = rusqlite::Connection::open(&path).expect("open");
        c.pragma_update(None, "user_version", 99).expect("version");
    }
    let (code, _, err) = journal(&path, &["list"]);
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("newer"), "{err}");
}

/// A history of `mttrs.len()` completed runs of the green experiment, a minute apart, with
/// these MTTRs, and one aborted run.
fn history(dir: &std::path::Path, mttrs: &[f64]) -> std::path::PathBuf {
    let store = dir.join("journal.sqlite");
    let base = read_json(&completed());
    let start = base["started_unix_ms"].as_u64().expect("start");
    let mut files = Vec::new();
    for (k, m) in mttrs.iter().enumerate() {
        let mut j = base.clone();
        j["started_unix_ms"] = (start + 60_000 * k as u64).into();
        j["ended_unix_ms"] = (start + 60_000 * k as u64 + 6_000).into();
        j["recovery"]["mttr_ms"] = (*m).into();
        let f = dir.join(format!("run-{k}.json"));
        std::fs::write(&f, j.to_string()).expect("write");
        files.push(f.display().to_string());
    }
    let mut bad = read_json(&aborted());
    bad["experiment"]["title"] = base["experiment"]["title"].clone();
    let f = dir.join("aborted.json");
    std::fs::write(&f, bad.to_string()).expect("write");
    files.push(f.display().to_string());
    let mut args = vec!["import"];
    args.extend(files.iter().map(String::as_str));
    let (code, _, err) = journal(&store, &args);
    assert_eq!(code, 0, "{err}");
    store
}

#[test]
fn trend_flags_an_mttr_rising_over_passing_runs() {
    let dir = common::tmp();
    let store = history(
        dir.path(),
        &[100.0, 105.0, 98.0, 120.0, 180.0, 260.0, 330.0, 400.0],
    );
    let t = journal_json(&store, &["trend", "a green test experiment", "--json"]);
    assert_eq!(t["runs"].as_array().map(Vec::len), Some(9), "{t}");
    let rate = t["pass_rate"].as_f64().expect("pass rate");
    assert!((rate - 8.0 / 9.0).abs() < 1e-9, "{rate}");
    let drifts = t["drifts"].as_array().expect("drifts");
    assert_eq!(drifts.len(), 1, "{t}");
    assert_eq!(drifts[0]["metric"], "mttr_ms");
    assert!(drifts[0]["later"].as_f64() > drifts[0]["earlier"].as_f64());
    let (code, out, _) = journal(
        &store,
        &["trend", "a green test experiment", "--fail-on-drift"],
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("DRIFT: mttr_ms rising"), "{out}");
    assert!(out.contains("pass rate: 89 %"), "{out}");
}

/// The probes' time to detect rising over passing runs (a monitor going blind release after
/// release) is a drift too, read from the kept journals; ρ is in every row.
#[test]
fn trend_flags_a_time_to_detect_rising_and_shows_robustness() {
    let dir = common::tmp();
    let store = history(dir.path(), &[100.0, 104.0, 97.0, 101.0, 99.0, 103.0, 98.0]);
    // Add runs whose probes took longer and longer to see the faults.
    let base = read_json(&completed());
    let mut files = Vec::new();
    for (k, ttd) in [200.0, 210.0, 190.0, 400.0, 600.0, 800.0]
        .iter()
        .enumerate()
    {
        let mut j = base.clone();
        // An hour after the history: these are the latest runs.
        let at = base["started_unix_ms"].as_u64().expect("start") + 3_600_000 + 60_000 * k as u64;
        j["started_unix_ms"] = at.into();
        j["ended_unix_ms"] = (at + 6_000).into();
        j["recovery"]["mttr_ms"] = 100.0.into();
        j["robustness"] = 0.5.into();
        j["detection"] = serde_json::json!({"ttd_ms": ttd, "ttr_ms": 300.0});
        let f = dir.path().join(format!("probe-{k}.json"));
        std::fs::write(&f, j.to_string()).expect("write");
        files.push(f.display().to_string());
    }
    let mut args = vec!["import"];
    args.extend(files.iter().map(String::as_str));
    let (code, _, err) = journal(&store, &args);
    assert_eq!(code, 0, "{err}");
    let t = journal_json(&store, &["trend", "a green test experiment", "--json"]);
    let drifts: Vec<&str> = t["drifts"]
        .as_array()
        .expect("drifts")
        .iter()
        .filter_map(|d| d["metric"].as_str())
        .collect();
    assert!(drifts.contains(&"ttd_ms"), "{t:#}");
    let last = t["runs"].as_array().and_then(|r| r.last()).expect("a run");
    assert_eq!(last["ttd_ms"], 800.0, "{last}");
    assert_eq!(last["robustness"], 0.5, "{last}");
    let (_, out, _) = journal(&store, &["trend", "a green test experiment"]);
    assert!(out.contains("MTTD") && out.contains("+0.500"), "{out}");
}

#[test]
fn trend_of_a_steady_history_finds_no_drift() {
    let dir = common::tmp();
    let store = history(dir.path(), &[100.0, 104.0, 97.0, 101.0, 99.0, 103.0, 98.0]);
    let (code, out, err) = journal(
        &store,
        &["trend", "a green test experiment", "--fail-on-drift"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("drift: none"), "{out}");
    let (code, _, err) = journal(&store, &["trend", "no such experiment"]);
    assert_eq!(code, 2);
    assert!(err.contains("no runs"), "{err}");
}

#[test]
fn evidence_lists_runs_per_compliance_tag_and_the_tags_without_recent_runs() {
    let dir = common::tmp();
    let store = dir.path().join("journal.sqlite");
    let mut recent = read_json(&completed());
    recent["experiment"]["compliance"] = serde_json::json!(["DORA:Art.25", "NIS2:Art.21(2)(c)"]);
    let mut old = read_json(&aborted());
    old["experiment"]["compliance"] = serde_json::json!(["DORA:Art.25", "ISO-22301:8.5"]);
    old["started_unix_ms"] = 1_577_836_800_000_u64.into(); // 2020-01-01
    let mut files = Vec::new();
    for (k, j) in [recent, old].iter().enumerate() {
        let f = dir.path().join(format!("{k}.json"));
        std::fs::write(&f, j.to_string()).expect("write");
        files.push(f.display().to_string());
    }
    let (code, _, err) = journal(&store, &["import", &files[0], &files[1]]);
    assert_eq!(code, 0, "{err}");
    let ev = journal_json(&store, &["evidence", "--since", "2025-01-01", "--json"]);
    let tag = |t: &str| {
        ev.as_array()
            .expect("a")
            .iter()
            .find(|x| x["tag"] == t)
            .cloned()
            .unwrap_or_else(|| panic!("no {t}: {ev}"))
    };
    assert_eq!(
        tag("DORA:Art.25")["runs"].as_array().map(Vec::len),
        Some(1),
        "the 2020 run is before the date"
    );
    assert_eq!(tag("DORA:Art.25")["gap"], false);
    assert_eq!(tag("NIS2:Art.21(2)(c)")["runs"][0]["status"], "completed");
    assert_eq!(tag("ISO-22301:8.5")["gap"], true);
    let (code, md, err) = journal(&store, &["evidence", "--since", "2025-01-01"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        md.contains("## Gaps") && md.contains("`ISO-22301:8.5`"),
        "{md}"
    );
    let page = dir.path().join("e.html");
    let (code, _, err) = journal(
        &store,
        &[
            "evidence",
            "--since",
            "2025-01-01",
            "--format",
            "html",
            "-o",
            &page.display().to_string(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(&page).expect("page");
    assert!(
        html.contains("<table>") && html.contains("ISO-22301:8.5"),
        "{html}"
    );
}

#[test]
fn a_compliance_tag_that_breaks_the_pattern_is_refused_with_its_place() {
    let dir = common::tmp();
    let green = std::fs::read_to_string(common::repo().join("examples/experiments/green.yaml"))
        .expect("example");
    let f = dir.path().join("exp.yaml");
    std::fs::write(
        &f,
        format!("compliance: [DORA:Art.25, DORA Art 25]\n{green}"),
    )
    .expect("write");
    let out = std::process::Command::new(common::brownout())
        .args(["experiment", "check"])
        .arg(&f)
        .current_dir(common::repo().join("examples/experiments"))
        .output()
        .expect("check");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("exp.yaml:1:") && err.contains("compliance[1]"),
        "{err}"
    );
}
