//! `brownout gameday` against the real fixture: experiments run in order through the
//! runner, the score and grade recomputed here from the stored journals (the definition in
//! docs/gameday.md, written again independently), `requires` and stopping at the first
//! failure vs `--continue-on-failure`, exit codes 0/1/2/3/130, `--dry-run` sending nothing
//! (the target's wrapper never starts), every report format (JUnit against the XSD),
//! `journal trend --gameday`, and typos reported with file, line, key and a suggestion.

mod common;
#[path = "experiment_support/mod.rs"]
mod exp_support;

use common::*;
use exp_support::FIXTURE_WORKLOAD;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The target, as the GameDay's default: the fixture, through a wrapper that leaves a mark
/// when it is started (so a test can tell whether anything reached the target).
fn target(dir: &Path) -> String {
    format!(
        "{{command: [sh, -c, 'touch {}/target-started; exec {} fixture']}}",
        dir.display(),
        brownout()
    )
}

/// How an experiment of the tests fares.
#[derive(Clone, Copy)]
enum Fares {
    /// A 1 ms latency on 5 % of searches: every gate holds with full margin.
    Well,
    /// A fifth of the searches fail against a 50 % error gate: it holds, with a margin
    /// below 1 (so its value depends on how the factors are weighed).
    Fair,
    /// Every search fails against a 1 % gate: aborted.
    Badly,
}

/// An experiment document (flow style, one line: fits inline or in a file) without a
/// target: the GameDay's applies. One stage on every session (the tests' policy has the
/// one rung, 100 %).
fn exp(title: &str, fares: Fares) -> String {
    let (fault, gate) = match fares {
        Fares::Well => (
            "{kind: latency, tools: [\"search_*\"], added_ms: 1, probability: 0.05}",
            "error_rate < 5% over 2s",
        ),
        Fares::Fair => (
            "{kind: error, tools: [\"search_*\"], probability: 0.2}",
            "error_rate < 50% over 2s",
        ),
        Fares::Badly => (
            "{kind: error, tools: [\"search_*\"], probability: 1.0}",
            "error_rate < 1% over 1s min 5 calls",
        ),
    };
    format!(
        "{{title: \"{title}\", load: {{workload: workload.yaml, sessions: 8}}, baseline: 1s, \
         method: [{{stage: all, duration: 1s, sessions: 100%}}], faults: [{fault}], \
         gates: [\"{gate}\"], recovery: {{within: 10s}}, \
         steady_state: [{{probe: mcp, call: {{tool: search_incidents, arguments: {{query: db}}}}, \
         tolerance: {{success: \">= 99%\", p95: \"< 2s\"}}, samples: 3}}]}}"
    )
}

/// Write the workload, the GameDay file `gd.yaml` (and `ok.yaml`, a good experiment file).
fn setup(dir: &Path, gameday: &str) {
    std::fs::write(dir.join("workload.yaml"), FIXTURE_WORKLOAD).expect("workload");
    std::fs::write(
        dir.join("ok.yaml"),
        exp("first, a fair one", Fares::Fair) + "\n",
    )
    .expect("ok");
    std::fs::write(dir.join("gd.yaml"), gameday).expect("gameday");
    std::fs::write(dir.join("policy.yaml"), "ladder: [\"100%\"]\n").expect("policy");
}

fn gameday(dir: &Path, args: &[&str]) -> Output {
    Command::new(brownout())
        .arg("gameday")
        .args(args)
        .args(["--policy", "policy.yaml"])
        .arg("--store")
        .arg(dir.join("store.sqlite"))
        .current_dir(dir)
        .env("XDG_DATA_HOME", dir)
        .output()
        .expect("brownout gameday")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn journal(dir: &Path, args: &[&str]) -> Value {
    let o = Command::new(brownout())
        .arg("journal")
        .args(args)
        .arg("--store")
        .arg(dir.join("store.sqlite"))
        .output()
        .expect("brownout journal");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    serde_json::from_slice(&o.stdout).expect("json")
}

fn read(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).expect("read")).expect("json")
}

