//! GameDays in the store: each GameDay's record (`gamedays`), and their trend by title —
//! the scores of the GameDays of one title over time.

use super::record::{Previous, Record};
use brownout_store::store::backend::Backend;
use brownout_store::store::val::Val;
use brownout_store::store::StoreError;
use serde::Serialize;

/// Keep a GameDay's record (replacing an earlier copy of the same id).
pub fn keep<B: Backend + ?Sized>(s: &mut B, r: &Record) -> Result<(), StoreError> {
    let json = serde_json::to_string(r)
        .map_err(|e| StoreError::NotAJournal(format!("the GameDay: {e}")))?;
    let values = vec![
        r.gameday_id.as_str().into(),
        r.title.as_str().into(),
        r.file.as_str().into(),
        r.status.as_str().into(),
        r.reason.as_str().into(),
        Val::Int(r.started_unix_ms as i64),
        Val::Int(r.ended_unix_ms as i64),
        Val::Real(r.score),
        r.grade.as_str().into(),
        json.as_str().into(),
    ];
    s.replace("gamedays", "gameday_id", &r.gameday_id, values)
}

/// The last GameDays of `title` other than `except`, oldest first (at most 20).
pub fn previous<B: Backend + ?Sized>(
    s: &B,
    title: &str,
    except: &str,
) -> Result<Vec<Previous>, StoreError> {
    let mut all = list(s, title, 21)?;
    all.retain(|p| p.gameday_id != except);
    let cut = all.len().saturating_sub(20);
    Ok(all.split_off(cut))
}

/// The last `last` GameDays of `title`, oldest first.
pub fn list<B: Backend + ?Sized>(
    s: &B,
    title: &str,
    last: u64,
) -> Result<Vec<Previous>, StoreError> {
    let rows = s.select(
        "SELECT gameday_id, started_unix_ms, status, score, grade FROM gamedays
         WHERE title = ?1 ORDER BY started_unix_ms DESC, gameday_id DESC LIMIT ?2",
        &[title.into(), Val::Int(last.min(i64::MAX as u64) as i64)],
    )?;
    let at = |r: &Vec<Val>, k: usize| r.get(k).cloned().unwrap_or(Val::Null);
    let mut out: Vec<Previous> = rows
        .iter()
        .map(|r| Previous {
            gameday_id: at(r, 0).string(),
            started_unix_ms: at(r, 1).int().unwrap_or(0) as _,
            status: at(r, 2).string(),
            score: at(r, 3).real().unwrap_or(0.0),
            grade: at(r, 4).string(),
        })
        .collect();
    out.reverse();
    Ok(out)
}

/// A GameDay's record by id.
pub fn record<B: Backend + ?Sized>(s: &B, id: &str) -> Result<Record, StoreError> {
    let rows = s.select(
        "SELECT json FROM gamedays WHERE gameday_id = ?1",
        &[id.into()],
    )?;
    let json = rows
        .first()
        .and_then(|r| r.first())
        .map(Val::string)
        .ok_or_else(|| StoreError::NoSuchRun(id.to_string()))?;
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
pub fn trend<B: Backend + ?Sized>(
    s: &B,
    title: &str,
    last: u64,
) -> Result<GameDayTrend, StoreError> {
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
