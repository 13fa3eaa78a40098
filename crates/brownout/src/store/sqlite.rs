//! The SQLite store: one file, created and migrated on open, written in one transaction
//! per imported run.

use super::{ingest, schema, ImportOutcome, ListFilter, RunSummary, Store, StoreError};
use rusqlite::{params_from_iter, Connection, OptionalExtension};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A store in one SQLite file.
pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
    version: i64,
}

impl SqliteStore {
    /// Open the store at `path`, creating its directory and the file, migrating it.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        Self::open_at_version(path, schema::VERSION)
    }

    /// Open and migrate only up to `version` (tests build old stores with it).
    #[doc(hidden)]
    pub fn open_at_version(path: &Path, version: i64) -> Result<SqliteStore, StoreError> {
        let shown = path.display().to_string();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Dir {
                path: dir.display().to_string(),
                source,
            })?;
        }
        let open_err = |source| StoreError::Open {
            path: shown.clone(),
            source,
        };
        let mut conn = Connection::open(path).map_err(open_err)?;
        conn.busy_timeout(Duration::from_secs(10))
            .map_err(open_err)?;
        // WAL: readers (journal query) never block a run writing its journal.
        let _: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(open_err)?;
        let found: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(open_err)?;
        if found > schema::VERSION {
            return Err(StoreError::TooNew {
                path: shown,
                found,
                known: schema::VERSION,
            });
        }
        schema::migrate_to(&mut conn, version).map_err(open_err)?;
        Ok(SqliteStore {
            conn,
            path: path.to_path_buf(),
            version: version.max(found),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open file.
    pub fn version(&self) -> i64 {
        self.version
    }

    /// The connection, for read-only helpers in this crate (trend queries, tests).
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// A run id from an id or a unique prefix of one.
    pub fn resolve(&self, run: &str) -> Result<String, StoreError> {
        let exact: Option<String> = self
            .conn
            .query_row("SELECT run_id FROM runs WHERE run_id = ?1", [run], |r| {
                r.get(0)
            })
            .optional()?;
        if let Some(id) = exact {
            return Ok(id);
        }
        let mut st = self
            .conn
            .prepare("SELECT run_id FROM runs WHERE substr(run_id, 1, length(?1)) = ?1 LIMIT 2")?;
        let ids: Vec<String> = st
            .query_map([run], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        match ids.len() {
            0 => Err(StoreError::NoSuchRun(run.into())),
            1 => Ok(ids.into_iter().next().unwrap_or_default()),
            n => Err(StoreError::Ambiguous {
                given: run.into(),
                count: n,
            }),
        }
    }
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

impl Store for SqliteStore {
    fn import(&mut self, journal: &Value) -> Result<ImportOutcome, StoreError> {
        ingest::check(journal)?;
        let id = ingest::run_id(journal);
        let tx = self.conn.transaction()?;
        let there: Option<i64> = tx
            .query_row("SELECT 1 FROM runs WHERE run_id = ?1", [&id], |r| r.get(0))
            .optional()?;
        if there.is_some() {
            return Ok(ImportOutcome {
                run_id: id,
                inserted: false,
            });
        }
        ingest::insert(&tx, journal, &id, self.version, now_ms())?;
        tx.commit()?;
        Ok(ImportOutcome {
            run_id: id,
            inserted: true,
        })
    }

    fn list(&self, filter: &ListFilter) -> Result<Vec<RunSummary>, StoreError> {
        let mut sql = String::from(
            "SELECT run_id, experiment, status, reason, started_unix_ms, \
             ended_unix_ms - started_unix_ms, mttr_ms, breach_gate, file FROM runs r WHERE 1=1",
        );
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        if let Some(e) = &filter.experiment {
            args.push(e.clone().into());
            sql.push_str(&format!(" AND experiment = ?{}", args.len()));
        }
        if let Some(s) = &filter.status {
            args.push(s.clone().into());
            sql.push_str(&format!(" AND status = ?{}", args.len()));
        }
        if let Some(t) = filter.since_unix_ms {
            args.push(t.into());
            sql.push_str(&format!(" AND started_unix_ms >= ?{}", args.len()));
        }
        if let Some((k, v)) = &filter.label {
            args.push(k.clone().into());
            args.push(v.clone().into());
            sql.push_str(&format!(
                " AND EXISTS (SELECT 1 FROM labels l WHERE l.run_id = r.run_id AND l.key = ?{} AND l.value = ?{})",
                args.len() - 1,
                args.len()
            ));
        }
        sql.push_str(" ORDER BY started_unix_ms DESC, run_id DESC");
        if let Some(n) = filter.limit {
            sql.push_str(&format!(" LIMIT {n}"));
        }
        let mut st = self.conn.prepare(&sql)?;
        let rows = st.query_map(params_from_iter(args), |r| {
            Ok(RunSummary {
                run_id: r.get(0)?,
                experiment: r.get(1)?,
                status: r.get(2)?,
                reason: r.get(3)?,
                started_unix_ms: r.get(4)?,
                duration_ms: r.get(5)?,
                mttr_ms: r.get(6)?,
                breach_gate: r.get(7)?,
                file: r.get(8)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn journal(&self, run: &str) -> Result<(String, Value), StoreError> {
        let id = self.resolve(run)?;
        let text: String =
            self.conn
                .query_row("SELECT json FROM journals WHERE run_id = ?1", [&id], |r| {
                    r.get(0)
                })?;
        let v = serde_json::from_str(&text).map_err(|source| StoreError::BadJson {
            run: id.clone(),
            source,
        })?;
        Ok((id, v))
    }

    fn each_journal(
        &self,
        each: &mut dyn FnMut(&str, &Value) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut st = self.conn.prepare(
            "SELECT j.run_id, j.json FROM journals j JOIN runs r USING (run_id) \
             ORDER BY r.started_unix_ms, r.run_id",
        )?;
        let mut q = st.query([])?;
        while let Some(r) = q.next()? {
            let id: String = r.get(0)?;
            let text: String = r.get(1)?;
            let v = serde_json::from_str(&text).map_err(|source| StoreError::BadJson {
                run: id.clone(),
                source,
            })?;
            each(&id, &v)?;
        }
        Ok(())
    }
}
