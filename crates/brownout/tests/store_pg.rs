//! The journal store on a real PostgreSQL server (`--store postgres://…`): the same
//! `journal` commands as on SQLite, read-only SQL enforced by PostgreSQL, several runners
//! writing at once, history moved between SQLite and PostgreSQL both ways, and a password
//! never printed. Plus what needs no server: a store argument is a path or a URL brownout
//! understands, never a folder named `postgres:`.

mod common;
#[path = "experiment_support/mod.rs"]
mod exp;
#[path = "pg_support/mod.rs"]
mod pg;
#[path = "store_support/mod.rs"]
mod support;

use common::brownout;
use pg::{Pg, PASSWORD};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use support::{aborted, completed, read_json};

/// `brownout journal --store STORE ARGS…` in `dir`: (exit code, stdout, stderr).
fn journal(dir: &Path, store: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(brownout())
        .arg("journal")
        .arg("--store")
        .arg(store)
        .args(args)
        .current_dir(dir)
        .env("XDG_DATA_HOME", dir)
        .env_remove("BROWNOUT_STORE")
        .output()
        .expect("run brownout journal");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(dir: &Path, store: &str, args: &[&str]) -> Value {
    let (code, out, err) = journal(dir, store, args);
    assert_eq!(code, 0, "journal {args:?}: {err}");
    assert!(!out.contains(PASSWORD) && !err.contains(PASSWORD));
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

fn statuses(runs: &Value) -> Vec<String> {
    runs.as_array()
        .expect("array")
        .iter()
        .map(|r| r["status"].as_str().expect("status").to_string())
        .collect()
}

#[test]
fn a_store_argument_is_a_path_or_a_url_brownout_understands_never_a_folder() {
    let dir = common::tmp();
    for bad in [
        "mysql://db/brownout",
        "postgres:brownout",
        "sqlite:///tmp/x.db",
    ] {
        let (code, _, err) = journal(dir.path(), bad, &["list"]);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(
            err.contains("postgres://"),
            "{bad}: names the schemes: {err}"
        );
        let out = Command::new(brownout())
            .args(["run", "nothing.yaml", "--store", bad])
            .current_dir(dir.path())
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("postgres://"), "{bad}: {err}");
    }
    // BROWNOUT_STORE is read the same way.
    let out = Command::new(brownout())
        .args(["journal", "list"])
        .env("BROWNOUT_STORE", "redis://cache/0")
        .current_dir(dir.path())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("ls")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert!(
        left.is_empty(),
        "nothing is created for a refused store: {left:?}"
    );
}

#[test]
fn an_unreachable_postgres_store_is_exit_4_and_its_password_is_never_printed() {
    let dir = common::tmp();
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let url = format!("postgres://alice:{PASSWORD}@127.0.0.1:{port}/brownout");
    let (code, out, err) = journal(dir.path(), &url, &["list"]);
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("alice:***@127.0.0.1"), "{err}");
    assert!(!out.contains(PASSWORD) && !err.contains(PASSWORD), "{err}");
}

