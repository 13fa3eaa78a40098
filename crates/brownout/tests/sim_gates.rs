//! `brownout sim --gate`: gates judged in virtual time, their verdicts in text and JSON, and
//! the exit codes (0 every gate held, 1 a gate breached, 2 a gate that does not parse).

mod common;
use common::*;
use serde_json::Value;
use std::process::Command;

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(brownout())
        .args(args)
        .current_dir(repo())
        .output()
        .expect("run brownout");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

const HEADLINE: [&str; 4] = [
    "sim",
    "--workload",
    "examples/sim/headline.yaml",
    "--tasks=2000",
];

#[test]
fn a_breached_gate_is_reported_and_exits_1() {
    let mut args = HEADLINE.to_vec();
    args.extend([
        "--plan",
        "examples/sim/errors-2pct.yaml",
        "--gate",
        "error_rate < 1% over 10s",
        "--gate",
        "p99 < 10s over 10s",
        "--json",
    ]);
    let (code, out, err) = run(&args);
    assert_eq!(code, 1, "{out}{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    let gates = v["gates"].as_array().expect("gates");
    assert_eq!(gates.len(), 2);
    assert_eq!(gates[0]["gate"], "error_rate < 1% over 10s");
    assert_eq!(gates[0]["breached"], true);
    assert!(gates[0]["first_breach_ms"].as_f64().is_some(), "{out}");
    assert!(
        gates[0]["worst"].as_f64().is_some_and(|w| w > 0.01),
        "{out}"
    );
    assert_eq!(gates[1]["breached"], false);
    assert_eq!(gates[1]["status"], "holding");
    // The text says the same.
    args.pop();
    let (code, out, err) = run(&args);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("gate error_rate < 1% over 10s  BREACHED at "),
        "{out}"
    );
    assert!(
        out.contains("gate p99 < 10s over 10s  held  worst "),
        "{out}"
    );
}

#[test]
fn gates_that_hold_exit_0() {
    let mut args = HEADLINE.to_vec();
    args.extend([
        "--gate",
        "error_rate < 1% over 10s",
        "--gate",
        "tcsr >= 99% over 500 calls",
    ]);
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("gate tcsr >= 99% over 500 calls  held  worst 100%"),
        "{out}"
    );
}

#[test]
fn a_gate_that_does_not_parse_points_at_the_column_and_exits_2() {
    let mut args = HEADLINE.to_vec();
    args.extend(["--gate", "error_rate < 5 over 10s"]);
    let (code, out, err) = run(&args);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("column 14"), "{err}");
    assert!(err.contains("did you mean `5%`?"), "{err}");
    assert!(
        err.contains("\n  error_rate < 5 over 10s\n               ^"),
        "{err}"
    );
    assert!(out.is_empty(), "{out}");
}
