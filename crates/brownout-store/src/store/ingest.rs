//! A journal, read as JSON, into the store's rows ([`rows`], the same for both backends).
//! Only the fields the store indexes are read; anything else stays in the kept JSON, so a
//! journal that gains keys still imports.

use super::dialect::Conflict;
use super::val::Val;
use super::StoreError;
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
    // FNV-1a (the engine's stable string hash): names the run, protects nothing.
    let h = brownout_core::rng::hash_str(&key);
    let start = j
        .get("started_unix_ms")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let stamp = chrono::DateTime::from_timestamp_millis(start)
        .map(|t| t.format("%Y%m%dT%H%M%SZ").to_string())
        .unwrap_or_else(|| "00000000T000000Z".into());
    format!("{stamp}-{:08x}", (h >> 32) as u32 ^ h as u32)
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

/// One row to insert.
#[derive(Debug, Clone, PartialEq)]
pub struct Insert {
    pub table: &'static str,
    pub conflict: Conflict,
    pub values: Vec<Val>,
}

/// The rows of the accumulating journal.
struct Rows(Vec<Insert>);

impl Rows {
    fn push(&mut self, table: &'static str, conflict: Conflict, values: Vec<Val>) {
        self.0.push(Insert {
            table,
            conflict,
            values,
        });
    }
}

/// A checked journal's rows, in insertion order (the experiment, the run, its JSON, then
/// the rest). `version` is the schema's: version-2 tables are filled only from 2 on.
pub fn rows(j: &Value, id: &str, version: i64, now_ms: i64) -> Vec<Insert> {
    let mut out = Rows(Vec::new());
    let name = experiment_name(j);
    let file = s(j, "file").unwrap_or("");
    let started = i(j, "started_unix_ms").unwrap_or(0);
    out.push(
        "experiments",
        Conflict::Experiment,
        vec![
            name.as_str().into(),
            file.into(),
            started.into(),
            started.into(),
        ],
    );
    let z = Value::Null;
    let breach = j.get("breach").unwrap_or(&z);
    let rec = j.get("recovery").unwrap_or(&z);
    let base = j.get("baseline").and_then(|b| b.get("slis")).unwrap_or(&z);
    let met = |k: &str| j.get(k).and_then(|x| b(x, "met"));
    let mut run = vec![
        id.into(),
        name.as_str().into(),
        file.into(),
        s(j, "status").unwrap_or("unknown").into(),
        s(j, "reason").unwrap_or("").into(),
        started.into(),
        i(j, "ended_unix_ms").unwrap_or(started).into(),
        j.get("seed")
            .and_then(Value::as_u64)
            .map(|x| x as i64)
            .into(),
        b(j, "dry_run").unwrap_or(false).into(),
        s(j, "brownout_version").into(),
        i(j, "journal_version").into(),
        j.get("target").and_then(|t| s(t, "kind")).into(),
        j.get("target").and_then(|t| s(t, "url")).into(),
        met("steady_state_before").into(),
        met("steady_state_after").into(),
        f(base, "error_rate").into(),
        f(base, "p95_ms").into(),
        s(breach, "gate").into(),
        f(breach, "at_ms").into(),
        f(breach, "value").into(),
        f(breach, "limit").into(),
        f(breach, "abort_latency_ms").into(),
        f(rec, "faults_left_ms")
            .or_else(|| f(breach, "last_fault_left_ms"))
            .into(),
        f(rec, "mttr_ms").into(),
        b(rec, "recovered").into(),
        now_ms.into(),
    ];
    if version >= 3 {
        // Version 3's column, last as `ALTER TABLE … ADD COLUMN` put it.
        run.push(s(j, "gameday_id").into());
    }
    out.push("runs", Conflict::Fail, run);
    out.push(
        "journals",
        Conflict::Fail,
        vec![id.into(), j.to_string().into()],
    );
    stages(&mut out, j, id);
    gates(&mut out, j, id, breach);
    probes(&mut out, j, id);
    for sec in arr(j, "series") {
        let (c, e, er, p50, p95, p99) = slis(sec);
        out.push(
            "series",
            Conflict::Fail,
            vec![
                id.into(),
                f(sec, "t_ms").unwrap_or(0.0).into(),
                s(sec, "phase").into(),
                c.into(),
                e.into(),
                er.into(),
                p50.into(),
                p95.into(),
                p99.into(),
            ],
        );
    }
    if version >= 2 {
        for (k, v) in labels(j) {
            out.push(
                "labels",
                Conflict::Ignore,
                vec![id.into(), k.into(), v.into()],
            );
        }
    }
    out.0
}