/// docs/gameday.md#score, written again here: a journal's value.
fn value_of(j: &Value) -> f64 {
    if j["status"] != "completed" {
        return 0.0;
    }
    let mut fs: Vec<f64> = Vec::new();
    if let Some(rho) = j["robustness"].as_f64() {
        fs.push(rho.clamp(0.0, 1.0));
    }
    if let (Some(m), Some(w)) = (
        j["recovery"]["mttr_ms"].as_f64(),
        j["recovery"]["within_ms"].as_f64(),
    ) {
        fs.push((1.0 - m / w).clamp(0.0, 1.0));
    }
    let st = &j["stages"][0];
    if let (Some(t), Some(a), Some(b)) = (
        j["detection"]["ttd_ms"].as_f64(),
        st["start_ms"].as_f64(),
        st["end_ms"].as_f64(),
    ) {
        fs.push((1.0 - t / (b - a)).clamp(0.0, 1.0));
    }
    if j["silent"]["altered"].as_u64().unwrap_or(0) > 0 {
        fs.push((1.0 - j["silent"]["silent_rate"].as_f64().unwrap_or(0.0)).clamp(0.0, 1.0));
    }
    let q = if fs.is_empty() {
        1.0
    } else {
        fs.iter().sum::<f64>() / fs.len() as f64
    };
    0.5 + 0.5 * q
}

/// The score from the store: every experiment's journal (by its run id), weighted.
fn score_from_store(dir: &Path, rec: &Value) -> f64 {
    let mut earned = 0.0;
    let mut total = 0.0;
    for e in rec["experiments"].as_array().expect("experiments") {
        let w = e["weight"].as_f64().expect("weight");
        total += w;
        if let Some(id) = e["run_id"].as_str() {
            let j = journal(dir, &["show", id, "--json"]);
            assert_eq!(j["gameday_id"], rec["gameday_id"], "tied to the GameDay");
            earned += w * value_of(&j);
        }
    }
    (1000.0 * earned / total).round() / 10.0
}

fn grade_of(s: f64) -> &'static str {
    match s {
        s if s >= 90.0 => "A",
        s if s >= 80.0 => "B",
        s if s >= 70.0 => "C",
        s if s >= 60.0 => "D",
        _ => "F",
    }
}

fn statuses(rec: &Value) -> Vec<String> {
    rec["experiments"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| e["status"].as_str().unwrap_or("").to_string())
        .collect()
}

fn xmllint_ok(xml: &Path) -> bool {
    Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(repo().join("crates/brownout/tests/data/junit.xsd"))
        .arg(xml)
        .output()
        .expect("xmllint (libxml2-utils) is missing: run scripts/setup-peers")
        .status
        .success()
}

