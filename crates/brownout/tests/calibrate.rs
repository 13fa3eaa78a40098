//! `brownout calibrate` against a known synthetic server (`brownout fixture --service-ms 20`):
//! the fitted model has the server's service time, and simulating the calibrated workload
//! reproduces the measured throughput and p95 within the bounds docs/simulator.md states.

mod common;

use common::{brownout, repo, tmp};
use serde_json::Value;
use std::process::Command;

#[test]
fn a_synthetic_server_is_reproduced_within_stated_bounds() {
    let dir = tmp();
    let out_file = dir.path().join("calibrated.yaml");
    let out = Command::new(brownout())
        .arg("calibrate")
        .arg(repo().join("examples/workloads/fixture-agent.yaml"))
        .args(["--duration", "3s", "--sessions", "4", "--json", "-o"])
        .arg(&out_file)
        .args(["--", brownout(), "fixture", "--service-ms", "20"])
        .output()
        .expect("calibrate");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("json");
    let tools = r["fit"]["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 3, "{r:#}");
    for t in tools {
        // 20 ms of service plus the stdio round trip: well above 20, well below 60.
        let p50 = t["p50_ms"].as_f64().expect("p50");
        assert!((20.0..60.0).contains(&p50), "{t}");
        assert_eq!(t["error_rate"], 0.0, "{t}");
    }
    let m = &r["comparison"]["measured"];
    let s = &r["comparison"]["simulated"];
    let close = |a: f64, b: f64, tol: f64| (a - b).abs() <= tol * a.abs().max(1e-9);
    let (mt, st) = (
        m["throughput_per_s"].as_f64().expect("m"),
        s["throughput_per_s"].as_f64().expect("s"),
    );
    assert!(
        close(mt, st, 0.25),
        "throughput measured {mt} simulated {st}"
    );
    let (mp, sp) = (
        m["p95_ms"].as_f64().expect("m"),
        s["p95_ms"].as_f64().expect("s"),
    );
    assert!(close(mp, sp, 0.25), "p95 measured {mp} simulated {sp}");
    // The file is a workload the simulator runs.
    let text = std::fs::read_to_string(&out_file).expect("written");
    assert!(text.contains("name: calibrated"), "{text}");
    let sim = Command::new(brownout())
        .args(["sim", "--workload"])
        .arg(&out_file)
        .args(["--tasks", "100"])
        .output()
        .expect("sim");
    assert!(
        sim.status.success(),
        "{}",
        String::from_utf8_lossy(&sim.stderr)
    );
}

#[test]
fn a_target_that_cannot_start_is_exit_4_and_a_bad_workload_exit_2() {
    let out = Command::new(brownout())
        .arg("calibrate")
        .arg(repo().join("examples/workloads/fixture-agent.yaml"))
        .args(["--duration", "1s", "--", "/nonexistent/server"])
        .output()
        .expect("calibrate");
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(brownout())
        .args([
            "calibrate",
            "/nonexistent/w.yaml",
            "--",
            brownout(),
            "fixture",
        ])
        .output()
        .expect("calibrate");
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
