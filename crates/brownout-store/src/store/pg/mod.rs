//! The PostgreSQL store (`--store postgres://…`): the same tables as the SQLite file
//! ([`super::schema`], rewritten by [`super::dialect`]), a team's history in one database
//! that several runners write at once.
//!
//! - one connection per open store, on a thread of its own: the `postgres` client runs its
//!   own small async runtime, which must not be started inside the relay's or the MCP
//!   server's; callers block on it as they do on SQLite;
//! - the schema version in a table `brownout_schema`, migrations under an advisory lock (two
//!   runners opening a new database at once migrate it once);
//! - a run's rows in one transaction; a run id already there is skipped;
//! - [`query`]: `journal query`, in a read-only transaction as the role `brownout_reader`.
//!
//! The URL's password is never printed: errors name the store by [`super::redact`]ed URL.

pub mod query;

use super::backend::Backend;
use super::dialect::{Conflict, Dialect};
use super::ingest::Insert;
use super::val::Val;
use super::{schema, StoreError};
use postgres::{Client, Config, NoTls};
use std::collections::HashMap;
use std::str::FromStr;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The advisory lock key migrations hold (any constant: "brownout" in ASCII, cut to 63 bits).
const MIGRATION_LOCK: i64 = 0x62_726f_776e_6f75;

type Job = Box<dyn FnOnce(&mut Client) + Send>;

/// A store in a PostgreSQL database.
pub struct PgStore {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
    /// The URL, password redacted.
    shown: String,
    version: i64,
}

/// A PostgreSQL error as the store reports it (the message and, from the server, its
/// detail; never the URL, so never a password).
pub fn pg_error(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(d) => match d.detail() {
            Some(detail) => format!("{}: {} ({detail})", d.severity(), d.message()),
            None => format!("{}: {}", d.severity(), d.message()),
        },
        None => e.to_string(),
    }
}

impl PgStore {
    /// Connect to `url`, creating and migrating the schema.
    pub fn open(url: &str) -> Result<PgStore, StoreError> {
        Self::open_at_version(url, schema::VERSION)
    }