#[test]
fn a_gameday_scores_from_its_journals_stops_at_the_first_failure_and_writes_every_report() {
    let d = common::tmp();
    let dir = d.path();
    let gd = format!(
        "title: \"Series <b>one</b>\"\nlabels: {{team: sre}}\ntarget: {}\nexperiments:\n  - id: ok\n    path: ok.yaml\n  - id: bad\n    weight: 2\n    requires: [ok]\n    experiment: {}\n  - id: after\n    experiment: {}\n",
        target(dir),
        exp("then a breach", Fares::Badly),
        exp("never reached", Fares::Well)
    );
    setup(dir, &gd);
    let out = gameday(
        dir,
        &[
            "gd.yaml",
            "--journal",
            "gd.json",
            "--report",
            "md:r.md",
            "--report",
            "html:r.html",
            "--report",
            "json:r.json",
            "--report",
            "junit:r.xml",
        ],
    );
    let log = text(&out);
    assert_eq!(out.status.code(), Some(1), "one did not complete: {log}");
    assert!(
        dir.join("target-started").exists(),
        "the wrapper marks a start"
    );
    let rec = read(&dir.join("gd.json"));
    assert_eq!(
        statuses(&rec),
        ["completed", "aborted", "skipped"],
        "{rec:#}"
    );
    assert_eq!(rec["status"], "incomplete");
    assert_eq!(rec["stopped_at"], "bad");
    let reason = rec["experiments"][2]["reason"].as_str().unwrap_or("");
    assert!(reason.contains("stopped escalating at `bad`"), "{reason}");
    assert!(
        rec["experiments"][2]["run_id"].is_null(),
        "a skipped one never ran"
    );
    // The score, recomputed from the stored journals.
    let score = score_from_store(dir, &rec);
    assert_eq!(rec["score"].as_f64(), Some(score), "{rec:#}");
    assert_eq!(rec["grade"], grade_of(score));
    assert!(
        score > 0.0 && score <= 25.0,
        "1 of 4 weight at most: {score}"
    );
    // The fair one held with a margin below 1: its value shows how factors are weighed.
    let first = &rec["experiments"][0];
    let v = first["value"].as_f64().unwrap_or(0.0);
    assert!(v > 0.5 && v < 0.98, "{first:#}");
    assert!(
        first["factors"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f["name"] == "margin")),
        "{first:#}"
    );
    assert_eq!(rec["ladder"]["reached"], "ok");
    assert_eq!(rec["ladder"]["step"], 1);
    // Both runs are in the store, tied to the GameDay.
    let q = journal(
        dir,
        &[
            "query",
            "--json",
            &format!(
                "SELECT count(*) FROM runs WHERE gameday_id = '{}'",
                rec["gameday_id"].as_str().unwrap_or("")
            ),
        ],
    );
    assert_eq!(q["rows"][0][0], 2, "{q}");
    // Reports: json is the record; md explains the points; html escapes; junit is valid.
    assert_eq!(read(&dir.join("r.json")), rec);
    let md = std::fs::read_to_string(dir.join("r.md")).expect("md");
    assert!(
        md.contains("How the points were earned") && md.contains("Escalation ladder"),
        "{md}"
    );
    assert!(md.contains("aborted: earns nothing"), "{md}");
    let html = std::fs::read_to_string(dir.join("r.html")).expect("html");
    assert!(!html.contains("<b>one</b>"), "the title is escaped");
    assert!(
        html.contains("&lt;b&gt;") || html.contains("\\&lt;b\\&gt;"),
        "{html}"
    );
    let xml = std::fs::read_to_string(dir.join("r.xml")).expect("xml");
    assert!(
        xml.contains("tests=\"3\"")
            && xml.contains("failures=\"1\"")
            && xml.contains("skipped=\"1\""),
        "{xml}"
    );
    assert!(xmllint_ok(&dir.join("r.xml")), "{xml}");
}

#[test]
fn continue_on_failure_runs_the_rest_requires_still_skips_and_the_trend_has_both() {
    let d = common::tmp();
    let dir = d.path();
    let gd = format!(
        "title: series two\ntarget: {}\nexperiments:\n  - id: bad\n    experiment: {}\n  - id: needs-bad\n    requires: [bad]\n    path: ok.yaml\n  - id: good\n    path: ok.yaml\n",
        target(dir),
        exp("a breach first", Fares::Badly),
    );
    setup(dir, &gd);
    let first = gameday(dir, &["gd.yaml", "--json"]);
    assert_eq!(first.status.code(), Some(1), "{}", text(&first));
    let first: Value = serde_json::from_slice(&first.stdout).expect("--json: the record alone");
    assert_eq!(statuses(&first), ["aborted", "skipped", "skipped"]);
    assert_eq!(first["score"], 0.0);
    assert_eq!(first["grade"], "F");
    let second = gameday(dir, &["gd.yaml", "--json", "--continue-on-failure"]);
    assert_eq!(second.status.code(), Some(1), "{}", text(&second));
    let second: Value = serde_json::from_slice(&second.stdout).expect("json");
    assert_eq!(statuses(&second), ["aborted", "skipped", "completed"]);
    let why = second["experiments"][1]["reason"].as_str().unwrap_or("");
    assert!(why.contains("requires `bad` (aborted)"), "{why}");
    let score = score_from_store(dir, &second);
    assert_eq!(second["score"].as_f64(), Some(score));
    assert!(score > 0.0, "the good one earned points");
    // The trend: both GameDays of the title, and the second knew the first.
    assert_eq!(second["previous"][0]["gameday_id"], first["gameday_id"]);
    let t = journal(dir, &["trend", "--gameday", "series two", "--json"]);
    let ids: Vec<&Value> = t["gamedays"]
        .as_array()
        .expect("gamedays")
        .iter()
        .map(|g| &g["gameday_id"])
        .collect();
    assert_eq!(ids, [&first["gameday_id"], &second["gameday_id"]], "{t}");
    assert_eq!(t["last_change"].as_f64(), Some(score), "{t}");
}

