//! What a backend provides — select rows, write a journal's rows in one transaction — and
//! the [`Store`] operations written once on top of it, for SQLite and PostgreSQL alike.

use super::dialect::Dialect;
use super::ingest::{self, Insert};
use super::val::Val;
use super::{ImportOutcome, ListFilter, RunSummary, Store, StoreError};
use serde_json::Value;

/// A database the store can live in.
pub trait Backend {
    /// The SQL it speaks.
    fn dialect(&self) -> Dialect;
    /// The schema version of the open store.
    fn version(&self) -> i64;
    /// Rows of a query written in the store's SQL (SQLite's form, `?N` parameters; the
    /// backend rewrites it with [`Dialect::sql`]).
    fn select(&self, sql: &str, args: &[Val]) -> Result<Vec<Vec<Val>>, StoreError>;
    /// In one transaction: unless the run `id` is there already, insert `rows`. Whether
    /// they were inserted.
    fn write_run(&mut self, id: &str, rows: Vec<Insert>) -> Result<bool, StoreError>;
    /// In one transaction: delete the rows of `table` whose `key` column is `id`, then
    /// insert `values` (a record kept under its id, such as a GameDay's).
    fn replace(
        &mut self,
        table: &str,
        key: &str,
        id: &str,
        values: Vec<Val>,
    ) -> Result<(), StoreError>;
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn at(row: &[Val], k: usize) -> &Val {
    row.get(k).unwrap_or(&Val::Null)
}

fn parse(id: &str, text: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|source| StoreError::BadJson {
        run: id.to_string(),
        source,
    })
}

/// A run id from an id or a unique prefix of one.
pub fn resolve<B: Backend + ?Sized>(b: &B, run: &str) -> Result<String, StoreError> {
    let exact = b.select("SELECT run_id FROM runs WHERE run_id = ?1", &[run.into()])?;
    if let Some(row) = exact.first() {
        return Ok(at(row, 0).string());
    }
    let ids = b.select(
        "SELECT run_id FROM runs WHERE substr(run_id, 1, length(?1)) = ?1 LIMIT 2",
        &[run.into()],
    )?;
    match ids.len() {
        0 => Err(StoreError::NoSuchRun(run.into())),
        1 => Ok(at(&ids[0], 0).string()),
        n => Err(StoreError::Ambiguous {
            given: run.into(),
            count: n,
        }),
    }
}

/// Every experiment's name, sorted.
pub fn experiments<B: Backend + ?Sized>(b: &B) -> Result<Vec<String>, StoreError> {
    Ok(b.select(
        "SELECT DISTINCT experiment FROM runs ORDER BY experiment",
        &[],
    )?
    .iter()
    .map(|r| at(r, 0).string())
    .collect())
}

impl<B: Backend> Store for B {
    fn import(&mut self, journal: &Value) -> Result<ImportOutcome, StoreError> {
        ingest::check(journal)?;
        let id = ingest::run_id(journal);
        let rows = ingest::rows(journal, &id, self.version(), now_ms());
        let inserted = self.write_run(&id, rows)?;
        Ok(ImportOutcome {
            run_id: id,
            inserted,
        })
    }

    fn list(&self, filter: &ListFilter) -> Result<Vec<RunSummary>, StoreError> {
        let mut sql = String::from(
            "SELECT run_id, experiment, status, reason, started_unix_ms, \
             ended_unix_ms - started_unix_ms, mttr_ms, breach_gate, file FROM runs r WHERE 1=1",
        );
        let mut args: Vec<Val> = Vec::new();
        if let Some(e) = &filter.experiment {
            args.push(e.as_str().into());
            sql.push_str(&format!(" AND experiment = ?{}", args.len()));
        }
        if let Some(s) = &filter.status {
            args.push(s.as_str().into());
            sql.push_str(&format!(" AND status = ?{}", args.len()));
        }
        if let Some(t) = filter.since_unix_ms {
            args.push(t.into());
            sql.push_str(&format!(" AND started_unix_ms >= ?{}", args.len()));
        }
        if let Some((k, v)) = &filter.label {
            args.push(k.as_str().into());
            args.push(v.as_str().into());
            sql.push_str(&format!(
                " AND EXISTS (SELECT 1 FROM labels l WHERE l.run_id = r.run_id AND l.key = ?{} AND l.value = ?{})",
                args.len() - 1,
                args.len()
            ));
        }
        sql.push_str(" ORDER BY started_unix_ms DESC, run_id DESC");
        if let Some(n) = filter.limit {
            sql.push_str(&format!(" LIMIT {}", n.min(i64::MAX as u64)));
        }
        Ok(self
            .select(&sql, &args)?
            .iter()
            .map(|r| RunSummary {
                run_id: at(r, 0).string(),
                experiment: at(r, 1).string(),
                status: at(r, 2).string(),
                reason: at(r, 3).string(),
                started_unix_ms: at(r, 4).int().unwrap_or(0),
                duration_ms: at(r, 5).int().unwrap_or(0),
                mttr_ms: at(r, 6).real(),
                breach_gate: at(r, 7).text().map(String::from),
                file: at(r, 8).string(),
            })
            .collect())
    }

    fn journal(&self, run: &str) -> Result<(String, Value), StoreError> {
        let id = resolve(self, run)?;
        let rows = self.select(
            "SELECT json FROM journals WHERE run_id = ?1",
            &[id.as_str().into()],
        )?;
        let text = rows
            .first()
            .and_then(|r| at(r, 0).text().map(String::from))
            .ok_or_else(|| StoreError::NoSuchRun(run.into()))?;
        let v = parse(&id, &text)?;
        Ok((id, v))
    }

    fn each_journal(
        &self,
        each: &mut dyn FnMut(&str, &Value) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        // In pages of 200 (keyset on start time and id): a large store is never held whole.
        let mut after: Option<(i64, String)> = None;
        loop {
            let (cond, args): (&str, Vec<Val>) = match &after {
                None => ("", vec![]),
                Some((t, id)) => (
                    " WHERE r.started_unix_ms > ?1 OR (r.started_unix_ms = ?1 AND r.run_id > ?2)",
                    vec![(*t).into(), id.as_str().into()],
                ),
            };
            let page = self.select(
                &format!(
                    "SELECT j.run_id, j.json, r.started_unix_ms FROM journals j \
                     JOIN runs r ON r.run_id = j.run_id{cond} \
                     ORDER BY r.started_unix_ms, r.run_id LIMIT 200"
                ),
                &args,
            )?;
            for r in &page {
                let id = at(r, 0).string();
                let v = parse(&id, at(r, 1).text().unwrap_or_default())?;
                each(&id, &v)?;
                after = Some((at(r, 2).int().unwrap_or(0), id));
            }
            if page.len() < 200 {
                return Ok(());
            }
        }
    }
}
