//! The seed incident's target: `examples/workloads/incident-agent.yaml` against the
//! fixture as a small server with a bounded pool (`--pool`, `--service-ms`,
//! `--queue-timeout-ms`, `--http`), live and in the simulator; and the open loop's latency
//! under a server that falls behind.

mod common;
#[path = "common/load.rs"]
mod support;

use brownout::load::{LoadOptions, LoadTarget};
use brownout_sim::Workload;
use common::{brownout, through, tmp};
use std::time::Duration;
use support::{opts, play, stdio, workload};

/// The seed incident's workload in the simulator: a few per cent of errors are absorbed,
/// half the calls failing sets off the retry storm against the client's own limiter.
#[test]
fn the_incident_workload_cascades_in_the_simulator() {
    let path = common::repo().join("examples/workloads/incident-agent.yaml");
    let text = std::fs::read_to_string(&path).expect("read the example");
    let w =
        Workload::from_str_named(&text, "incident-agent.yaml").unwrap_or_else(|e| panic!("{e}"));
    let sim = |p: f64| {
        let plan = brownout_core::Plan::from_str_named(
            &format!("seed: 1\nfaults:\n  - {{kind: error, tools: [\"*\"], probability: {p}}}\n"),
            "p.yaml",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        brownout_sim::simulate(&w, plan, &brownout_sim::SimOptions::default())
    };
    let calm = sim(0.05);
    assert!(calm.blast_radius < 0.01, "{}", calm.blast_radius);
    assert!(calm.attempt_amplification < 1.2);
    let storm = sim(0.5);
    assert!(storm.blast_radius > 0.1, "{}", storm.blast_radius);
    assert!(
        storm.attempt_amplification > 5.0,
        "{}",
        storm.attempt_amplification
    );
}

/// The same workload live, against the fixture as the small pooled server behind the relay:
/// the storm shows as attempts far above calls and the client's limiter rejecting them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_incident_workload_cascades_live() {
    let path = common::repo().join("examples/workloads/incident-agent.yaml");
    let text = std::fs::read_to_string(&path).expect("read the example");
    let w = Workload::from_str_live(&text, "incident-agent.yaml").unwrap_or_else(|e| panic!("{e}"));
    let server: Vec<String> = [
        brownout(),
        "fixture",
        "--pool",
        "10",
        "--service-ms",
        "20",
        "--queue-timeout-ms",
        "200",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let run = |p: f64| {
        let (w, server) = (w.clone(), server.clone());
        async move {
            let dir = tmp();
            let plan = format!(
                "seed: 1\nfaults:\n  - {{kind: error, tools: [\"*\"], probability: {p}}}\n"
            );
            let o = LoadOptions {
                duration: Some(Duration::from_secs(4)),
                ..opts(1, None)
            };
            play(&w, stdio(through(dir.path(), &plan, &server)), o)
                .await
                .0
        }
    };
    let calm = run(0.05).await;
    assert!(calm.calls > 100, "{calm:?}");
    assert!(calm.attempt_amplification < 1.5, "{calm:?}");
    let storm = run(0.5).await;
    assert!(storm.limiter_rejections > 0, "{storm:?}");
    assert!(storm.attempt_amplification > 3.0, "{storm:?}");
}

/// `brownout fixture --http`: one server, one pool, shared by every session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_fixture_shares_one_pool_between_sessions() {
    let port = common::http::free_port().to_string();
    let addr = format!("127.0.0.1:{port}");
    let mut child = std::process::Command::new(brownout())
        .args([
            "fixture",
            "--http",
            &addr,
            "--pool",
            "1",
            "--service-ms",
            "50",
            "--queue-timeout-ms",
            "5",
        ])
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the fixture");
    let url = format!("http://{addr}/mcp");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the fixture did not listen"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let w = workload(
        "tasks: 40
arrival: {mode: closed, concurrency: 8}
steps:
  - calls: [{tool: search_incidents, arguments: {query: db}}]
",
    );
    let target = LoadTarget::Http {
        url,
        headers: vec![],
    };
    let (s, _) = play(&w, target, opts(8, None)).await;
    let _ = child.kill();
    let _ = child.wait();
    // Eight sessions at once against one slot: most wait past the 5 ms queue timeout.
    assert_eq!(s.calls, 40);
    assert!(s.outcomes.get("error").copied().unwrap_or(0) > 0, "{s:?}");
    assert!(s.outcomes.get("ok").copied().unwrap_or(0) > 0, "{s:?}");
}

/// Open loop: when the server falls behind, the queue shows as latency measured from each
/// call's intended start, not as fewer calls (no coordinated omission).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_latency_counts_from_the_intended_start() {
    // One slot, 20 ms per call: 50 calls/s at most, against 100 arrivals/s for one second.
    let server: Vec<String> = [brownout(), "fixture", "--pool", "1", "--service-ms", "20"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let w = workload(
        "tasks: 100
arrival: {mode: open, rate_per_s: 100}
steps:
  - calls: [{tool: echo, arguments: {message: x}}]
",
    );
    let (s, _) = play(&w, stdio(server), opts(1, Some(3))).await;
    assert_eq!(s.calls, 100);
    assert_eq!(s.outcomes.get("ok").copied(), Some(100));
    // 100 calls take at least 2 s to serve; the last arrive after about 1 s, so they waited
    // about a second. A generator timing from the send would report 20 ms throughout.
    assert!(s.latency_ms.p99 >= 300.0, "{:?}", s.latency_ms);
    assert!(s.latency_ms.p50 >= 40.0, "{:?}", s.latency_ms);
}