#[test]
fn bad_input_is_exit_2_with_file_line_key_and_a_suggestion_and_nothing_runs() {
    let d = common::tmp();
    let dir = d.path();
    let cases = [
        // A typo in the GameDay's own keys.
        (
            format!("title: t\ntarget: {}\nexperiments:\n  - id: a\n    path: ok.yaml\n    wieght: 2\n", target(dir)),
            "gd.yaml:6:5",
            "did you mean `weight`",
        ),
        // A typo inside an inline experiment: the GameDay file's line.
        (
            format!("title: t\ntarget: {}\nexperiments:\n  - id: a\n    experiment:\n      title: x\n      load: {{workload: workload.yaml}}\n      method: [{{stage: s, duration: 1s, sessions: 10%}}]\n      faults: []\n      gatse: []\n", target(dir)),
            "gd.yaml:10:7",
            "did you mean `gates`",
        ),
        // `requires` naming a later experiment.
        (
            format!("title: t\ntarget: {}\nexperiments:\n  - id: a\n    path: ok.yaml\n    requires: [b]\n  - id: b\n    path: ok.yaml\n", target(dir)),
            "gd.yaml:6:16",
            "comes later",
        ),
    ];
    for (gd, at, hint) in cases {
        setup(dir, &gd);
        let out = gameday(dir, &["gd.yaml"]);
        let err = text(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(at), "{at}: {err}");
        assert!(err.contains(hint), "{hint}: {err}");
    }
    assert!(
        !dir.join("target-started").exists(),
        "nothing reached the target"
    );
    // Its schema is published.
    let out = Command::new(brownout())
        .args(["gameday", "--schema"])
        .output()
        .expect("schema");
    let schema: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(schema["properties"]["experiments"].is_object(), "{schema}");
}