#[test]
fn journal_commands_work_the_same_on_postgres() {
    let Some(pg) = Pg::start() else { return };
    let dir = common::tmp();
    let d = dir.path();
    let url = pg.url("brownout");
    let files = [
        completed().display().to_string(),
        aborted().display().to_string(),
    ];
    let first = json(d, &url, &["import", "--json", &files[0], &files[1]]);
    let again = json(d, &url, &["import", "--json", &files[0], &files[1]]);
    let inserted = |v: &Value| -> Vec<bool> {
        v.as_array()
            .expect("array")
            .iter()
            .map(|x| x["inserted"].as_bool().expect("inserted"))
            .collect()
    };
    assert_eq!(inserted(&first), [true, true], "{first}");
    assert_eq!(inserted(&again), [false, false], "idempotent: {again}");

    // The same answers as the SQLite store gives for the same journals.
    let sqlite = support::store_with_both(d).display().to_string();
    for args in [
        &["list", "--json"][..],
        &["list", "--json", "--status", "aborted"],
        &["list", "--json", "--label", "service=incidents"],
        &["list", "--json", "--since", "2020-01-01"],
        &["list", "--json", "--experiment", "a green test experiment"],
    ] {
        assert_eq!(
            json(d, &url, args),
            json(d, &sqlite, args),
            "{args:?}: PostgreSQL and SQLite agree"
        );
    }
    assert_eq!(
        statuses(&json(d, &url, &["list", "--json"])).len(),
        2,
        "both runs"
    );
    let id = json(d, &url, &["list", "--json", "--status", "aborted"])[0]["run_id"]
        .as_str()
        .expect("id")
        .to_string();
    let prefix = &id[..id.len() - 3];
    let shown = json(d, &url, &["show", prefix, "--json"]);
    assert_eq!(
        shown,
        read_json(&aborted()),
        "the stored journal is the file"
    );
    let (code, md, err) = journal(d, &url, &["report", prefix, "--format", "md"]);
    assert_eq!(code, 0, "{err}");
    assert!(md.contains(&id), "{md}");

    // Trend and evidence read the stored JSON with PostgreSQL's jsonb operators.
    let t = json(d, &url, &["trend", "a green test experiment", "--json"]);
    let ts = json(d, &sqlite, &["trend", "a green test experiment", "--json"]);
    assert_eq!(t["runs"], ts["runs"], "trend rows agree");
    let e = json(d, &url, &["evidence", "--since", "2020-01-01", "--json"]);
    let es = json(d, &sqlite, &["evidence", "--since", "2020-01-01", "--json"]);
    assert_eq!(e, es, "evidence agrees");

    // CSV of runs: the same header and rows but for the import time.
    let csv = |store: &str| {
        let (code, out, err) = journal(d, store, &["export", "--format", "csv"]);
        assert_eq!(code, 0, "{err}");
        out.lines()
            .map(|l| l.rsplit_once(',').map_or(l, |(a, _)| a).to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(csv(&url), csv(&sqlite));
}

#[test]
fn history_moves_between_sqlite_and_postgres_both_ways() {
    let Some(pg) = Pg::start() else { return };
    let dir = common::tmp();
    let d = dir.path();
    let laptop = support::store_with_both(d).display().to_string();
    let team = pg.url("brownout");
    // SQLite → PostgreSQL, store to store.
    let moved = json(d, &team, &["import", "--json", "--from", &laptop]);
    assert_eq!(moved.as_array().map(Vec::len), Some(2), "{moved}");
    // PostgreSQL → JSON lines → a new SQLite file.
    let (code, _, err) = journal(d, &team, &["export", "-o", "team.jsonl"]);
    assert_eq!(code, 0, "{err}");
    let back = d.join("back.sqlite").display().to_string();
    let imported = json(d, &back, &["import", "--json", "team.jsonl"]);
    assert_eq!(imported.as_array().map(Vec::len), Some(2), "{imported}");
    assert_eq!(
        json(d, &back, &["list", "--json"]),
        json(d, &laptop, &["list", "--json"]),
        "the round trip keeps every run"
    );
}

#[test]
fn journal_query_on_postgres_is_read_only_as_postgres_enforces_it() {
    let Some(pg) = Pg::start() else { return };
    let dir = common::tmp();
    let d = dir.path();
    let url = pg.url("brownout");
    json(
        d,
        &url,
        &["import", "--json", &completed().display().to_string()],
    );
    // Without the reader role, a query is refused: never run as the writing role.
    let (code, _, err) = journal(d, &url, &["query", "SELECT count(*) FROM runs"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("setup-reader"), "{err}");
    // The application role may not create roles: setup-reader says what to ask for.
    let (code, _, err) = journal(d, &url, &["setup-reader"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("CREATE ROLE brownout_reader"), "{err}");
    pg.psql_in(
        "brownout",
        "CREATE ROLE brownout_reader NOLOGIN; GRANT brownout_reader TO brownout",
    );
    let (code, out, err) = journal(d, &url, &["setup-reader"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("brownout_reader"), "{out}");
    let q = json(
        d,
        &url,
        &[
            "query",
            "--json",
            "SELECT status, count(*) AS n, avg(mttr_ms) FROM runs GROUP BY status",
        ],
    );
    assert_eq!(
        q["columns"],
        serde_json::json!(["status", "n", "avg"]),
        "{q}"
    );
    assert_eq!(q["rows"][0][0], "completed", "{q}");
    assert_eq!(q["rows"][0][1], 1, "{q}");
    let big = json(
        d,
        &url,
        &[
            "query",
            "--json",
            "--max-rows",
            "3",
            "SELECT * FROM generate_series(1, 100000)",
        ],
    );
    assert_eq!(big["rows"].as_array().map(Vec::len), Some(3));
    assert_eq!(big["truncated"], true);
    for write in [
        "DELETE FROM runs",
        "UPDATE runs SET status = 'completed'",
        "INSERT INTO labels VALUES ('x', 'k', 'v')",
        "DROP TABLE runs",
        "CREATE TABLE t (x int)",
        "SELECT nextval('x')",
        "WITH d AS (DELETE FROM runs RETURNING 1) SELECT count(*) FROM d",
        "SELECT 1; DELETE FROM runs",
        "RESET ROLE",
    ] {
        let (code, _, err) = journal(d, &url, &["query", write]);
        assert!(
            code == 2 || write == "RESET ROLE",
            "{write}: exit {code}, {err}"
        );
    }
    // The rows are all there: nothing the queries tried wrote.
    let left = json(d, &url, &["list", "--json"]);
    assert_eq!(statuses(&left), ["completed"], "{left}");
    // The reader role itself cannot write, even outside a read-only transaction.
    let denied = pg.psql_in(
        "brownout",
        "SET ROLE brownout_reader; DO $$ BEGIN DELETE FROM runs; RAISE EXCEPTION 'wrote'; \
         EXCEPTION WHEN insufficient_privilege THEN RAISE NOTICE 'denied'; END $$; SELECT 'denied'",
    );
    assert!(denied.contains("denied"), "{denied}");
    let (code, _, err) = journal(
        d,
        &url,
        &["query", "--timeout", "0.5", "SELECT pg_sleep(30)"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("longer than"), "{err}");
}

#[test]
fn several_runners_write_to_one_postgres_store_at_once() {
    let Some(pg) = Pg::start() else { return };
    let dir = common::tmp();
    let url = pg.url("brownout");
    let n = 4;
    let mut children = Vec::new();
    for k in 0..n {
        let d = dir.path().join(format!("runner-{k}"));
        std::fs::create_dir_all(&d).expect("mkdir");
        let mut e = exp::Exp::fixture_green();
        e.method = "[{stage: canary, duration: 1s, sessions: 10%}]";
        e.baseline = "500ms";
        e.gates = "[\"error_rate < 50% over 1s\"]";
        let file = exp::write(&d, &exp::experiment_yaml(&e));
        children.push(
            Command::new(brownout())
                .args(["run", &file, "--journal", "journal.json", "--store", &url])
                .current_dir(&d)
                .env("XDG_DATA_HOME", &d)
                .output_async(),
        );
    }
    let mut ids = Vec::new();
    for (k, c) in children.into_iter().enumerate() {
        let out = c.wait_with_output().expect("wait");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(!text.contains(PASSWORD), "{text}");
        assert!(
            !text.contains("warning: the journal was not kept"),
            "runner {k}: {text}"
        );
        let j = read_json(&dir.path().join(format!("runner-{k}/journal.json")));
        ids.push(j["run_id"].as_str().expect("run_id").to_string());
    }
    let runs = json(dir.path(), &url, &["list", "--json"]);
    let mut stored: Vec<String> = runs
        .as_array()
        .expect("array")
        .iter()
        .map(|r| r["run_id"].as_str().expect("id").to_string())
        .collect();
    stored.sort();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "unique run ids");
    assert_eq!(stored, ids, "every runner's journal is in the store");
    let rows = pg.psql_in("brownout", "SELECT count(DISTINCT run_id) FROM journals");
    assert_eq!(rows.trim(), n.to_string(), "{rows}");
}

/// `Command::spawn` with piped output, to collect later.
trait Async {
    fn output_async(&mut self) -> std::process::Child;
}

impl Async for Command {
    fn output_async(&mut self) -> std::process::Child {
        self.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn brownout run")
    }
}
