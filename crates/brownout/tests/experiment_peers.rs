//! `brownout run` against third-party servers: the official Python SDK (over stdio behind
//! brownout's relay, and over streamable HTTP) and server-everything.

mod common;
#[path = "experiment_support/mod.rs"]
mod support;

use support::*;

const ECHO_WORKLOAD: &str = "arrival: {mode: closed, concurrency: 4}\nsteps:\n  - calls: [{tool: echo, arguments: {message: hi}}]\nservers:\n  - name: s\n    tools:\n      echo: {latency: {added_ms: 2}}\n";

fn echo_experiment(target: &str) -> Exp<'_> {
    Exp {
        target,
        workload: ECHO_WORKLOAD,
        sessions: 4,
        faults: "[{kind: latency, tools: [echo], added_ms: 5}]",
        gates: "[\"error_rate < 5% over 2s\", \"p99 < 5s over 2s\"]",
        probes: "[{probe: mcp, call: {tool: echo, arguments: {message: probe}}, samples: 3}]",
        ..Exp::fixture_green()
    }
}

fn assert_green(target: &str) {
    let dir = common::tmp();
    let (code, j, out) = run_experiment(dir.path(), &echo_experiment(target), &[]);
    assert_eq!(code, 0, "{out}\n{j}");
    valid_journal(&j);
    assert_eq!(j["status"], "completed");
    let calls: u64 = j["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .map(|s| s["slis"]["calls"].as_u64().unwrap_or(0))
        .sum();
    assert!(calls > 0, "{j}");
}

fn yaml_list(cmd: &[String]) -> String {
    let quoted: Vec<String> = cmd.iter().map(|c| format!("\"{c}\"")).collect();
    format!("{{command: [{}]}}", quoted.join(", "))
}

#[test]
fn a_green_experiment_against_the_python_sdk_over_stdio() {
    assert_green(&yaml_list(&common::python_server()));
}

#[test]
fn a_green_experiment_against_the_python_sdk_over_http() {
    let (_g, url) = common::http::python_http(&[]);
    assert_green(&format!("{{url: \"{url}\"}}"));
}

#[test]
fn a_green_experiment_against_server_everything() {
    assert_green(&yaml_list(&common::everything()));
}