    /// Connect and migrate only up to `version` (tests).
    #[doc(hidden)]
    pub fn open_at_version(url: &str, version: i64) -> Result<PgStore, StoreError> {
        let shown = super::redact(url);
        let connect_err = |message: String| StoreError::Connect {
            store: shown.clone(),
            message,
        };
        let mut config = Config::from_str(url)
            .map_err(|e| connect_err(format!("not a PostgreSQL URL: {}", pg_error(&e))))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        if config.get_application_name().is_none() {
            config.application_name("brownout");
        }
        let (jobs, rx) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("brownout-pg".into())
            .spawn(move || {
                let mut client = match config.connect(NoTls) {
                    Ok(c) => {
                        let _ = ready_tx.send(Ok(()));
                        c
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(pg_error(&e)));
                        return;
                    }
                };
                while let Ok(job) = rx.recv() {
                    job(&mut client);
                }
            })
            .map_err(|e| connect_err(format!("cannot start its thread: {e}")))?;
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(m)) => return Err(connect_err(m)),
            Err(_) => return Err(connect_err("the connection's thread stopped".into())),
        }
        let mut s = PgStore {
            jobs: Some(jobs),
            thread: Some(thread),
            shown: shown.clone(),
            version: 0,
        };
        let found = s.call(move |c| migrate(c, version))?;
        let found = found.map_err(|e| match e {
            Migrate::TooNew(found) => StoreError::TooNew {
                path: shown.clone(),
                found,
                known: schema::VERSION,
            },
            Migrate::Pg(m) => connect_err(format!("cannot create or migrate the schema: {m}")),
        })?;
        s.version = version.max(found);
        Ok(s)
    }

    /// The URL, password redacted.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Run `f` with the connection on its thread; its result.
    pub fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Client) -> T + Send + 'static,
    ) -> Result<T, StoreError> {
        let (tx, rx) = mpsc::sync_channel(1);
        let gone = || StoreError::Pg(format!("{}: the connection's thread stopped", self.shown));
        self.jobs
            .as_ref()
            .ok_or_else(gone)?
            .send(Box::new(move |c| {
                let _ = tx.send(f(c));
            }))
            .map_err(|_| gone())?;
        rx.recv().map_err(|_| gone())
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        // Closing the channel ends the thread, which closes the connection.
        self.jobs.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

enum Migrate {
    TooNew(i64),
    Pg(String),
}

/// Bring the database to `target`; the version it was at.
fn migrate(c: &mut Client, target: i64) -> Result<i64, Migrate> {
    let pg = |e: postgres::Error| Migrate::Pg(pg_error(&e));
    let mut tx = c.transaction().map_err(pg)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(pg)?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS brownout_schema (version BIGINT NOT NULL)")
        .map_err(pg)?;
    let from: i64 = tx
        .query_opt("SELECT max(version) FROM brownout_schema", &[])
        .map_err(pg)?
        .and_then(|r| r.get::<_, Option<i64>>(0))
        .unwrap_or(0);
    if from > schema::VERSION {
        return Err(Migrate::TooNew(from));
    }
    let mut v = from;
    while v < target {
        // A PostgreSQL store starts at version 2: version 1's label backfill has nothing
        // to fill there.
        let ddl = match v {
            0 => schema::V1,
            1 => schema::V2,
            2 => schema::V3,
            _ => break,
        };
        tx.batch_execute(&Dialect::Postgres.ddl(ddl)).map_err(pg)?;
        v += 1;
    }
    if v != from {
        tx.execute("DELETE FROM brownout_schema", &[]).map_err(pg)?;
        tx.execute("INSERT INTO brownout_schema VALUES ($1)", &[&v])
            .map_err(pg)?;
    }
    tx.commit().map_err(pg)?;
    Ok(from)
}

impl Backend for PgStore {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn version(&self) -> i64 {
        self.version
    }

    fn select(&self, sql: &str, args: &[Val]) -> Result<Vec<Vec<Val>>, StoreError> {
        let sql = Dialect::Postgres.sql(sql).into_owned();
        let args = args.to_vec();
        self.call(move |c| -> Result<Vec<Vec<Val>>, postgres::Error> {
            let rows = c.query(sql.as_str(), &params(&args))?;
            rows.iter()
                .map(|r| (0..r.len()).map(|k| r.try_get::<_, Val>(k)).collect())
                .collect::<Result<Vec<Vec<Val>>, postgres::Error>>()
        })?
        .map_err(|e| StoreError::Pg(pg_error(&e)))
    }

    fn replace(
        &mut self,
        table: &str,
        key: &str,
        id: &str,
        values: Vec<Val>,
    ) -> Result<(), StoreError> {
        let delete = format!("DELETE FROM {table} WHERE {key} = $1");
        let insert = Dialect::Postgres.insert(table, values.len(), Conflict::Fail);
        let id = id.to_string();
        self.call(move |c| -> Result<(), postgres::Error> {
            let mut tx = c.transaction()?;
            tx.execute(delete.as_str(), &[&id])?;
            tx.execute(insert.as_str(), &params(&values))?;
            tx.commit()
        })?
        .map_err(|e| StoreError::Pg(pg_error(&e)))
    }

    fn write_run(&mut self, _id: &str, rows: Vec<Insert>) -> Result<bool, StoreError> {
        // The run id is in the `runs` row: its ON CONFLICT tells whether it was there.
        self.call(move |c| -> Result<bool, postgres::Error> {
            let mut tx = c.transaction()?;
            // Two runners importing the same run at once: the second waits on the first's
            // row, then finds it there (ON CONFLICT), inserts nothing and rolls back.
            let mut prepared: HashMap<String, postgres::Statement> = HashMap::new();
            for row in &rows {
                let mut sql = Dialect::Postgres.insert(row.table, row.values.len(), row.conflict);
                let is_run = row.table == "runs";
                if is_run {
                    sql.push_str(" ON CONFLICT (run_id) DO NOTHING");
                }
                let st = match prepared.get(&sql) {
                    Some(st) => st.clone(),
                    None => {
                        let st = tx.prepare(&sql)?;
                        prepared.insert(sql, st.clone());
                        st
                    }
                };
                let n = tx.execute(&st, &params(&row.values))?;
                if is_run && n == 0 {
                    return Ok(false);
                }
            }
            tx.commit()?;
            Ok(true)
        })?
        .map_err(|e| StoreError::Pg(pg_error(&e)))
    }
}

fn params(v: &[Val]) -> Vec<&(dyn postgres::types::ToSql + Sync)> {
    v.iter()
        .map(|a| a as &(dyn postgres::types::ToSql + Sync))
        .collect()
}
