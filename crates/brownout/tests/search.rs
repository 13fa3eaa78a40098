//! `brownout search`: the boundary it reports is checked independently with `brownout sim`
//! (below it most seeds hold, above it most breach), the barely-violating experiment it
//! writes passes `experiment check`, and bad marks are located.

mod common;

use common::{brownout, repo, tmp};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// A plain workload with no retries: the error rate follows the fault's probability.
const WORKLOAD: &str = "name: plain\nseed: 5\ntasks: 3000\narrival: {mode: open, rate_per_s: 200}\nsteps:\n  - calls: [{tool: lookup}]\nservers:\n  - name: s\n    concurrency: 64\n    tools:\n      lookup: {latency: {added_ms: 5}}\n";
const PLAN: &str = "seed: 1\nfaults:\n  - {id: flaky, kind: error, tools: [lookup], probability: {search: [0, 0.2]}}\n";
const GATE: &str = "error_rate < 5% over 5s min 500 calls";

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p.display().to_string()
}

/// `brownout sim` of `plan` with the plan's seed and the simulation's set to `seed`: held?
fn holds(dir: &Path, plan_text: &str, seed: u64) -> bool {
    let plan = write(
        dir,
        "at.yaml",
        &plan_text.replace("seed: 1\n", &format!("seed: {seed}\n")),
    );
    let out = Command::new(brownout())
        .args(["sim", "--plan", &plan, "--workload"])
        .arg(dir.join("w.yaml"))
        .args(["--seed", &seed.to_string(), "--gate", GATE])
        .output()
        .expect("sim");
    match out.status.code() {
        Some(0) => true,
        Some(1) => false,
        other => panic!("sim: {other:?} {}", String::from_utf8_lossy(&out.stderr)),
    }
}

#[test]
fn the_boundary_holds_below_and_breaches_above_on_most_seeds() {
    let dir = tmp();
    write(dir.path(), "w.yaml", WORKLOAD);
    let plan = write(dir.path(), "plan.yaml", PLAN);
    let barely = dir.path().join("barely.yaml");
    let out = Command::new(brownout())
        .args(["search", "--plan", &plan, "--workload"])
        .arg(dir.path().join("w.yaml"))
        .args(["--gate", GATE, "--seeds", "6", "--json", "-o"])
        .arg(&barely)
        .output()
        .expect("search");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("json");
    let seg = &r["segments"][0];
    let b = seg["boundary"][0].as_f64().expect("a boundary");
    // An error rate of 5 % needs a probability near 0.05 (no retries).
    assert!((0.03..0.08).contains(&b), "{b}: {r:#}");
    assert_eq!(seg["method"], "per-seed bisection", "{r:#}");
    assert!(r["evals"].as_u64().expect("evals") <= 500);
    let (lo, hi) = (
        seg["interval"][0][0].as_f64().expect("lo"),
        seg["interval"][1][0].as_f64().expect("hi"),
    );
    assert!(lo <= b && b <= hi, "{lo} {b} {hi}");
    // Independently, with `brownout sim` on other seeds: δ below holds, δ above breaches.
    let delta = 0.02;
    let at = |v: f64| PLAN.replace("{search: [0, 0.2]}", &format!("{v}"));
    let seeds = 101..109u64;
    let below = seeds
        .clone()
        .filter(|&s| holds(dir.path(), &at(b - delta), s))
        .count();
    let above = seeds
        .clone()
        .filter(|&s| !holds(dir.path(), &at(b + delta), s))
        .count();
    assert!(
        below >= 6 && above >= 6,
        "below held {below}/8, above breached {above}/8"
    );
    // The file written back is a plan at the barely-violating value.
    let text = std::fs::read_to_string(&barely).expect("barely.yaml");
    assert!(!text.contains("search"), "{text}");
    let check = Command::new(brownout())
        .args(["plan", "check"])
        .arg(&barely)
        .output()
        .expect("check");
    assert!(check.status.success(), "{text}");
}