#[test]
fn a_refused_experiment_is_exit_3_and_a_dry_run_sends_nothing_and_expects_a_score() {
    let d = common::tmp();
    let dir = d.path();
    let gd = format!(
        "title: dry\ntarget: {}\nexperiments:\n  - id: ok\n    path: ok.yaml\n  - id: bad\n    experiment: {}\n",
        target(dir),
        exp("a breach", Fares::Badly)
    );
    setup(dir, &gd);
    let out = gameday(dir, &["gd.yaml", "--dry-run", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let rec: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(rec["dry_run"], true);
    assert_eq!(statuses(&rec), ["checked", "checked"]);
    let ok = &rec["experiments"][0]["expected"];
    assert_eq!(ok["verdict"], "holds", "{rec:#}");
    assert_eq!(
        rec["experiments"][1]["expected"]["verdict"], "breaches",
        "{rec:#}"
    );
    let s = rec["score"].as_f64().expect("an expected score");
    assert!(s > 0.0 && s <= 50.0, "the first alone at most: {s}");
    assert!(
        !dir.join("target-started").exists(),
        "a dry run starts no target"
    );
    // A production label on the GameDay reaches every experiment: refused, exit 3.
    let gd = format!(
        "title: prod\nlabels: {{env: production}}\ntarget: {}\nexperiments:\n  - id: ok\n    path: ok.yaml\n  - id: two\n    path: ok.yaml\n",
        target(dir)
    );
    setup(dir, &gd);
    let out = gameday(dir, &["gd.yaml", "--json"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let rec: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(statuses(&rec), ["refused", "skipped"]);
    assert!(
        !dir.join("target-started").exists(),
        "a refused run starts no target"
    );
}

/// A GameDay whose first experiment has a 60 s stage: started, waited for until that
/// experiment runs, then `stop` (which gets the child, its stdin a pipe), then its end.
fn stop_long(dir: &Path, extra: &[&str], stop: impl FnOnce(&mut std::process::Child)) -> Output {
    let long = exp("long", Fares::Well).replace("duration: 1s", "duration: 60s");
    let gd = format!(
        "title: stopped\ntarget: {}\nexperiments:\n  - id: long\n    experiment: {long}\n  - id: next\n    path: ok.yaml\n",
        target(dir)
    );
    setup(dir, &gd);
    let mut child = Command::new(brownout())
        .args([
            "gameday",
            "gd.yaml",
            "--json",
            "--journal",
            "gd.json",
            "--status",
            "live.json",
        ])
        .args(["--policy", "policy.yaml"])
        .args(extra)
        .arg("--store")
        .arg(dir.join("store.sqlite"))
        .current_dir(dir)
        .env("XDG_DATA_HOME", dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // Wait until the first experiment has reached its target, then into its stage.
    let until = Instant::now() + Duration::from_secs(60);
    let started = || {
        let live = std::fs::read_to_string(dir.join("live.json")).unwrap_or_default();
        live.contains("\"running\"") && dir.join("target-started").exists()
    };
    while !started() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
    }
    let ready = started();
    if ready {
        // Past the 1 s baseline into the stage. Left as a sleep: a GameDay shows its
        // experiment `running` but not the experiment's stage (the inner run has no status
        // file and prints no progress off a terminal), so there is no state to wait on.
        std::thread::sleep(Duration::from_secs(3));
        stop(&mut child);
    } else {
        let _ = child.kill();
    }
    let out = child.wait_with_output().expect("wait");
    assert!(ready, "the GameDay never started: {}", text(&out));
    out
}

/// The GameDay ended interrupted at `long`, whose run was interrupted with its faults
/// removed.
fn assert_stopped_at_long(dir: &Path, out: &Output) {
    assert_eq!(out.status.code(), Some(130), "{}", text(out));
    let rec = read(&dir.join("gd.json"));
    assert_eq!(rec["status"], "interrupted");
    assert_eq!(rec["stopped_at"], "long");
    assert_eq!(statuses(&rec), ["interrupted", "skipped"]);
    let id = rec["experiments"][0]["run_id"].as_str().expect("run id");
    let j = journal(dir, &["show", id, "--json"]);
    assert_eq!(j["status"], "interrupted");
    let removal = &j["rollbacks"][0];
    assert_eq!(removal["action"], "remove faults", "{j:#}");
    assert_eq!(removal["ok"], true);
}

#[test]
fn sigint_stops_the_gameday_where_it_is_with_the_faults_removed_exit_130() {
    let d = common::tmp();
    let dir = d.path();
    let out = stop_long(dir, &[], |child| {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        )
        .expect("SIGINT");
    });
    assert_stopped_at_long(dir, &out);
}

/// A watcher (`brownout mcp`) that goes away closes the GameDay's stdin: the running
/// experiment stops as on SIGINT, not at its end.
#[test]
fn with_stop_on_stdin_eof_the_end_of_stdin_stops_the_running_experiment() {
    let d = common::tmp();
    let dir = d.path();
    let out = stop_long(dir, &["--stop-on-stdin-eof"], |child| {
        drop(child.stdin.take());
    });
    assert_stopped_at_long(dir, &out);
}

/// With `ladder_from_history`, an experiment may go one rung above what its title has
/// passed in the store: the GameDay's first experiment passing at 10 % (stored before the
/// next starts) lets the second reach 25 %; alone, the second is refused.
#[test]
fn the_ladder_against_history_applies_across_the_experiments() {
    let d = common::tmp();
    let dir = d.path();
    let step = |shares: &str| {
        exp("one title", Fares::Well).replace(
            "method: [{stage: all, duration: 1s, sessions: 100%}]",
            &format!("method: [{shares}]"),
        )
    };
    let low = step("{stage: low, duration: 1s, sessions: 10%}");
    let wide = step(
        "{stage: low, duration: 1s, sessions: 10%}, {stage: wide, duration: 1s, sessions: 25%}",
    );
    assert_ne!(low, wide);
    let policy = "ladder: [\"10%\", \"25%\"]\nladder_from_history: true\n";
    // Alone, in an empty store: refused.
    setup(
        dir,
        &format!(
            "title: ladder\ntarget: {}\nexperiments:\n  - id: wide\n    experiment: {wide}\n",
            target(dir)
        ),
    );
    std::fs::write(dir.join("policy.yaml"), policy).expect("policy");
    let out = gameday(dir, &["gd.yaml", "--json"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    // After the low one, in the same GameDay: allowed.
    setup(
        dir,
        &format!(
            "title: ladder\ntarget: {}\nexperiments:\n  - id: low\n    experiment: {low}\n  - id: wide\n    experiment: {wide}\n",
            target(dir)
        ),
    );
    std::fs::write(dir.join("policy.yaml"), policy).expect("policy");
    let out = gameday(dir, &["gd.yaml", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let rec: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(statuses(&rec), ["completed", "completed"]);
    assert_eq!(rec["ladder"]["widest_share"], 0.25);
}
