//! `brownout journal query SQL`: one statement, read-only as SQLite itself enforces it.
//!
//! Three locks, each enough on its own for the usual writes: the connection is opened
//! `SQLITE_OPEN_READ_ONLY`; an authorizer denies every action but reading (no INSERT,
//! UPDATE, DELETE, CREATE, DROP, ALTER, ATTACH, DETACH, transactions, savepoints, writing
//! pragmas, `load_extension`); and the attached-database limit is 0 with SQLite's
//! defensive mode on (so `VACUUM INTO` and `PRAGMA writable_schema` fail too). A row limit
//! and a time limit (a progress handler) bound what a query can cost.

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::limits::Limit;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use serde::Serialize;
use serde_json::Value;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Why a query was refused or stopped.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("refused: {0} (journal query is read-only; see docs/journal.md)")]
    Denied(String),
    #[error("stopped: the query ran longer than {0:?} (--timeout)")]
    Timeout(Duration),
    #[error("no store at {0} yet (run `brownout run` or `brownout journal import` first)")]
    NoStore(String),
    #[error("{0}")]
    Sql(#[from] rusqlite::Error),
    /// A PostgreSQL store's error (its message; never the URL).
    #[error("{0}")]
    Other(String),
}

/// Limits of one query.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Rows returned at most; more are cut (and `truncated` says so).
    pub max_rows: usize,
    /// Wall-clock time the query may take.
    pub timeout: Duration,
    /// Bytes of text returned at most (a row that would pass it is cut, `truncated`).
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_rows: 10_000,
            timeout: Duration::from_secs(5),
            max_bytes: 256 << 20,
        }
    }
}

/// A query's answer.
#[derive(Debug, Clone, Serialize)]
pub struct QueryResult {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
    /// More rows matched than the row limit let through.
    pub truncated: bool,
}

/// Pragmas that only read (without an argument).
const READ_PRAGMAS: &[&str] = &[
    "table_info",
    "table_xinfo",
    "table_list",
    "index_list",
    "index_info",
    "index_xinfo",
    "foreign_key_list",
    "user_version",
    "schema_version",
    "database_list",
    "collation_list",
    "function_list",
    "pragma_list",
    "compile_options",
];

/// What the authorizer says of one action: `None` to allow, else why not.
fn judge(a: &AuthAction) -> Option<String> {
    match a {
        AuthAction::Select | AuthAction::Read { .. } | AuthAction::Recursive => None,
        AuthAction::Function { function_name } => (function_name
            .eq_ignore_ascii_case("load_extension"))
        .then(|| "load_extension is not allowed".into()),
        AuthAction::Pragma {
            pragma_name,
            pragma_value,
        } => {
            let name = pragma_name.to_ascii_lowercase();
            let reads = READ_PRAGMAS.contains(&name.as_str());
            let is_table_arg = matches!(
                name.as_str(),
                "table_info"
                    | "table_xinfo"
                    | "index_list"
                    | "index_info"
                    | "index_xinfo"
                    | "foreign_key_list"
            );
            if reads && (pragma_value.is_none() || is_table_arg) {
                None
            } else {
                Some(format!(
                    "PRAGMA {pragma_name}{} may write or change the connection",
                    pragma_value.map(|v| format!(" = {v}")).unwrap_or_default()
                ))
            }
        }
        AuthAction::Insert { table_name } => Some(format!("INSERT into {table_name} writes")),
        AuthAction::Update { table_name, .. } => Some(format!("UPDATE of {table_name} writes")),
        AuthAction::Delete { table_name } => Some(format!("DELETE from {table_name} writes")),
        AuthAction::Attach { .. } => Some("ATTACH opens another database".into()),
        AuthAction::Detach { .. } => Some("DETACH changes the connection".into()),
        AuthAction::Transaction { .. } | AuthAction::Savepoint { .. } => {
            Some("transaction control is not needed to read".into())
        }
        other => Some(format!(
            "{} writes the schema or the database",
            action_name(other)
        )),
    }
}

fn action_name(a: &AuthAction) -> String {
    let d = format!("{a:?}");
    d.split([' ', '{']).next().unwrap_or("this").to_string()
}

/// Open `path` read-only with every lock in place.
pub fn open(path: &Path, denied: Arc<Mutex<Option<String>>>) -> Result<Connection, QueryError> {
    if !path.exists() {
        return Err(QueryError::NoStore(path.display().to_string()));
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.set_limit(Limit::SQLITE_LIMIT_ATTACHED, 0)?;
    // No value (a string, a blob such as zeroblob(N)) over 64 MiB: a query cannot make
    // brownout hold gigabytes.
    conn.set_limit(Limit::SQLITE_LIMIT_LENGTH, 64 << 20)?;
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)?;
    conn.authorizer(Some(move |ctx: AuthContext<'_>| match judge(&ctx.action) {
        None => Authorization::Allow,
        Some(why) => {
            if let Ok(mut d) = denied.lock() {
                d.get_or_insert(why);
            }
            Authorization::Deny
        }
    }));
    Ok(conn)
}

/// Run one read-only statement against the store at `path`.
pub fn query(path: &Path, sql: &str, limits: Limits) -> Result<QueryResult, QueryError> {
    let denied = Arc::new(Mutex::new(None));
    let conn = open(path, denied.clone())?;
    let deadline = Instant::now() + limits.timeout;
    let timed_out = Arc::new(Mutex::new(false));
    let flag = timed_out.clone();
    conn.progress_handler(
        1000,
        Some(move || {
            let late = Instant::now() > deadline;
            if late {
                if let Ok(mut t) = flag.lock() {
                    *t = true;
                }
            }
            late
        }),
    );
    let why = |e: rusqlite::Error| -> QueryError {
        if let Some(d) = denied.lock().ok().and_then(|mut d| d.take()) {
            return QueryError::Denied(d);
        }
        if timed_out.lock().map(|t| *t).unwrap_or(false) {
            return QueryError::Timeout(limits.timeout);
        }
        match e {
            rusqlite::Error::SqliteFailure(f, Some(m))
                if f.code == rusqlite::ErrorCode::ReadOnly =>
            {
                QueryError::Denied(format!("the store is opened read-only: {m}"))
            }
            e => QueryError::Sql(e),
        }
    };
    let mut st = conn.prepare(sql).map_err(why)?;
    if !st.readonly() {
        return Err(QueryError::Denied("the statement would write".into()));
    }
    let columns: Vec<String> = st.column_names().iter().map(|c| c.to_string()).collect();
    let n = columns.len();
    let mut rows = Vec::new();
    let mut truncated = false;
    let mut bytes = 0usize;
    let mut q = st.query([]).map_err(why)?;
    while let Some(r) = q.next().map_err(why)? {
        if rows.len() >= limits.max_rows || bytes > limits.max_bytes {
            truncated = true;
            break;
        }
        let mut row = Vec::with_capacity(n);
        for k in 0..n {
            row.push(match r.get_ref(k).map_err(why)? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(x) => x.into(),
                ValueRef::Real(x) => {
                    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
                }
                ValueRef::Text(t) => {
                    bytes += t.len();
                    if bytes > limits.max_bytes {
                        truncated = true;
                        break;
                    }
                    String::from_utf8_lossy(t).into_owned().into()
                }
                ValueRef::Blob(b) => format!("<{} bytes>", b.len()).into(),
            });
        }
        if row.len() < n {
            break;
        }
        rows.push(row);
    }
    Ok(QueryResult {
        columns,
        rows,
        truncated,
    })
}
