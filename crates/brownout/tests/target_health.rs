//! Gates on the target's own health: `target_rss` read from a stdio target's process tree
//! (/proc) aborts a run against a server that leaks memory, before the host runs out, and
//! holds against one that does not (`target_cpu` read too); a remote target is read from
//! its Prometheus endpoint, and needs one.

mod common;

use common::*;
use serde_json::Value;
use std::process::Command;

fn experiment(fixture_flags: &str, stage_s: u32) -> String {
    format!(
        "title: target memory\nlabels: {{env: staging}}\ntarget: {{command: [brownout, fixture{fixture_flags}]}}\nload:\n  sessions: 2\n  workload: {{arrival: {{mode: closed, concurrency: 2}}, think_ms: 20, steps: [{{calls: [{{tool: echo, arguments: {{message: hi}}}}]}}]}}\nbaseline: 1s\nmethod:\n  - {{stage: one, duration: {stage_s}s, sessions: 10%}}\nfaults:\n  - {{kind: latency, tools: [echo], added_ms: 1}}\ngates:\n  - target_rss < 150MB for 1s\n  - error_rate < 50% over 2s\n  - target_cpu < 100% for 5s\n"
    )
}

fn run(text: &str) -> (i32, Value, String) {
    let dir = tmp();
    let file = dir.path().join("exp.yaml");
    std::fs::write(&file, text).expect("write");
    let journal = dir.path().join("j.json");
    let out = Command::new(brownout())
        .arg("run")
        .arg(&file)
        .arg("--journal")
        .arg(&journal)
        .arg("--store")
        .arg(dir.path().join("store.sqlite"))
        .current_dir(dir.path())
        .output()
        .expect("run");
    let j = std::fs::read_to_string(&journal)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), j, text)
}

#[test]
fn a_leaking_target_is_stopped_by_its_memory_gate() {
    // Each call keeps 256 KiB: ~100 calls/s grow the two servers by ~25 MB/s.
    let (code, j, text) = run(&experiment(", --leak-kb-per-call, \"256\"", 60));
    assert_eq!(code, 1, "{text}");
    assert_eq!(j["status"], "aborted", "{j:#}");
    assert!(
        j["breach"]["gate"]
            .as_str()
            .unwrap_or("")
            .starts_with("target_rss"),
        "{j:#}"
    );
    let worst = j["gates"][0]["worst"].as_f64().unwrap_or(0.0);
    assert!(worst >= 150e6, "worst reading {worst}");
    // Stopped by the gate, long before the stage's 60 s.
    let ran_ms =
        j["ended_unix_ms"].as_f64().unwrap_or(0.0) - j["started_unix_ms"].as_f64().unwrap_or(0.0);
    assert!(ran_ms < 50_000.0, "{ran_ms} ms");
}

#[test]
fn a_target_within_its_memory_holds_and_a_remote_one_needs_an_endpoint() {
    let (code, j, text) = run(&experiment("", 2));
    assert_eq!(code, 0, "{text}");
    let g = &j["gates"][0];
    assert_eq!(g["breached"], false, "{j:#}");
    let worst = g["worst"].as_f64().unwrap_or(0.0);
    assert!(
        worst > 1e6 && worst < 150e6,
        "the servers' memory was read: {worst}"
    );
    let cpu = &j["gates"][2];
    assert!(
        cpu["gate"].as_str().unwrap_or("").starts_with("target_cpu"),
        "{j:#}"
    );
    assert!(
        cpu["worst"].as_f64().is_some_and(|c| c >= 0.0),
        "CPU was read: {j:#}"
    );
    // A URL target: nothing to read the gate from without `health.prometheus`.
    let remote = experiment("", 2).replace(
        "{command: [brownout, fixture]}",
        "{url: \"http://127.0.0.1:9/mcp\"}",
    );
    let (code, _, text) = run(&remote);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("target.health"), "{text}");
}

/// A Prometheus text page on a loopback port, served to every request until the test ends.
fn metrics_server(body: &'static str) -> u16 {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for mut s in l.incoming().map_while(Result::ok) {
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

#[test]
fn a_remote_target_is_read_from_its_prometheus_endpoint() {
    let port = common::http::free_port();
    let mut cmd = Command::new(brownout());
    cmd.args(["fixture", "--http", &format!("127.0.0.1:{port}")]);
    let mut fixture = common::http::spawn(cmd);
    common::http::wait_port(port, &mut fixture);
    let metrics = metrics_server(
        "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes{instance=\"a\"} 600000000\nprocess_resident_memory_bytes{instance=\"b\"} 300000000\nprocess_cpu_seconds_total 12.5\n",
    );
    let remote = experiment("", 20).replace(
        "{command: [brownout, fixture]}",
        &format!("{{url: \"http://127.0.0.1:{port}/mcp\", health: {{prometheus: \"http://127.0.0.1:{metrics}/metrics\"}}}}"),
    );
    let (code, j, text) = run(&remote);
    assert_eq!(code, 1, "{text}");
    assert_eq!(j["status"], "aborted", "{j:#}");
    assert!(
        j["breach"]["gate"]
            .as_str()
            .unwrap_or("")
            .starts_with("target_rss"),
        "{j:#}"
    );
    assert_eq!(
        j["breach"]["value"], 900e6,
        "summed over the metric's series: {j:#}"
    );
}
