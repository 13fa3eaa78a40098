//! `brownout search`'s wider modes through the CLI: adaptive seeds (`--precision`) reach the
//! asked precision or say which budget stopped them, and three to five dimensions find the
//! barely-violating point nearest the weakest corner of a model whose boundary is known (an
//! error rate linear in the marked probabilities), with a map of the boundary — the same
//! answer on one thread or two.

mod common;

use common::{brownout, repo, tmp};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// No retries: the error rate follows the faults' probabilities.
const ONE_TOOL: &str = "name: plain\nseed: 5\ntasks: 3000\narrival: {mode: open, rate_per_s: 200}\nsteps:\n  - calls: [{tool: lookup}]\nservers:\n  - name: s\n    concurrency: 64\n    tools:\n      lookup: {latency: {added_ms: 5}}\n";
const ONE_PLAN: &str = "seed: 1\nfaults:\n  - {id: flaky, kind: error, tools: [lookup], probability: {search: [0, 0.2]}}\n";
/// Three tools called once each a task: the error rate is the mean of the three
/// probabilities, so `error_rate < 5%` breaks where p1 + p2 + p3 = 0.15.
const THREE_TOOLS: &str = "name: three\nseed: 5\ntasks: 1500\narrival: {mode: open, rate_per_s: 200}\nsteps:\n  - calls: [{tool: a}, {tool: b}, {tool: c}]\nservers:\n  - name: s\n    concurrency: 64\n    tools:\n      a: {latency: {added_ms: 5}}\n      b: {latency: {added_ms: 5}}\n      c: {latency: {added_ms: 5}}\n";
const THREE_PLAN: &str = "seed: 1\nfaults:\n  - {id: fa, kind: error, tools: [a], probability: {search: [0, 0.2]}}\n  - {id: fb, kind: error, tools: [b], probability: {search: [0, 0.2]}}\n  - {id: fc, kind: error, tools: [c], probability: {search: [0, 0.2]}}\n";
const GATE: &str = "error_rate < 5% over 5s min 500 calls";
/// Over (nearly) the whole run: the worst window's noise does not move the boundary below
/// the mean's (4,500 calls; evaluated from the 4,000th on).
const WHOLE_RUN: &str = "error_rate < 5% over 60s min 4000 calls";

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p.display().to_string()
}

fn search(dir: &Path, plan: &str, workload: &str, extra: &[&str]) -> Output {
    let plan_path = write(dir, "plan.yaml", plan);
    let workload = write(dir, "w.yaml", workload);
    let gate = if plan.contains("tools: [a]") {
        WHOLE_RUN
    } else {
        GATE
    };
    Command::new(brownout())
        .args([
            "search",
            "--plan",
            &plan_path,
            "--workload",
            &workload,
            "--gate",
            gate,
        ])
        .args(extra)
        .output()
        .expect("search")
}

fn json(out: &Output) -> Value {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

#[test]
fn adaptive_seeds_reach_the_precision_asked() {
    let dir = tmp();
    let args = ["--precision", "0.004", "--json"];
    let r = json(&search(dir.path(), ONE_PLAN, ONE_TOOL, &args));
    let seg = &r["segments"][0];
    let ad = &r["adaptive"][0];
    assert_eq!(ad["reached"], true, "{ad:#}");
    assert!(ad["half_width"].as_f64().expect("half") <= 0.004, "{ad:#}");
    let b = seg["boundary"][0].as_f64().expect("a boundary");
    let (lo, hi) = (
        seg["interval"][0][0].as_f64().expect("lo"),
        seg["interval"][1][0].as_f64().expect("hi"),
    );
    assert!(
        lo <= b && b <= hi && hi - lo <= 0.008 + 1e-9,
        "{lo} {b} {hi}"
    );
    // An error rate of 5 % needs a probability near 0.05 (no retries); the worst 5 s
    // window's noise puts the boundary a little below it.
    assert!((0.03..0.06).contains(&b), "{b}");
    // The seeds listed are the seeds used, more than the first round's 8.
    let n = ad["seeds"].as_u64().expect("seeds");
    assert_eq!(r["seeds"].as_array().map(Vec::len), Some(n as usize));
    assert_eq!(seg["method"], "adaptive per-seed bisection");
}

#[test]
fn a_budget_that_runs_out_is_reported_with_the_precision_achieved() {
    let dir = tmp();
    let args = ["--precision", "0.0001", "--max-seeds", "10"];
    let out = search(dir.path(), ONE_PLAN, ONE_TOOL, &args);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("stopped by max-seeds before ±0.0001") && text.contains("achieved ±"),
        "{text}"
    );
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let r = json(&search(dir.path(), ONE_PLAN, ONE_TOOL, &json_args));
    let ad = &r["adaptive"][0];
    assert_eq!(
        (&ad["reached"], &ad["stopped"]),
        (&false.into(), &"max-seeds".into())
    );
    assert_eq!(ad["seeds"], 10);
    assert!(ad["half_width"].as_f64().expect("achieved") > 0.0001);
}