#[test]
fn an_experiment_is_written_back_barely_violating_and_checks() {
    let dir = tmp();
    let out_file = dir.path().join("barely.yaml");
    let out = Command::new(brownout())
        .arg("search")
        .arg(repo().join("examples/search/green-search.yaml"))
        .args(["--seeds", "3", "--json", "-o"])
        .arg(&out_file)
        .output()
        .expect("search");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(r["barely"]["rho"].as_f64().expect("rho") < 0.0, "{r:#}");
    // Written into another folder, its workload path is rewritten from there: it checks
    // where it is (it named `../workloads/…` of the examples' folder before, and failed).
    let check = Command::new(brownout())
        .args(["experiment", "check"])
        .arg(&out_file)
        .current_dir(dir.path())
        .env("PATH", path_with_brownout())
        .output()
        .expect("check");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
}

fn path_with_brownout() -> String {
    let bin = Path::new(brownout()).parent().expect("bin dir");
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn bad_marks_and_missing_inputs_are_clear_errors() {
    let dir = tmp();
    write(dir.path(), "w.yaml", WORKLOAD);
    let bad = write(
        dir.path(),
        "bad.yaml",
        "faults:\n  - {kind: error, probability: {search: [0.3, 0.1]}}\n",
    );
    let run = |args: &[&str]| {
        let out = Command::new(brownout())
            .arg("search")
            .args(args)
            .output()
            .expect("search");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let w = dir.path().join("w.yaml").display().to_string();
    let (code, err) = run(&["--plan", &bad, "--workload", &w, "--gate", GATE]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("bad.yaml:2:") && err.contains("LO must be below HI"),
        "{err}"
    );
    let plain = write(
        dir.path(),
        "plain.yaml",
        "faults:\n  - {kind: error, probability: 0.1}\n",
    );
    let (code, err) = run(&["--plan", &plain, "--workload", &w, "--gate", GATE]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no search mark"), "{err}");
    let plan = write(dir.path(), "plan.yaml", PLAN);
    let (code, err) = run(&["--plan", &plan, "--workload", &w]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--gate"), "{err}");
    // A value the plan refuses at an end of the range is named before any search.
    let over = write(
        dir.path(),
        "over.yaml",
        "faults:\n  - {kind: error, probability: {search: [0, 2]}}\n",
    );
    let (code, err) = run(&["--plan", &over, "--workload", &w, "--gate", GATE]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("probability"), "{err}");
    // A marked file given to a command that runs it says what the mark is for.
    let out = Command::new(brownout())
        .args(["plan", "check", &plan])
        .output()
        .expect("check");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("plan.yaml:3:") && err.contains("is for `brownout search`"),
        "{err}"
    );
}

/// `--live`: the simulator's boundary confirmed against the real fixture in guarded runs.
/// A third of the workload's calls are searches, so failing a share p of them makes an
/// error rate of about p/3: the 1 % gate breaks near p = 3 %.
#[test]
fn live_runs_bracket_the_real_boundary_and_are_all_stored() {
    let dir = tmp();
    let store = dir.path().join("store.sqlite");
    let out = Command::new(brownout())
        .arg("search")
        .arg(repo().join("examples/search/fixture-live.yaml"))
        .args(["--live", "--live-runs", "5", "--json", "--policy"])
        .arg(repo().join("examples/policies/seed-policy.yaml"))
        .arg("--store")
        .arg(&store)
        .env("PATH", path_with_brownout())
        .output()
        .expect("search --live");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("json");
    let live = &r["live"];
    let (hold, brk) = (
        live["hold"].as_f64().expect("a value that held"),
        live["brk"].as_f64().expect("a value that breached"),
    );
    assert!(hold < brk, "{live:#}");
    assert!(
        hold <= 0.045 && brk >= 0.015,
        "the 3 % boundary is near [{hold}, {brk}]"
    );
    assert!(live["residual"].as_f64().is_some(), "{live:#}");
    let runs = live["runs"].as_array().expect("runs");
    assert!(runs.len() >= 3 && runs.len() <= 5, "{live:#}");
    let listed = Command::new(brownout())
        .args(["journal", "list", "--json", "--store"])
        .arg(&store)
        .output()
        .expect("list");
    let listed: Value = serde_json::from_slice(&listed.stdout).expect("list json");
    assert_eq!(
        listed.as_array().map(Vec::len),
        Some(runs.len()),
        "{listed:#}"
    );
}

/// Bad seed counts are refused before any search (`--seeds 0` ran one seed; a huge count
/// allocated without bound).
#[test]
fn seed_counts_out_of_range_are_refused() {
    let dir = tmp();
    write(dir.path(), "w.yaml", WORKLOAD);
    let plan = write(dir.path(), "plan.yaml", PLAN);
    for extra in [
        &["--seeds", "0"][..],
        &["--seeds", "10001"],
        &["--precision", "0.01", "--max-seeds", "100000000"],
    ] {
        let out = Command::new(brownout())
            .args(["search", "--plan", &plan, "--workload"])
            .arg(dir.path().join("w.yaml"))
            .args(["--gate", GATE])
            .args(extra)
            .output()
            .expect("search");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains("1..=10000"), "{extra:?}: {err}");
    }
}

/// Review G12: `--tol nan` answered "boundary probability 0.1 (95% interval 0.1 … 0.1)"
/// and `--tol inf` "0.15 … 0.15", exit 0 — a zero-width interval from nothing; `--precision
/// 0`, a negative or `nan` one ran to the seed cap. Each is refused before any search.
#[test]
fn tolerances_and_precisions_that_are_not_numbers_above_zero_are_refused() {
    let dir = tmp();
    write(dir.path(), "w.yaml", WORKLOAD);
    let plan = write(dir.path(), "plan.yaml", PLAN);
    for (flag, value) in [
        ("--tol", "nan"),
        ("--tol", "inf"),
        ("--tol", "0"),
        ("--tol", "-1"),
        ("--tol", "2"),
        ("--precision", "0"),
        ("--precision", "-0.01"),
        ("--precision", "nan"),
        ("--precision", "inf"),
    ] {
        let out = Command::new(brownout())
            .args(["search", "--plan", &plan, "--workload"])
            .arg(dir.path().join("w.yaml"))
            .args(["--gate", GATE, "--max-evals", "10"])
            .arg(format!("{flag}={value}"))
            .output()
            .expect("search");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {err}");
        assert!(
            err.contains(flag) && err.contains("above 0"),
            "{flag} {value}: {err}"
        );
    }
}

/// A search whose `--time` runs out inside its first simulations has no result: it says so
/// (exit 4), not "no crossing" (exit 3), names no precision nobody asked for, and does not
/// draw a chart past the budget.
#[test]
fn a_budget_spent_before_any_seed_finished_says_no_result() {
    let dir = tmp();
    write(dir.path(), "w.yaml", WORKLOAD);
    let plan = write(dir.path(), "plan.yaml", PLAN);
    let chart = dir.path().join("rho.svg");
    // Fifty million tasks a simulation: minutes each in a debug build, so the 1 s budget
    // stops inside the first ones (checked inside the simulation, not only between them).
    let out = Command::new(brownout())
        .args(["search", "--plan", &plan, "--workload"])
        .arg(dir.path().join("w.yaml"))
        .args(["--gate", GATE, "--seeds", "2", "--threads", "1"])
        .args(["--tasks", "50000000", "--time", "1s", "--chart"])
        .arg(&chart)
        .output()
        .expect("search");
    let (so, se) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(4), "{so}\n{se}");
    assert!(so.contains("no result: the budget"), "{so}");
    assert!(
        !so.contains("no crossing") && !so.contains("precision"),
        "{so}"
    );
    assert!(se.contains("--chart not drawn"), "{se}");
    assert!(!chart.exists());
}

/// A mark on a stage's `relays` is refused: the simulator has no fleet, so nothing varied
/// along it (review F28: "no crossing" after 16 simulations).
#[test]
fn a_mark_on_relays_is_refused() {
    let dir = tmp();
    let text = std::fs::read_to_string(repo().join("examples/search/green-search.yaml"))
        .expect("example")
        .replace(
            "{stage: canary, duration: 5s, sessions: 10%}",
            "{stage: canary, duration: 5s, sessions: 10%, relays: {search: [10%, 100%]}}",
        )
        .replace("probability: {search: [0, 0.5]}", "probability: 0.2");
    let file = write(dir.path(), "fleet.yaml", &text);
    let out = Command::new(brownout())
        .args(["search", &file])
        .output()
        .expect("search");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("a mark on `relays`"), "{err}");
}
