//! A journal, read as JSON, into the store's rows. Only the fields the store indexes are
//! read; anything else stays in the kept JSON, so a journal that gains keys still imports.

use super::StoreError;
use rusqlite::{params, Transaction};
use serde_json::Value;

/// The run's id: the journal's `run_id` when it has one, else `<start, UTC>-<8 hex>` from
/// its start and end times, file, seed, status, reason and title — fields that survive a
/// round trip through any JSON writer exactly (floats may not), so the journal file and
/// the copy `brownout run` stored get the same id.
pub fn run_id(j: &Value) -> String {
    if let Some(id) = j
        .get("run_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        return id.to_string();
    }
    let key = serde_json::json!([
        j.get("started_unix_ms"),
        j.get("ended_unix_ms"),
        j.get("file"),
        j.get("seed"),
        j.get("status"),
        j.get("reason"),
        j.pointer("/experiment/title"),
    ])
    .to_string();
    let h = fnv1a(key.as_bytes());
    let start = j
        .get("started_unix_ms")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let stamp = chrono::DateTime::from_timestamp_millis(start)
        .map(|t| t.format("%Y%m%dT%H%M%SZ").to_string())
        .unwrap_or_else(|| "00000000T000000Z".into());
    format!("{stamp}-{:08x}", (h >> 32) as u32 ^ h as u32)
}

/// FNV-1a, 64 bits: stable across builds and platforms (std's hasher is not). Names things
/// (run ids, texts in the audit log); it protects nothing.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A new run's id, `<start, UTC>-<8 random hex>`, the form [`run_id`] derives for journals
/// written before runs carried one.
pub fn fresh_run_id(start_unix_ms: u64) -> String {
    let stamp = chrono::DateTime::from_timestamp_millis(start_unix_ms as i64)
        .map(|t| t.format("%Y%m%dT%H%M%SZ").to_string())
        .unwrap_or_else(|| "00000000T000000Z".into());
    let mut b = [0u8; 4];
    // No entropy (never seen on Linux) still gives a usable id: the store keeps the first.
    let _ = getrandom::fill(&mut b);
    format!("{stamp}-{:08x}", u32::from_le_bytes(b))
}

/// The experiment's name: its title, else its file.
pub fn experiment_name(j: &Value) -> String {
    j.pointer("/experiment/title")
        .and_then(Value::as_str)
        .or_else(|| j.get("file").and_then(Value::as_str))
        .unwrap_or("(untitled)")
        .to_string()
}

/// The labels the run's experiment carried.
pub fn labels(j: &Value) -> Vec<(String, String)> {
    j.pointer("/experiment/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str().map_or_else(|| v.to_string(), String::from),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Check that a document is a journal: an object with the keys every journal has.
pub fn check(j: &Value) -> Result<(), StoreError> {
    let o = j
        .as_object()
        .ok_or_else(|| StoreError::NotAJournal("not a JSON object".into()))?;
    for k in ["status", "started_unix_ms", "experiment"] {
        if !o.contains_key(k) {
            return Err(StoreError::NotAJournal(format!(
                "no `{k}` key (a journal is what `brownout run --journal FILE` writes)"
            )));
        }
    }
    Ok(())
}

fn s<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}
fn f(v: &Value, k: &str) -> Option<f64> {
    v.get(k).and_then(Value::as_f64)
}
fn i(v: &Value, k: &str) -> Option<i64> {
    v.get(k).and_then(Value::as_i64)
}
fn b(v: &Value, k: &str) -> Option<bool> {
    v.get(k).and_then(Value::as_bool)
}
fn arr<'a>(v: &'a Value, k: &str) -> &'a [Value] {
    v.get(k)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}
/// calls, errors, error rate, p50, p95, p99.
type SliRow = (
    Option<i64>,
    Option<i64>,
    Option<f64>,
    Option<f64>,
    Option<f64>,
    Option<f64>,
);