#[test]
fn three_dimensions_find_the_nearest_point_of_a_linear_boundary() {
    let dir = tmp();
    let barely = dir.path().join("barely.yaml");
    let args = [
        "--seeds",
        "3",
        "--max-evals",
        "240",
        "--json",
        "-o",
        barely.to_str().expect("path"),
    ];
    let r = json(&search(dir.path(), THREE_PLAN, THREE_TOOLS, &args));
    assert_eq!(r["method"], "gaussian-process level set", "{r:#}");
    // The boundary p1 + p2 + p3 = 0.15 is, normalised by the ranges (0.2), the plane
    // x1 + x2 + x3 = 0.75: its nearest point is (¼, ¼, ¼), at 0.75/√3 = 0.433.
    let d = r["nearest"]["distance"].as_f64().expect("a nearest point");
    assert!((0.39..0.48).contains(&d), "{d}: {:#}", r["nearest"]);
    let v: Vec<f64> = r["barely"]["values"]
        .as_array()
        .expect("values")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect();
    let sum: f64 = v.iter().sum();
    assert!((0.135..0.17).contains(&sum), "{v:?}");
    assert!(r["barely"]["breaching"].as_f64().expect("share") >= 0.5);
    // The map: every point sampled, with its share breaching and its ρ, on both sides.
    let map = r["map"].as_array().expect("map");
    assert_eq!(map.len() as u64 * 3, r["evals"].as_u64().expect("evals"));
    assert!(map.iter().any(|p| p["breaching"] == 0.0));
    assert!(map.iter().any(|p| p["breaching"] == 1.0));
    assert!(r["evals"].as_u64().expect("evals") <= 240);
    // Written back with the values in the marks' places.
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
fn the_same_seed_gives_the_same_search_on_one_thread_or_two() {
    let dir = tmp();
    let run = |threads: &str, extra: &[&str]| {
        let mut args = vec![
            "--seeds",
            "3",
            "--max-evals",
            "90",
            "--json",
            "--threads",
            threads,
        ];
        args.extend_from_slice(extra);
        let mut r = json(&search(dir.path(), THREE_PLAN, THREE_TOOLS, &args));
        r["elapsed_ms"] = Value::Null;
        r
    };
    let (one, two) = (run("1", &[]), run("2", &[]));
    assert_eq!(one["map"], two["map"]);
    assert_eq!(one, two);
    // The genetic search too.
    assert_eq!(run("1", &["--method", "ga"]), run("2", &["--method", "ga"]));
    // Adaptive seeds, one dimension.
    let run1 = |threads: &str| {
        let args = ["--precision", "0.01", "--json", "--threads", threads];
        let mut r = json(&search(dir.path(), ONE_PLAN, ONE_TOOL, &args));
        r["elapsed_ms"] = Value::Null;
        r
    };
    assert_eq!(run1("1"), run1("2"));
}

#[test]
fn the_text_report_maps_the_boundary_and_the_example_runs_as_written() {
    let dir = tmp();
    let out = search(
        dir.path(),
        THREE_PLAN,
        THREE_TOOLS,
        &["--seeds", "3", "--max-evals", "90"],
    );
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("barely violating (nearest the weakest corner"),
        "{text}"
    );
    assert!(
        text.contains(
            "| probability | probability | probability | breaching | ρ (lower median; a breaching seed's at its first breach) |"
        ),
        "{text}"
    );
    // examples/search/cascade-4d.yaml, as its comment runs it (a small budget here).
    let out = Command::new(brownout())
        .current_dir(repo())
        .args([
            "search",
            "--plan",
            "examples/search/cascade-4d.yaml",
            "--workload",
        ])
        .args([
            "examples/sim/cascade.yaml",
            "--gate",
            "error_rate < 1% over 10s",
        ])
        .args(["--seeds", "2", "--max-evals", "24", "--json"])
        .output()
        .expect("search");
    let r = json(&out);
    assert_eq!(r["dimensions"].as_array().map(Vec::len), Some(4), "{r:#}");
    assert!(r["map"].as_array().is_some_and(|m| m.len() >= 10), "{r:#}");
}

#[test]
fn six_marks_are_refused() {
    let dir = tmp();
    let plan = "seed: 1\nfaults:\n".to_string()
        + &(0..6)
            .map(|k| format!("  - {{id: f{k}, kind: error, probability: {{search: [0, 0.1]}}}}\n"))
            .collect::<String>();
    let out = search(dir.path(), &plan, ONE_TOOL, &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("6 search marks; a search takes one to five"),
        "{err}"
    );
}
