//! GameDays in the store: each GameDay's record (`gamedays`), and their trend by title —
//! the scores of the GameDays of one title over time.

use super::{SqliteStore, StoreError};
use crate::gameday::record::{Previous, Record};
use rusqlite::params;
use serde::Serialize;

/// Keep a GameDay's record (replacing an earlier copy of the same id).
pub fn keep(s: &SqliteStore, r: &Record) -> Result<(), StoreError> {
    let json = serde_json::to_string(r)
        .map_err(|e| StoreError::NotAJournal(format!("the GameDay: {e}")))?;
    s.connection().execute(
        "INSERT OR REPLACE INTO gamedays VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)",
        params![
            r.gameday_id,
            r.title,
            r.file,
            r.status,
            r.reason,
            r.started_unix_ms as i64,
            r.ended_unix_ms as i64,
            r.score,
            r.grade,
            json
        ],
    )?;
    Ok(())
}

/// The last GameDays of `title` other than `except`, oldest first (at most 20).
pub fn previous(s: &SqliteStore, title: &str, except: &str) -> Result<Vec<Previous>, StoreError> {
    let mut all = list(s, title, 21)?;
    all.retain(|p| p.gameday_id != except);
    let cut = all.len().saturating_sub(20);
    Ok(all.split_off(cut))
}

/// The last `last` GameDays of `title`, oldest first.
pub fn list(s: &SqliteStore, title: &str, last: u64) -> Result<Vec<Previous>, StoreError> {
    let mut st = s.connection().prepare(
        "SELECT gameday_id, started_unix_ms, status, score, grade FROM gamedays
         WHERE title = ?1 ORDER BY started_unix_ms DESC, gameday_id DESC LIMIT ?2",
    )?;
    let mut out: Vec<Previous> = st
        .query_map(params![title, last as i64], |r| {
            Ok(Previous {
                gameday_id: r.get(0)?,
                started_unix_ms: r.get(1)?,
                status: r.get(2)?,
                score: r.get(3)?,
                grade: r.get(4)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    out.reverse();
    Ok(out)
}

/// A GameDay's record by id.
pub fn record(s: &SqliteStore, id: &str) -> Result<Record, StoreError> {
    let json: String = s
        .connection()
        .query_row(
            "SELECT json FROM gamedays WHERE gameday_id = ?1",
            params![id],
            |r| r.get(0),
        )
        .map_err(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => StoreError::NoSuchRun(id.to_string()),
            e => StoreError::Sql(e),
        })?;
    serde_json::from_str(&json).map_err(|source| StoreError::BadJson {
        run: id.to_string(),
        source,
    })
}

/// The trend of a GameDay title: its GameDays, oldest first, and the change of the score
/// from the first to the last.
#[derive(Debug, Clone, Serialize)]
pub struct GameDayTrend {
    pub title: String,
    pub gamedays: Vec<Previous>,
    /// The last score minus the one before (`null` with fewer than two).
    pub last_change: Option<f64>,
    /// The mean score.
    pub mean_score: Option<f64>,
}

/// `brownout journal trend --gameday TITLE`.
pub fn trend(s: &SqliteStore, title: &str, last: u64) -> Result<GameDayTrend, StoreError> {
    let gamedays = list(s, title, last)?;
    let n = gamedays.len();
    let last_change = (n >= 2).then(|| gamedays[n - 1].score - gamedays[n - 2].score);
    let mean_score = (n > 0).then(|| gamedays.iter().map(|g| g.score).sum::<f64>() / n as f64);
    Ok(GameDayTrend {
        title: title.to_string(),
        gamedays,
        last_change,
        mean_score,
    })
}
