//! The SQLite store: one file, created and migrated on open, written in one transaction
//! per imported run.

use super::backend::{self, Backend};
use super::dialect::{Conflict, Dialect};
use super::ingest::Insert;
use super::val::Val;
use super::{schema, StoreError};
use rusqlite::{params_from_iter, Connection, OptionalExtension};
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

    /// The connection, for read-only helpers in this crate (trend queries, tests).
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// The schema version of the open file.
    pub fn version(&self) -> i64 {
        self.version
    }

    /// A run id from an id or a unique prefix of one.
    pub fn resolve(&self, run: &str) -> Result<String, StoreError> {
        backend::resolve(self, run)
    }
}

impl Backend for SqliteStore {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn version(&self) -> i64 {
        self.version
    }

    fn select(&self, sql: &str, args: &[Val]) -> Result<Vec<Vec<Val>>, StoreError> {
        let mut st = self.conn.prepare_cached(sql)?;
        let n = st.column_count();
        let mut q = st.query(params_from_iter(args))?;
        let mut rows = Vec::new();
        while let Some(r) = q.next()? {
            rows.push(
                (0..n)
                    .map(|k| r.get_ref(k).map(Val::from))
                    .collect::<Result<_, _>>()?,
            );
        }
        Ok(rows)
    }

    fn replace(
        &mut self,
        table: &str,
        key: &str,
        id: &str,
        values: Vec<Val>,
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        tx.execute(&format!("DELETE FROM {table} WHERE {key} = ?1"), [id])?;
        let sql = Dialect::Sqlite.insert(table, values.len(), Conflict::Fail);
        tx.execute(&sql, params_from_iter(&values))?;
        tx.commit()?;
        Ok(())
    }

    fn write_run(&mut self, id: &str, rows: Vec<Insert>) -> Result<bool, StoreError> {
        let tx = self.conn.transaction()?;
        let there: Option<i64> = tx
            .query_row("SELECT 1 FROM runs WHERE run_id = ?1", [id], |r| r.get(0))
            .optional()?;
        if there.is_some() {
            return Ok(false);
        }
        for row in &rows {
            let sql = Dialect::Sqlite.insert(row.table, row.values.len(), row.conflict);
            tx.prepare_cached(&sql)?
                .execute(params_from_iter(&row.values))?;
        }
        tx.commit()?;
        Ok(true)
    }
}
