//! `brownout journal query` is read-only, enforced by SQLite itself: every write form is
//! refused with the reason named, the store is unchanged, no file is created; a row limit
//! and a time limit bound what a query costs.

mod common;
#[path = "store_support/mod.rs"]
mod support;

use brownout::store::readonly::{query, Limits, QueryError};
use std::time::Duration;
use support::*;

fn counts(store: &std::path::Path) -> (i64, i64, i64) {
    let c = rusqlite::Connection::open(store).expect("open");
    let n = |sql: &str| c.query_row(sql, [], |r| r.get::<_, i64>(0)).expect(sql);
    (
        n("SELECT count(*) FROM runs"),
        n("SELECT count(*) FROM sqlite_master"),
        n("PRAGMA user_version"),
    )
}

#[test]
fn every_write_form_is_refused_with_a_reason_and_changes_nothing() {
    let dir = common::tmp();
    let store = store_with_both(dir.path());
    let before = counts(&store);
    let elsewhere = dir.path().join("copy.sqlite");
    let e = elsewhere.display().to_string();
    let cases: Vec<(String, &str)> = vec![
        ("INSERT INTO runs (run_id) VALUES ('x')".into(), "INSERT"),
        ("UPDATE runs SET status = 'completed'".into(), "UPDATE"),
        ("DELETE FROM runs".into(), "DELETE"),
        ("DROP TABLE runs".into(), "writes"),
        ("CREATE TABLE t (x)".into(), "writes"),
        ("ALTER TABLE runs ADD COLUMN x".into(), "writes"),
        (format!("ATTACH '{e}' AS other"), "ATTACH"),
        ("PRAGMA writable_schema = 1".into(), "writable_schema"),
        ("PRAGMA user_version = 7".into(), "user_version"),
        ("PRAGMA journal_mode = DELETE".into(), "journal_mode"),
        (format!("VACUUM INTO '{e}'"), "write"),
        ("BEGIN IMMEDIATE".into(), "transaction"),
        ("SELECT load_extension('x')".into(), "load_extension"),
        (
            "WITH x AS (SELECT 1) INSERT INTO labels SELECT 'a','b','c' FROM x".into(),
            "INSERT",
        ),
    ];
    for (sql, why) in &cases {
        match query(&store, sql, Limits::default()) {
            Err(QueryError::Denied(reason)) => {
                assert!(
                    reason.contains(why),
                    "{sql}: refused, but the reason {reason:?} does not name {why:?}"
                )
            }
            other => panic!("{sql}: expected a refusal, got {other:?}"),
        }
        assert_eq!(counts(&store), before, "{sql} changed the store");
        assert!(!elsewhere.exists(), "{sql} created a file");
    }
    // The command line says why and exits 2.
    let (code, _, err) = journal(&store, &["query", "DELETE FROM runs"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("refused") && err.contains("DELETE") && err.contains("read-only"),
        "{err}"
    );
    let (code, _, err) = journal(&store, &["query", &format!("VACUUM INTO '{e}'")]);
    assert_eq!(code, 2, "{err}");
    assert!(!elsewhere.exists());
    assert_eq!(counts(&store), before);
}

#[test]
fn reads_work_and_two_statements_are_not_one() {
    let dir = common::tmp();
    let store = store_with_both(dir.path());
    let r = query(
        &store,
        "SELECT r.status, count(s.t_ms) FROM runs r JOIN series s USING (run_id) GROUP BY 1 ORDER BY 1",
        Limits::default(),
    )
    .expect("a read");
    assert_eq!(r.columns, ["status", "count(s.t_ms)"]);
    assert_eq!(r.rows.len(), 2);
    assert_eq!(r.rows[0][0], "aborted");
    assert!(!r.truncated);
    let p = query(&store, "PRAGMA table_info(runs)", Limits::default()).expect("a reading pragma");
    assert!(p.rows.len() > 10);
    // A second statement after a read is not run (rusqlite prepares one statement).
    assert!(query(&store, "SELECT 1; DELETE FROM runs", Limits::default()).is_err());
    assert_eq!(counts(&store).0, 2);
}

#[test]
fn a_row_limit_cuts_and_a_time_limit_stops_a_runaway_query() {
    let dir = common::tmp();
    let store = store_with_both(dir.path());
    let r = query(
        &store,
        "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n LIMIT 500) SELECT x FROM n",
        Limits {
            max_rows: 100,
            timeout: Duration::from_secs(30),
            ..Limits::default()
        },
    )
    .expect("cut, not failed");
    assert_eq!(r.rows.len(), 100);
    assert!(r.truncated);
    let started = std::time::Instant::now();
    let e = query(
        &store,
        "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n",
        Limits {
            max_rows: 10,
            timeout: Duration::from_millis(300),
            ..Limits::default()
        },
    );
    assert!(matches!(e, Err(QueryError::Timeout(_))), "{e:?}");
    // Generous: the handler checks the clock every 1,000 VM steps.
    assert!(started.elapsed() < Duration::from_secs(20));
    let (code, _, err) = journal(
        &store,
        &["query", "--timeout", "0.2", "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n"],
    );
    assert_eq!(code, 2);
    assert!(err.contains("longer than"), "{err}");
}