fn stages(out: &mut Rows, j: &Value, id: &str) {
    for (n, x) in arr(j, "stages").iter().enumerate() {
        let name = s(x, "stage").unwrap_or("");
        let (c, e, er, p50, p95, p99) = slis(x);
        out.push(
            "stages",
            Conflict::Fail,
            vec![
                id.into(),
                (n as i64).into(),
                name.into(),
                f(x, "share").into(),
                f(x, "start_ms").into(),
                f(x, "end_ms").into(),
                b(x, "completed").into(),
                c.into(),
                e.into(),
                er.into(),
                p50.into(),
                p95.into(),
                p99.into(),
            ],
        );
        if let Some(m) = x.get("injections").and_then(Value::as_object) {
            for (fault, count) in m {
                out.push(
                    "injections",
                    Conflict::Fail,
                    vec![
                        id.into(),
                        name.into(),
                        fault.as_str().into(),
                        count.as_i64().unwrap_or(0).into(),
                    ],
                );
            }
        }
        for g in arr(x, "gate_changes") {
            out.push(
                "gate_evaluations",
                Conflict::Fail,
                vec![
                    id.into(),
                    name.into(),
                    "change".into(),
                    s(g, "gate").unwrap_or("").into(),
                    s(g, "status").into(),
                    f(g, "value").into(),
                    f(g, "limit").into(),
                    i(g, "samples").into(),
                    f(g, "since_ms").into(),
                ],
            );
        }
    }
}

fn gates(out: &mut Rows, j: &Value, id: &str, breach: &Value) {
    for (n, g) in arr(j, "gates").iter().enumerate() {
        out.push(
            "gates",
            Conflict::Ignore,
            vec![
                id.into(),
                i(g, "index").unwrap_or(n as i64).into(),
                s(g, "gate").unwrap_or("").into(),
                f(g, "limit").into(),
                b(g, "breached").into(),
                f(g, "first_breach_ms").into(),
                f(g, "breach_value").into(),
                f(g, "worst").into(),
                i(g, "breaches").into(),
                s(g, "status").into(),
            ],
        );
    }
    for g in arr(breach, "window") {
        out.push(
            "gate_evaluations",
            Conflict::Fail,
            vec![
                id.into(),
                Val::Null,
                "breach_window".into(),
                s(g, "gate").unwrap_or("").into(),
                s(g, "status").into(),
                f(g, "value").into(),
                f(g, "limit").into(),
                i(g, "samples").into(),
                f(g, "since_ms").into(),
            ],
        );
    }
}

fn probes(out: &mut Rows, j: &Value, id: &str) {
    for (moment, key) in [
        ("before", "steady_state_before"),
        ("after", "steady_state_after"),
    ] {
        let Some(ss) = j.get(key) else { continue };
        for (n, p) in arr(ss, "probes").iter().enumerate() {
            let tool = s(p, "tool").unwrap_or("");
            let lat = p.get("latency").unwrap_or(&Value::Null);
            out.push(
                "probes",
                Conflict::Ignore,
                vec![
                    id.into(),
                    moment.into(),
                    (n as i64).into(),
                    tool.into(),
                    b(p, "met").into(),
                    f(p, "success_pct").into(),
                    f(lat, "p50_ms").into(),
                    f(lat, "p95_ms").into(),
                    f(lat, "p99_ms").into(),
                ],
            );
            for (k, x) in arr(p, "samples").iter().enumerate() {
                out.push(
                    "probe_samples",
                    Conflict::Fail,
                    vec![
                        id.into(),
                        moment.into(),
                        (n as i64).into(),
                        tool.into(),
                        (k as i64).into(),
                        b(x, "ok").unwrap_or(false).into(),
                        f(x, "latency_ms").into(),
                        s(x, "error").into(),
                    ],
                );
            }
        }
    }
}
