//! `brownout journal query SQL` on PostgreSQL: one statement, read-only as PostgreSQL itself
//! enforces it, twice over:
//!
//! - it runs in a `READ ONLY` transaction (no INSERT, UPDATE, DELETE, DDL, `nextval`, …),
//!   always rolled back;
//! - as the role [`READER`] (`SET LOCAL ROLE`), which holds only `SELECT` on the store's
//!   tables: [`setup_reader`] (`brownout journal setup-reader`) creates it once and grants
//!   it to the connecting role. Without it the query is refused, never run as the writer.
//!
//! One statement only (the extended protocol prepares exactly one), without parameters;
//! `statement_timeout` bounds its time, and rows are fetched through a portal in batches so
//! the row and byte limits bound what brownout holds.

use super::{pg_error, PgStore};
use crate::store::readonly::{Limits, QueryError, QueryResult};
use crate::store::val::Val;
use crate::store::StoreError;
use postgres::error::SqlState;

/// The role `journal query` runs as.
pub const READER: &str = "brownout_reader";

/// The SQL [`setup_reader`] runs (docs/journal.md shows it): the role and the membership
/// when the connecting role may create them (an administrator's), then `SELECT` on the
/// store's tables, now and later (the tables' owner's part).
pub const SETUP_READER: &str = "
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'brownout_reader') THEN
    CREATE ROLE brownout_reader NOLOGIN;
  END IF;
  IF NOT pg_has_role(current_user, 'brownout_reader', 'MEMBER') THEN
    EXECUTE format('GRANT brownout_reader TO %I', current_user);
  END IF;
END $$;
GRANT USAGE ON SCHEMA public TO brownout_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO brownout_reader;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO brownout_reader;
";

/// Set up the reader role: create it and grant it to the connecting role if missing (which
/// takes an administrator's rights; the error then says what to ask for), and grant it
/// `SELECT` on the store's tables and on tables later migrations add.
pub fn setup_reader(s: &PgStore) -> Result<(), StoreError> {
    s.call(|c| c.batch_execute(SETUP_READER))?.map_err(|e| {
        let denied = e.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE);
        let hint = if denied {
            format!(
                " — creating the role takes an administrator: have one run `CREATE ROLE {READER} \
                 NOLOGIN; GRANT {READER} TO <the role in the store URL>;` once, then run \
                 `brownout journal setup-reader` again"
            )
        } else {
            String::new()
        };
        StoreError::Pg(format!(
            "setting up the role {READER}: {}{hint}",
            pg_error(&e)
        ))
    })
}

/// Run one read-only statement.
pub fn query(s: &PgStore, sql: &str, limits: Limits) -> Result<QueryResult, QueryError> {
    let sql = sql.to_string();
    s.call(move |c| run(c, &sql, limits))
        .map_err(|e| QueryError::Other(e.to_string()))?
}

fn run(c: &mut postgres::Client, sql: &str, limits: Limits) -> Result<QueryResult, QueryError> {
    let mut tx = c
        .build_transaction()
        .read_only(true)
        .start()
        .map_err(|e| classify(&e, limits))?;
    let ms = limits.timeout.as_millis().clamp(1, i32::MAX as u128);
    tx.batch_execute(&format!("SET LOCAL statement_timeout = {ms}"))
        .map_err(|e| classify(&e, limits))?;
    if let Err(e) = tx.batch_execute(&format!("SET LOCAL ROLE {READER}")) {
        return Err(QueryError::Denied(format!(
            "cannot take the read-only role {READER} ({}): run `brownout journal setup-reader` \
             once as the store's owner (docs/journal.md)",
            pg_error(&e)
        )));
    }
    let st = tx.prepare(sql).map_err(|e| classify(&e, limits))?;
    if !st.params().is_empty() {
        return Err(QueryError::Denied(
            "the statement has parameters ($1 …); write the values into it".into(),
        ));
    }
    let columns: Vec<String> = st.columns().iter().map(|c| c.name().to_string()).collect();
    let portal = tx.bind(&st, &[]).map_err(|e| classify(&e, limits))?;
    let mut rows = Vec::new();
    let mut truncated = false;
    let mut bytes = 0usize;
    'fetch: loop {
        let want = (limits.max_rows + 1 - rows.len()).clamp(1, 500) as i32;
        let batch = tx
            .query_portal(&portal, want)
            .map_err(|e| classify(&e, limits))?;
        let done = batch.len() < want as usize;
        for r in &batch {
            if rows.len() >= limits.max_rows {
                truncated = true;
                break 'fetch;
            }
            let mut row = Vec::with_capacity(columns.len());
            for k in 0..r.len() {
                let v: Val = r.try_get(k).map_err(|e| classify(&e, limits))?;
                bytes += v.text_len();
                if bytes > limits.max_bytes {
                    truncated = true;
                    break 'fetch;
                }
                row.push(v.json());
            }
            rows.push(row);
        }
        if done {
            break;
        }
    }
    // Dropped: rolled back, whatever the statement did.
    drop(tx);
    Ok(QueryResult {
        columns,
        rows,
        truncated,
    })
}

/// A PostgreSQL error as a query error: refusals (read-only, no privilege) and the time
/// limit by their SQLSTATE.
fn classify(e: &postgres::Error, limits: Limits) -> QueryError {
    let m = pg_error(e);
    match e.code() {
        Some(c) if *c == SqlState::READ_ONLY_SQL_TRANSACTION => {
            QueryError::Denied(format!("the transaction is read-only: {m}"))
        }
        Some(c) if *c == SqlState::INSUFFICIENT_PRIVILEGE => {
            QueryError::Denied(format!("the role {READER} may only read: {m}"))
        }
        Some(c) if *c == SqlState::QUERY_CANCELED => QueryError::Timeout(limits.timeout),
        _ => QueryError::Other(m),
    }
}
