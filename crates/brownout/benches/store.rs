//! The journal store and reports at scale: 10,000 synthetic runs (10 experiments, a
//! 60-second per-second series each), built from a real journal (tests/data).
//!
//! Measures insert time per run, `journal list`, a typical trend query and an aggregate SQL
//! query through the read-only path (goal: each under 100 ms), and report generation time and
//! the HTML report's size. `BROWNOUT_BENCH_RUNS=N` runs fewer (e.g. 500 to check it works).
//! `BROWNOUT_BENCH_STORE=postgres://…` measures a PostgreSQL store instead of a temporary
//! SQLite file (scripts/store-bench starts a throwaway server and runs both). Times are
//! medians of the repetitions.
//!
//!   cargo bench -p brownout --bench store

use brownout::report::{self, Format};
use brownout::store::readonly::Limits;
use brownout::store::trend::{self, DriftRule};
use brownout::store::{AnyStore, ListFilter, Location, Store};
use serde_json::Value;
use std::time::{Duration, Instant};

fn journal(base: &Value, k: usize) -> Value {
    let mut j = base.clone();
    let start = base["started_unix_ms"].as_u64().unwrap_or(0) + 60_000 * k as u64;
    j["started_unix_ms"] = start.into();
    j["ended_unix_ms"] = (start + 70_000).into();
    j["experiment"]["title"] = format!("experiment {}", k % 10).into();
    j["recovery"]["mttr_ms"] = (500.0 + (k % 97) as f64 * 13.0).into();
    let proto = base["series"][0].clone();
    let series: Vec<Value> = (0..60)
        .map(|s| {
            let mut x = proto.clone();
            x["t_ms"] = (s as f64 * 1000.0).into();
            x["slis"]["p99_ms"] = (20.0 + ((k + s) % 17) as f64).into();
            x
        })
        .collect();
    j["series"] = Value::Array(series);
    j
}

fn time<T>(what: &str, reps: u32, mut f: impl FnMut() -> T) -> Duration {
    let _ = f();
    let mut all: Vec<Duration> = (0..reps.max(1))
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(f());
            t.elapsed()
        })
        .collect();
    all.sort();
    let d = all[all.len() / 2];
    println!("{what:<44} {:>10.2} ms", d.as_secs_f64() * 1000.0);
    d
}

fn main() -> anyhow::Result<()> {
    let runs: usize = std::env::var("BROWNOUT_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let data = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/journal-aborted.json"
    );
    let base: Value = serde_json::from_str(&std::fs::read_to_string(data)?)?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("journal.sqlite");
    let at = match std::env::var("BROWNOUT_BENCH_STORE") {
        Ok(url) if !url.is_empty() => Location::parse(std::path::Path::new(&url))?,
        _ => Location::Sqlite(path.clone()),
    };
    println!("store                                        {at}");
    let mut store = AnyStore::open(&at)?;
    if let AnyStore::Postgres(_) = store {
        store.setup_reader()?;
    }

    let t = Instant::now();
    let mut each = Vec::with_capacity(runs);
    for k in 0..runs {
        let j = journal(&base, k);
        let one = Instant::now();
        store.import(&j)?;
        each.push(one.elapsed());
    }
    let total = t.elapsed();
    each.sort();
    println!("runs                                         {runs:>10} (60 s of series each)");
    println!(
        "insert per run (median, incl. building JSON) {:>10.2} ms   (mean {:.2}, worst {:.2} ms)",
        each.get(runs / 2).map_or(0.0, |d| d.as_secs_f64() * 1000.0),
        total.as_secs_f64() * 1000.0 / runs.max(1) as f64,
        each.last().map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    );
    if let Location::Sqlite(path) = &at {
        let size = std::fs::metadata(path)?.len()
            + std::fs::metadata(path.with_extension("sqlite-wal")).map_or(0, |m| m.len());
        println!(
            "store size                                   {:>10.1} MiB",
            size as f64 / 1048576.0
        );
    }

    time("journal list (newest 50)", 20, || {
        store.list(&ListFilter {
            limit: Some(50),
            ..Default::default()
        })
    });
    time("journal list --status aborted --label", 20, || {
        store.list(&ListFilter {
            status: Some("aborted".into()),
            label: Some(("env".into(), "staging".into())),
            limit: Some(50),
            ..Default::default()
        })
    });
    time("journal trend (last 20 of one experiment)", 20, || {
        trend::trend(&store, "experiment 3", 20, DriftRule::default())
    });
    time("query: avg MTTR per experiment (read-only)", 5, || {
        store.query(
            "SELECT experiment, count(*), avg(mttr_ms) FROM runs GROUP BY experiment",
            Limits::default(),
        )
    });
    time("query: worst p99 second per experiment", 3, || {
        store.query(
            "SELECT r.experiment, max(s.p99_ms) FROM series s JOIN runs r USING (run_id) GROUP BY 1",
            Limits { max_rows: 100, timeout: Duration::from_secs(60), ..Limits::default() },
        )
    });

    let (_, j) = store.journal(&brownout::store::ingest::run_id(&journal(&base, runs / 2)))?;
    for (name, f) in [
        ("md", Format::Md),
        ("html", Format::Html),
        ("junit", Format::Junit),
    ] {
        let d = time(&format!("report --format {name}"), 20, || {
            report::render(&j, f)
        });
        let _ = d;
    }
    let html = report::render(&j, Format::Html)?;
    println!(
        "HTML report size (60 s series)               {:>10.1} KiB",
        html.len() as f64 / 1024.0
    );
    Ok(())
}
