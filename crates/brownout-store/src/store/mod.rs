//! The journal store: every run's journal kept in a database, queryable — one embedded
//! SQLite file by default, or a team's PostgreSQL database (`--store postgres://…`).
//!
//! - [`Store`]: the small interface the runner and `brownout journal` use;
//! - [`location`]: what a `--store` argument names (a path or a URL, never guessed);
//! - [`backend`]: what a database provides, and [`Store`] written once on top of it;
//! - [`sqlite`] and [`pg`]: the two backends ([`AnyStore`] is either, [`open`] picks);
//! - [`schema`]: the versioned schema and its migrations (`PRAGMA user_version`);
//! - [`dialect`]: every difference between the two SQLs, in one place;
//! - [`ingest`]: a journal (as JSON, not the runner's Rust types) into rows ([`val`]);
//! - [`readonly`]: `journal query`, read-only as SQLite itself enforces it ([`pg::query`]
//!   for PostgreSQL);
//! - [`trend`]: pass rate, MTTR and key SLIs across runs, and drift flags;
//! - [`evidence`]: runs per compliance tag since a date, and the gaps;
//!
//! The store reads journals as `serde_json::Value` and picks the fields it indexes, so a
//! journal that gains keys still imports; the whole JSON is kept beside the rows.

pub mod any;
pub mod backend;
pub mod dialect;
pub mod evidence;
pub mod ingest;
pub mod location;
pub mod pg;
pub mod readonly;
pub mod schema;
pub mod sqlite;
pub mod trend;
pub mod val;

use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

pub use any::{open, AnyStore};
pub use backend::Backend;
pub use location::{redact, Location};
pub use pg::PgStore;
pub use sqlite::SqliteStore;

/// What can go wrong with the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the store {path}: {source}")]
    Open {
        path: String,
        source: rusqlite::Error,
    },
    #[error("the store {path} has schema version {found}, newer than this brownout knows ({known}); upgrade brownout")]
    TooNew {
        path: String,
        found: i64,
        known: i64,
    },
    #[error("{0}")]
    Sql(#[from] rusqlite::Error),
    #[error("not a journal: {0}")]
    NotAJournal(String),
    #[error("no run {0:?} in the store (see `brownout journal list`)")]
    NoSuchRun(String),
    #[error("run id {given:?} matches {count} runs; give more of it")]
    Ambiguous { given: String, count: usize },
    #[error("cannot create the store's directory {path}: {source}")]
    Dir {
        path: String,
        source: std::io::Error,
    },
    #[error("the stored journal of {run} is not JSON: {source}")]
    BadJson {
        run: String,
        source: serde_json::Error,
    },
    #[error(transparent)]
    Query(#[from] readonly::QueryError),
    #[error("--store: {0}")]
    BadLocation(String),
    /// A PostgreSQL store could not be reached or set up (`store` is the redacted URL).
    #[error("the store {store}: {message}")]
    Connect { store: String, message: String },
    /// A PostgreSQL error (its message, never the URL).
    #[error("{0}")]
    Pg(String),
}

/// Whether an import added a run or found it there already.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportOutcome {
    pub run_id: String,
    /// False when the run was already in the store (nothing changed).
    pub inserted: bool,
}

/// One run, as `journal list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    pub run_id: String,
    pub experiment: String,
    pub status: String,
    pub reason: String,
    pub started_unix_ms: i64,
    pub duration_ms: i64,
    pub mttr_ms: Option<f64>,
    pub breach_gate: Option<String>,
    pub file: String,
}

/// Filters of `journal list` (all optional, all must hold).
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    /// The experiment's title (exact).
    pub experiment: Option<String>,
    pub status: Option<String>,
    /// `key=value`: a label the experiment carried.
    pub label: Option<(String, String)>,
    /// Runs started at or after this time (Unix ms).
    pub since_unix_ms: Option<i64>,
    /// At most this many, newest first.
    pub limit: Option<u64>,
}

/// The store's interface: what the runner and the commands need, nothing SQLite-specific.
pub trait Store {
    /// Keep a journal; the same run (same run id) twice is kept once.
    fn import(&mut self, journal: &Value) -> Result<ImportOutcome, StoreError>;
    /// Runs matching a filter, newest first.
    fn list(&self, filter: &ListFilter) -> Result<Vec<RunSummary>, StoreError>;
    /// A run's full journal, by its id or a unique prefix of it.
    fn journal(&self, run: &str) -> Result<(String, Value), StoreError>;
    /// Every journal, oldest first, to `each` (for `journal export`).
    fn each_journal(
        &self,
        each: &mut dyn FnMut(&str, &Value) -> Result<(), StoreError>,
    ) -> Result<(), StoreError>;
}

/// The store named by `BROWNOUT_STORE` (a path or a URL), else [`default_sqlite_path`]
/// (see docs/journal.md).
pub fn default_path() -> PathBuf {
    if let Some(p) = std::env::var_os("BROWNOUT_STORE").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    default_sqlite_path()
}

/// `$XDG_DATA_HOME/brownout/journal.sqlite`, else `~/.local/share/brownout/journal.sqlite`.
pub fn default_sqlite_path() -> PathBuf {
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".local/share")))
        .unwrap_or_else(std::env::temp_dir);
    data.join("brownout").join("journal.sqlite")
}

/// Keep a journal that `brownout run` just wrote in the store (`--store`, else the default):
/// the run id, or why not. The runner warns and goes on when this fails: the journal file
/// is the record, the store a copy.
pub fn keep_run_journal(path: Option<&Path>, journal: &Value) -> Result<String, StoreError> {
    let mut s = open(path)?;
    Ok(s.import(journal)?.run_id)
}
