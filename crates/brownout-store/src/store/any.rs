//! [`AnyStore`]: the store a `--store` argument names, SQLite or PostgreSQL, behind one type
//! (what every command and the MCP server open with [`open`]).

use super::backend::Backend;
use super::dialect::Dialect;
use super::ingest::Insert;
use super::location::Location;
use super::readonly::{self, Limits, QueryError, QueryResult};
use super::val::Val;
use super::{pg, PgStore, SqliteStore, StoreError};
use std::path::Path;

/// A store of either kind.
pub enum AnyStore {
    Sqlite(SqliteStore),
    Postgres(PgStore),
}

/// Open (creating and migrating as needed) the store `path` names — a SQLite file or a
/// `postgres://` URL ([`Location::parse`]) — or, without one, `BROWNOUT_STORE` or the
/// default file.
pub fn open(path: Option<&Path>) -> Result<AnyStore, StoreError> {
    AnyStore::open(&Location::resolve(path)?)
}

impl AnyStore {
    pub fn open(at: &Location) -> Result<AnyStore, StoreError> {
        Ok(match at {
            Location::Sqlite(p) => AnyStore::Sqlite(SqliteStore::open(p)?),
            Location::Postgres(url) => AnyStore::Postgres(PgStore::open(url)?),
        })
    }

    /// Where it is, for messages (a URL's password redacted).
    pub fn shown(&self) -> String {
        match self {
            AnyStore::Sqlite(s) => s.path().display().to_string(),
            AnyStore::Postgres(s) => s.shown().to_string(),
        }
    }

    /// Run one read-only statement (`journal query`): SQLite's locks
    /// ([`readonly`]), or PostgreSQL's read-only transaction and reader role ([`pg::query`]).
    pub fn query(&self, sql: &str, limits: Limits) -> Result<QueryResult, QueryError> {
        match self {
            AnyStore::Sqlite(s) => readonly::query(s.path(), sql, limits),
            AnyStore::Postgres(s) => pg::query::query(s, sql, limits),
        }
    }

    /// Create the read-only role `journal query` runs as (PostgreSQL only).
    pub fn setup_reader(&self) -> Result<(), StoreError> {
        match self {
            AnyStore::Sqlite(_) => Err(StoreError::BadLocation(
                "setup-reader is for a PostgreSQL store: a SQLite file is opened read-only \
                 for queries and needs no role"
                    .into(),
            )),
            AnyStore::Postgres(s) => pg::query::setup_reader(s),
        }
    }
}

impl Backend for AnyStore {
    fn dialect(&self) -> Dialect {
        match self {
            AnyStore::Sqlite(s) => s.dialect(),
            AnyStore::Postgres(s) => s.dialect(),
        }
    }
    fn version(&self) -> i64 {
        match self {
            AnyStore::Sqlite(s) => Backend::version(s),
            AnyStore::Postgres(s) => s.version(),
        }
    }
    fn select(&self, sql: &str, args: &[Val]) -> Result<Vec<Vec<Val>>, StoreError> {
        match self {
            AnyStore::Sqlite(s) => s.select(sql, args),
            AnyStore::Postgres(s) => s.select(sql, args),
        }
    }
    fn write_run(&mut self, id: &str, rows: Vec<Insert>) -> Result<bool, StoreError> {
        match self {
            AnyStore::Sqlite(s) => s.write_run(id, rows),
            AnyStore::Postgres(s) => s.write_run(id, rows),
        }
    }
    fn replace(
        &mut self,
        table: &str,
        key: &str,
        id: &str,
        values: Vec<Val>,
    ) -> Result<(), StoreError> {
        match self {
            AnyStore::Sqlite(s) => s.replace(table, key, id, values),
            AnyStore::Postgres(s) => s.replace(table, key, id, values),
        }
    }
}
