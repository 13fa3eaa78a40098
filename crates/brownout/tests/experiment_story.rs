//! The first seed document's story, as it is in examples/experiments/incident-{1..4}.yaml:
//! three experiments complete green, the fourth (90 % pool squeeze, unbounded retries,
//! three pods) is aborted by its 1 % gate and its faults leave within one tick.

mod common;
#[path = "experiment_support/mod.rs"]
mod support;

use common::{brownout, repo};
use std::process::Command;

fn run(name: &str) -> (i32, serde_json::Value) {
    let dir = common::tmp();
    let journal = dir.path().join("journal.json");
    let bin = std::path::Path::new(brownout()).parent().expect("bin dir");
    let out = Command::new(brownout())
        .arg("run")
        .arg(format!("examples/experiments/{name}"))
        .arg("--journal")
        .arg(&journal)
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .current_dir(repo())
        .output()
        .expect("run");
    let text = std::fs::read_to_string(&journal).unwrap_or_else(|e| {
        panic!(
            "{name}: no journal ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let j: serde_json::Value = serde_json::from_str(&text).expect("json");
    support::valid_journal(&j);
    (out.status.code().unwrap_or(-1), j)
}

#[test]
fn three_greens_then_the_fourth_experiment_is_aborted_by_its_one_percent_gate() {
    for name in ["incident-1.yaml", "incident-2.yaml", "incident-3.yaml"] {
        let (code, j) = run(name);
        assert_eq!(code, 0, "{name}: {j}");
        assert_eq!(j["status"], "completed", "{name}");
        let injected: u64 = j["stages"]
            .as_array()
            .expect("stages")
            .iter()
            .flat_map(|s| s["injections"].as_object().into_iter().flatten())
            .map(|(_, n)| n.as_u64().unwrap_or(0))
            .sum();
        assert!(injected > 0, "{name}: no fault was injected: {j}");
    }
    let (code, j) = run("incident-4.yaml");
    assert_eq!(code, 1, "{j}");
    assert_eq!(j["status"], "aborted");
    let b = &j["breach"];
    assert_eq!(b["gate"], "error_rate < 1% over 3s");
    assert!(b["value"].as_f64().unwrap_or(0.0) >= 0.01, "{b}");
    // Within one evaluation tick (100 ms) of the breach, the faults had left the engine.
    let latency = b["abort_latency_ms"].as_f64().expect("abort latency");
    assert!((0.0..=100.0).contains(&latency), "{b}");
    let stages = j["stages"].as_array().expect("stages");
    let (last, before) = stages.split_last().expect("a stage");
    assert!(before.iter().all(|s| s["completed"] == true));
    assert_eq!(last["completed"], false);
    assert_eq!(j["rollbacks"][0]["action"], "remove faults");
}
