//! Benchmark: how close the simulator comes to live runs.
//!
//! Run: `cargo bench -p brownout --bench calibrate` (release build). It measures
//! 1. calibration error: `brownout calibrate` against `brownout fixture --pool 10
//!    --service-ms 20` (8 stdio sessions, 5 s, the fixture-agent workload), the simulated
//!    throughput and p95 of the calibrated workload against the measured ones, three times;
//! 2. estimate-vs-actual error: `brownout run` of the example experiments (green,
//!    incident-1, incident-2, incident-3), each stage's predicted error rate and p95 against
//!    what happened, and whether the predicted verdict was right.
//!
//! It prints a table and writes `target/bench/calibrate.json`.

#[path = "support/proc_stats.rs"]
mod support;

use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn path_with(exe: &str) -> String {
    let bin = std::path::Path::new(exe).parent().expect("bin dir");
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn main() {
    let exe = support::brownout_exe();
    let mut cal = Vec::new();
    for k in 0..3 {
        let out = Command::new(&exe)
            .arg("calibrate")
            .arg(repo().join("examples/workloads/fixture-agent.yaml"))
            .args(["--duration", "5s", "--sessions", "8", "--json", "--"])
            .args([
                exe.as_str(),
                "fixture",
                "--pool",
                "10",
                "--service-ms",
                "20",
            ])
            .output()
            .expect("calibrate");
        let r: Value = serde_json::from_slice(&out.stdout).expect("calibrate json");
        let m = &r["comparison"]["measured"];
        let s = &r["comparison"]["simulated"];
        let rel = |k: &str| {
            let (a, b) = (
                m[k].as_f64().unwrap_or(f64::NAN),
                s[k].as_f64().unwrap_or(f64::NAN),
            );
            (b - a) / a
        };
        let (t, p) = (rel("throughput_per_s"), rel("p95_ms"));
        println!(
            "calibration {}: measured {:.0} calls/s p95 {:.1} ms; simulated {:.0} calls/s p95 {:.1} ms; error throughput {:+.1}% p95 {:+.1}%",
            k + 1,
            m["throughput_per_s"].as_f64().unwrap_or(0.0),
            m["p95_ms"].as_f64().unwrap_or(0.0),
            s["throughput_per_s"].as_f64().unwrap_or(0.0),
            s["p95_ms"].as_f64().unwrap_or(0.0),
            t * 100.0,
            p * 100.0
        );
        cal.push(json!({"throughput_error": t, "p95_error": p, "measured": m, "simulated": s}));
    }
    let dir = tempdir();
    let mut stages = Vec::new();
    for name in [
        "green.yaml",
        "incident-1.yaml",
        "incident-2.yaml",
        "incident-3.yaml",
    ] {
        let journal = dir.join(format!("{name}.json"));
        let _ = Command::new(&exe)
            .arg("run")
            .arg(format!("examples/experiments/{name}"))
            .args(["--no-store", "--journal"])
            .arg(&journal)
            .env("PATH", path_with(&exe))
            .current_dir(repo())
            .output()
            .expect("run");
        let Ok(text) = std::fs::read_to_string(&journal) else {
            println!("{name}: no journal");
            continue;
        };
        let j: Value = serde_json::from_str(&text).expect("journal");
        for st in j["stages"].as_array().into_iter().flatten() {
            let p = &st["prediction"];
            if p.is_null() {
                continue;
            }
            println!(
                "{name} stage {}: error rate predicted {:.3}% actual {:.3}%; p95 predicted {:.1} ms actual {:.1} ms; verdict {} ({})",
                st["stage"].as_str().unwrap_or(""),
                p["slis"]["error_rate"].as_f64().unwrap_or(0.0) * 100.0,
                st["slis"]["error_rate"].as_f64().unwrap_or(0.0) * 100.0,
                p["slis"]["p95_ms"].as_f64().unwrap_or(0.0),
                st["slis"]["p95_ms"].as_f64().unwrap_or(0.0),
                p["verdict"].as_str().unwrap_or(""),
                if p["error"]["verdict_right"] == true { "right" } else { "wrong" }
            );
            stages.push(json!({
                "experiment": name,
                "stage": st["stage"],
                "error_rate_error": p["error"]["error_rate"],
                "p95_error_ms": p["error"]["p95_ms"],
                "verdict_right": p["error"]["verdict_right"],
            }));
        }
    }
    let right = stages.iter().filter(|s| s["verdict_right"] == true).count();
    let abs = |k: &str| -> Vec<f64> {
        stages
            .iter()
            .filter_map(|s| s[k].as_f64().map(f64::abs))
            .collect()
    };
    let out = json!({
        "calibration": cal,
        "calibration_median_throughput_error": support::median(cal.iter().filter_map(|c| c["throughput_error"].as_f64()).collect()),
        "calibration_median_p95_error": support::median(cal.iter().filter_map(|c| c["p95_error"].as_f64()).collect()),
        "stages": stages,
        "estimate_median_abs_error_rate_error": support::median(abs("error_rate_error")),
        "estimate_median_abs_p95_error_ms": support::median(abs("p95_error_ms")),
        "verdicts_right": format!("{right}/{}", stages.len()),
    });
    let bench = repo().join("target/bench");
    let _ = std::fs::create_dir_all(&bench);
    let _ = std::fs::write(bench.join("calibrate.json"), out.to_string());
    println!("{out:#}");
}

fn tempdir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("brownout-bench-calibrate-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&d);
    d
}