fn slis(v: &Value) -> SliRow {
    let z = &Value::Null;
    let x = v.get("slis").unwrap_or(z);
    (
        i(x, "calls"),
        i(x, "errors"),
        f(x, "error_rate"),
        f(x, "p50_ms"),
        f(x, "p95_ms"),
        f(x, "p99_ms"),
    )
}

/// Insert a checked journal's rows (the run must not be there yet). `version` is the
/// schema's: version-2 tables are filled only from 2 on.
pub fn insert(
    tx: &Transaction,
    j: &Value,
    id: &str,
    version: i64,
    now_ms: i64,
) -> Result<(), StoreError> {
    let name = experiment_name(j);
    let file = s(j, "file").unwrap_or("");
    let started = i(j, "started_unix_ms").unwrap_or(0);
    tx.execute(
        "INSERT INTO experiments VALUES (?1, ?2, ?3, ?3)
         ON CONFLICT(name) DO UPDATE SET
           file = CASE WHEN excluded.last_unix_ms >= last_unix_ms THEN excluded.file ELSE file END,
           first_unix_ms = min(first_unix_ms, excluded.first_unix_ms),
           last_unix_ms = max(last_unix_ms, excluded.last_unix_ms)",
        params![name, file, started],
    )?;
    let z = Value::Null;
    let breach = j.get("breach").unwrap_or(&z);
    let rec = j.get("recovery").unwrap_or(&z);
    let base = j.get("baseline").and_then(|b| b.get("slis")).unwrap_or(&z);
    let met = |k: &str| j.get(k).and_then(|x| b(x, "met"));
    tx.execute(
        // Columns named: later versions add some (version 3's `gameday_id`, set below).
        "INSERT INTO runs (run_id, experiment, file, status, reason, started_unix_ms,
           ended_unix_ms, seed, dry_run, brownout_version, journal_version, target_kind,
           target_url, steady_before_met, steady_after_met, baseline_error_rate,
           baseline_p95_ms, breach_gate, breach_at_ms, breach_value, breach_limit,
           abort_latency_ms, faults_left_ms, mttr_ms, recovered, imported_unix_ms)
         VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,?26)",
        params![
            id,
            name,
            file,
            s(j, "status").unwrap_or("unknown"),
            s(j, "reason").unwrap_or(""),
            started,
            i(j, "ended_unix_ms").unwrap_or(started),
            j.get("seed").and_then(Value::as_u64).map(|x| x as i64),
            b(j, "dry_run").unwrap_or(false),
            s(j, "brownout_version"),
            i(j, "journal_version"),
            j.get("target").and_then(|t| s(t, "kind")),
            j.get("target").and_then(|t| s(t, "url")),
            met("steady_state_before"),
            met("steady_state_after"),
            f(base, "error_rate"),
            f(base, "p95_ms"),
            s(breach, "gate"),
            f(breach, "at_ms"),
            f(breach, "value"),
            f(breach, "limit"),
            f(breach, "abort_latency_ms"),
            f(rec, "faults_left_ms").or_else(|| f(breach, "last_fault_left_ms")),
            f(rec, "mttr_ms"),
            b(rec, "recovered"),
            now_ms,
        ],
    )?;
    if let (true, Some(g)) = (version >= 3, s(j, "gameday_id")) {
        tx.execute(
            "UPDATE runs SET gameday_id = ?2 WHERE run_id = ?1",
            params![id, g],
        )?;
    }
    tx.execute(
        "INSERT INTO journals VALUES (?1, ?2)",
        params![id, j.to_string()],
    )?;
    insert_stages(tx, j, id)?;
    insert_gates(tx, j, id, breach)?;
    insert_probes(tx, j, id)?;
    let mut st = tx.prepare_cached("INSERT INTO series VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)")?;
    for sec in arr(j, "series") {
        let (c, e, er, p50, p95, p99) = slis(sec);
        st.execute(params![
            id,
            f(sec, "t_ms").unwrap_or(0.0),
            s(sec, "phase"),
            c,
            e,
            er,
            p50,
            p95,
            p99
        ])?;
    }
    if version >= 2 {
        let mut st = tx.prepare_cached("INSERT OR IGNORE INTO labels VALUES (?1, ?2, ?3)")?;
        for (k, v) in labels(j) {
            st.execute(params![id, k, v])?;
        }
    }
    Ok(())
}

