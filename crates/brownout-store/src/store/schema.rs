//! The store's schema, versioned with `PRAGMA user_version`, and its migrations.
//!
//! Version 1: experiments, runs, the full journals, stages, gate summaries, gate
//! evaluations (status changes and the breach window), steady-state probe samples,
//! injections and the per-second SLI series. Version 2: labels (one row per label a run's
//! experiment carried, backfilled from the stored journals) and an index for trend queries.
//! Version 3: `runs.gameday_id` and the `gamedays` table (`brownout gameday`).
//! docs/journal.md describes every table; a migration runs in one transaction.

use rusqlite::{Connection, Transaction};

/// The version this brownout writes.
pub const VERSION: i64 = 3;

/// Version 1's tables.
pub const V1: &str = r#"
CREATE TABLE experiments (
    name TEXT PRIMARY KEY,              -- the experiment's title
    file TEXT NOT NULL,                 -- the file of its latest run
    first_unix_ms INTEGER NOT NULL,
    last_unix_ms INTEGER NOT NULL
);
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    experiment TEXT NOT NULL REFERENCES experiments(name),
    file TEXT NOT NULL,
    status TEXT NOT NULL,               -- completed|deviated|aborted|failed|interrupted|refused|not_run
    reason TEXT NOT NULL,
    started_unix_ms INTEGER NOT NULL,
    ended_unix_ms INTEGER NOT NULL,
    seed INTEGER,
    dry_run INTEGER NOT NULL,
    brownout_version TEXT,
    journal_version INTEGER,
    target_kind TEXT,
    target_url TEXT,
    steady_before_met INTEGER,          -- NULL: not checked
    steady_after_met INTEGER,
    baseline_error_rate REAL,
    baseline_p95_ms REAL,
    breach_gate TEXT,
    breach_at_ms REAL,
    breach_value REAL,
    breach_limit REAL,
    abort_latency_ms REAL,
    faults_left_ms REAL,
    mttr_ms REAL,
    recovered INTEGER,
    imported_unix_ms INTEGER NOT NULL
);
CREATE INDEX runs_started ON runs(started_unix_ms);
CREATE TABLE journals (
    run_id TEXT PRIMARY KEY REFERENCES runs(run_id),
    json TEXT NOT NULL                  -- the journal as brownout run wrote it
);
CREATE TABLE stages (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    idx INTEGER NOT NULL,
    stage TEXT NOT NULL,
    share REAL,
    start_ms REAL,
    end_ms REAL,
    completed INTEGER,
    calls INTEGER, errors INTEGER, error_rate REAL,
    p50_ms REAL, p95_ms REAL, p99_ms REAL,
    PRIMARY KEY (run_id, idx)
);
CREATE TABLE gates (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    idx INTEGER NOT NULL,
    gate TEXT NOT NULL,
    limit_value REAL,
    breached INTEGER,
    first_breach_ms REAL,
    breach_value REAL,
    worst REAL,
    breaches INTEGER,
    status TEXT,
    PRIMARY KEY (run_id, idx)
);
CREATE TABLE gate_evaluations (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    stage TEXT,                         -- NULL for the breach window
    kind TEXT NOT NULL,                 -- change|breach_window
    gate TEXT NOT NULL,
    status TEXT,
    value REAL,
    limit_value REAL,
    samples INTEGER,
    since_ms REAL
);
CREATE INDEX gate_evaluations_run ON gate_evaluations(run_id);
CREATE TABLE probe_samples (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    moment TEXT NOT NULL,               -- before|after
    probe_idx INTEGER NOT NULL,
    tool TEXT NOT NULL,
    sample_idx INTEGER NOT NULL,
    ok INTEGER NOT NULL,
    latency_ms REAL,
    error TEXT
);
CREATE INDEX probe_samples_run ON probe_samples(run_id);
CREATE TABLE probes (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    moment TEXT NOT NULL,
    probe_idx INTEGER NOT NULL,
    tool TEXT NOT NULL,
    met INTEGER,
    success_pct REAL,
    p50_ms REAL, p95_ms REAL, p99_ms REAL,
    PRIMARY KEY (run_id, moment, probe_idx)
);
CREATE TABLE injections (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    stage TEXT NOT NULL,
    fault TEXT NOT NULL,
    count INTEGER NOT NULL
);
CREATE INDEX injections_run ON injections(run_id);
CREATE TABLE series (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    t_ms REAL NOT NULL,
    phase TEXT,
    calls INTEGER, errors INTEGER, error_rate REAL,
    p50_ms REAL, p95_ms REAL, p99_ms REAL
);
CREATE INDEX series_run ON series(run_id, t_ms);
"#;

/// Version 2: labels and a trend index.
pub const V2: &str = r#"
CREATE TABLE labels (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
);
CREATE INDEX labels_key_value ON labels(key, value);
CREATE INDEX runs_experiment_started ON runs(experiment, started_unix_ms);
"#;

/// The columns of `table` as `ddl` creates it, in order (`journal export --format csv`).
pub fn columns(ddl: &str, table: &str) -> Vec<String> {
    let head = format!("CREATE TABLE {table} (");
    let Some(start) = ddl.find(&head).map(|i| i + head.len()) else {
        return Vec::new();
    };
    let body = &ddl[start..];
    let body = &body[..body.find("\n);").unwrap_or(body.len())];
    let mut out = Vec::new();
    for line in body.lines() {
        let code = line.split("--").next().unwrap_or("");
        let mut depth = 0i32;
        let mut part = String::new();
        for c in code.chars().chain([',']) {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                ',' if depth == 0 => {
                    let name = part.split_whitespace().next().unwrap_or("");
                    let constraint = ["PRIMARY", "FOREIGN", "UNIQUE", "CHECK", "CONSTRAINT"]
                        .contains(&name.to_ascii_uppercase().as_str());
                    if !name.is_empty() && !constraint {
                        out.push(name.to_string());
                    }
                    part.clear();
                    continue;
                }
                _ => {}
            }
            part.push(c);
        }
    }
    out
}

/// Version 3: GameDays (`brownout gameday`): their records, and the GameDay of each run.
pub const V3: &str = r#"
ALTER TABLE runs ADD COLUMN gameday_id TEXT;   -- NULL: not part of a GameDay
CREATE INDEX runs_gameday ON runs(gameday_id);
CREATE TABLE gamedays (
    gameday_id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    file TEXT NOT NULL,
    status TEXT NOT NULL,               -- completed|incomplete|refused|failed|interrupted
    reason TEXT NOT NULL,
    started_unix_ms INTEGER NOT NULL,
    ended_unix_ms INTEGER NOT NULL,
    score REAL NOT NULL,                -- 0–100 (docs/gameday.md#score)
    grade TEXT NOT NULL,                -- A–F
    json TEXT NOT NULL                  -- the GameDay's record
);
CREATE INDEX gamedays_title_started ON gamedays(title, started_unix_ms);
"#;

/// Bring a database to [`VERSION`] (a new one from nothing); the version it was at.
pub fn migrate(conn: &mut Connection) -> rusqlite::Result<i64> {
    migrate_to(conn, VERSION)
}

/// Bring a database to `target` (≤ [`VERSION`]); tests build version-1 stores with it.
pub fn migrate_to(conn: &mut Connection, target: i64) -> rusqlite::Result<i64> {
    // IMMEDIATE: the write lock first, then the version read under it, so two processes
    // opening a new store at once migrate it once (the second waits, then finds it done).
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let from: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let mut v = from;
    while v < target {
        match v {
            0 => tx.execute_batch(V1)?,
            1 => {
                tx.execute_batch(V2)?;
                backfill_labels(&tx)?;
            }
            2 => {
                tx.execute_batch(V3)?;
                backfill_gamedays(&tx)?;
            }
            _ => break,
        }
        v += 1;
        tx.pragma_update(None, "user_version", v)?;
    }
    tx.commit()?;
    Ok(from)
}

/// Version 2's labels, from the journals already stored.
fn backfill_labels(tx: &Transaction) -> rusqlite::Result<()> {
    let mut rows = Vec::new();
    {
        let mut st = tx.prepare("SELECT run_id, json FROM journals")?;
        let mut q = st.query([])?;
        while let Some(r) = q.next()? {
            let run: String = r.get(0)?;
            let json: String = r.get(1)?;
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&json) {
                for (k, val) in super::ingest::labels(&v) {
                    rows.push((run.clone(), k, val));
                }
            }
        }
    }
    let mut ins = tx.prepare("INSERT OR IGNORE INTO labels VALUES (?1, ?2, ?3)")?;
    for (r, k, v) in rows {
        ins.execute((r, k, v))?;
    }
    Ok(())
}

/// Version 3's `runs.gameday_id`, from the journals already stored.
fn backfill_gamedays(tx: &Transaction) -> rusqlite::Result<()> {
    tx.execute_batch(
        "UPDATE runs SET gameday_id = (SELECT json_extract(j.json, '$.gameday_id')
           FROM journals j WHERE j.run_id = runs.run_id)",
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn columns_are_read_from_the_ddl_in_order() {
        let runs = super::columns(super::V1, "runs");
        assert_eq!(runs.first().map(String::as_str), Some("run_id"));
        assert_eq!(runs.last().map(String::as_str), Some("imported_unix_ms"));
        assert_eq!(runs.len(), 26, "{runs:?}");
        let stages = super::columns(super::V1, "stages");
        assert!(stages.contains(&"p99_ms".to_string()) && !stages.contains(&"PRIMARY".to_string()));
    }

    #[test]
    fn a_new_store_opened_by_many_at_once_is_migrated_once() {
        let d = tempfile::tempdir().expect("tempdir");
        let path = d.path().join("s.sqlite");
        let opens: Vec<_> = (0..8)
            .map(|_| {
                let p = path.clone();
                std::thread::spawn(move || super::super::SqliteStore::open(&p).map(|s| s.version()))
            })
            .collect();
        for o in opens {
            let v = o.join().expect("thread");
            assert_eq!(
                v.ok(),
                Some(super::VERSION),
                "every open succeeds at the current version"
            );
        }
    }
}