fn insert_stages(tx: &Transaction, j: &Value, id: &str) -> Result<(), StoreError> {
    let mut st = tx
        .prepare_cached("INSERT INTO stages VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)")?;
    let mut inj = tx.prepare_cached("INSERT INTO injections VALUES (?1,?2,?3,?4)")?;
    let mut ev =
        tx.prepare_cached("INSERT INTO gate_evaluations VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)")?;
    for (n, x) in arr(j, "stages").iter().enumerate() {
        let name = s(x, "stage").unwrap_or("");
        let (c, e, er, p50, p95, p99) = slis(x);
        st.execute(params![
            id,
            n as i64,
            name,
            f(x, "share"),
            f(x, "start_ms"),
            f(x, "end_ms"),
            b(x, "completed"),
            c,
            e,
            er,
            p50,
            p95,
            p99
        ])?;
        if let Some(m) = x.get("injections").and_then(Value::as_object) {
            for (fault, count) in m {
                inj.execute(params![id, name, fault, count.as_i64().unwrap_or(0)])?;
            }
        }
        for g in arr(x, "gate_changes") {
            ev.execute(params![
                id,
                name,
                "change",
                s(g, "gate").unwrap_or(""),
                s(g, "status"),
                f(g, "value"),
                f(g, "limit"),
                i(g, "samples"),
                f(g, "since_ms")
            ])?;
        }
    }
    Ok(())
}

fn insert_gates(tx: &Transaction, j: &Value, id: &str, breach: &Value) -> Result<(), StoreError> {
    let mut st =
        tx.prepare_cached("INSERT OR IGNORE INTO gates VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)")?;
    for (n, g) in arr(j, "gates").iter().enumerate() {
        st.execute(params![
            id,
            i(g, "index").unwrap_or(n as i64),
            s(g, "gate").unwrap_or(""),
            f(g, "limit"),
            b(g, "breached"),
            f(g, "first_breach_ms"),
            f(g, "breach_value"),
            f(g, "worst"),
            i(g, "breaches"),
            s(g, "status"),
        ])?;
    }
    let mut ev =
        tx.prepare_cached("INSERT INTO gate_evaluations VALUES (?1,NULL,?2,?3,?4,?5,?6,?7,?8)")?;
    for g in arr(breach, "window") {
        ev.execute(params![
            id,
            "breach_window",
            s(g, "gate").unwrap_or(""),
            s(g, "status"),
            f(g, "value"),
            f(g, "limit"),
            i(g, "samples"),
            f(g, "since_ms")
        ])?;
    }
    Ok(())
}

fn insert_probes(tx: &Transaction, j: &Value, id: &str) -> Result<(), StoreError> {
    let mut pr =
        tx.prepare_cached("INSERT OR IGNORE INTO probes VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)")?;
    let mut sa = tx.prepare_cached("INSERT INTO probe_samples VALUES (?1,?2,?3,?4,?5,?6,?7,?8)")?;
    for (moment, key) in [
        ("before", "steady_state_before"),
        ("after", "steady_state_after"),
    ] {
        let Some(ss) = j.get(key) else { continue };
        for (n, p) in arr(ss, "probes").iter().enumerate() {
            let tool = s(p, "tool").unwrap_or("");
            let lat = p.get("latency").unwrap_or(&Value::Null);
            pr.execute(params![
                id,
                moment,
                n as i64,
                tool,
                b(p, "met"),
                f(p, "success_pct"),
                f(lat, "p50_ms"),
                f(lat, "p95_ms"),
                f(lat, "p99_ms")
            ])?;
            for (k, x) in arr(p, "samples").iter().enumerate() {
                sa.execute(params![
                    id,
                    moment,
                    n as i64,
                    tool,
                    k as i64,
                    b(x, "ok").unwrap_or(false),
                    f(x, "latency_ms"),
                    s(x, "error")
                ])?;
            }
        }
    }
    Ok(())
}
