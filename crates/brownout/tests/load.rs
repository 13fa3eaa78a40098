//! `brownout load` and `brownout::load::run` against real servers: the built-in fixture over
//! stdio (directly and through the relay) and over HTTP (through `proxy http`), the official
//! Python SDK server and server-everything over stdio.

mod common;

use brownout::load::{self, LoadEvent, LoadOptions, LoadSummary, LoadTarget};
use brownout_core::event::Outcome;
use brownout_sim::Workload;
use common::{brownout, events, fixture, through, tmp};
use std::time::Duration;

/// Nothing here should take long; a hang fails the test instead of the suite.
const WATCHDOG: Duration = Duration::from_secs(120);

fn workload(yaml: &str) -> Workload {
    Workload::from_str_live(yaml, "w.yaml").unwrap_or_else(|e| panic!("{e}"))
}

async fn play(
    w: &Workload,
    target: LoadTarget,
    opts: LoadOptions,
) -> (LoadSummary, Vec<LoadEvent>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let summary = tokio::time::timeout(WATCHDOG, load::run(w, target, opts, tx))
        .await
        .expect("the load ended in time")
        .unwrap_or_else(|e| panic!("load failed: {e}"));
    let mut evs = Vec::new();
    while let Ok(e) = rx.try_recv() {
        evs.push(e);
    }
    (summary, evs)
}

fn stdio(command: Vec<String>) -> LoadTarget {
    LoadTarget::Stdio { command }
}

fn opts(sessions: usize, seed: Option<u64>) -> LoadOptions {
    LoadOptions {
        sessions,
        seed,
        ..LoadOptions::default()
    }
}

fn calls(evs: &[LoadEvent]) -> Vec<&brownout_core::slo::CallObservation> {
    evs.iter()
        .filter_map(|e| match e {
            LoadEvent::Call(c) => Some(c),
            LoadEvent::Task(_) => None,
        })
        .collect()
}

fn count(evs: &[LoadEvent], tool: &str, outcome: Outcome) -> usize {
    calls(evs)
        .iter()
        .filter(|c| c.tool.as_deref() == Some(tool) && c.outcome == outcome)
        .count()
}

/// Every call of the fixture's tools needs its argument (`message`, `query`, `id`): a call
/// whose arguments did not arrive is answered `isError`. The echo without arguments proves
/// the difference shows.
const ARGS: &str = "tasks: 40
arrival: {mode: closed, concurrency: 4}
steps:
  - calls:
      - {tool: echo, arguments: {message: load-arg-7}}
      - {tool: search_incidents, arguments: {query: db, limit: 2}, repeat: 2}
  - calls:
      - {tool: get_incident, arguments: {id: INC-1}}
      - {tool: echo, critical: false}
client: {timeout_ms: 10000, degrade: true}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_fixture_arguments_arrive_and_the_count_matches_the_schedule() {
    let dir = tmp();
    let w = workload(ARGS);
    let target = stdio(through(dir.path(), "faults: []\n", &fixture()));
    let (s, evs) = play(&w, target, opts(1, None)).await;
    assert_eq!(s.tasks, 40);
    assert_eq!(s.tasks_ok, 40, "{s:?}");
    assert_eq!(s.calls, 40 * 5, "{s:?}");
    assert_eq!(calls(&evs).len(), 200);
    assert_eq!(count(&evs, "search_incidents", Outcome::Ok), 80);
    assert_eq!(count(&evs, "get_incident", Outcome::Ok), 40);
    // 40 echoes with their message, 40 without: ok and tool_error.
    assert_eq!(count(&evs, "echo", Outcome::Ok), 40);
    assert_eq!(count(&evs, "echo", Outcome::ToolError), 40);
    // The relay saw every call the schedule asked for, once.
    let relayed = events(dir.path())
        .iter()
        .filter(|e| e["type"] == "call" && e["method"] == "tools/call")
        .count();
    assert_eq!(relayed, 200);
    assert_eq!(s.attempts, 200);
    assert!(
        evs.iter()
            .filter(|e| matches!(e, LoadEvent::Task(_)))
            .count()
            == 40
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_errors_show_up_and_are_retried() {
    let dir = tmp();
    let w = workload(
        "tasks: 30
arrival: {mode: closed, concurrency: 3}
steps:
  - calls:
      - {tool: search_incidents, arguments: {query: db}}
      - {tool: echo, arguments: {message: fine}}
client: {timeout_ms: 10000, retries: {max_attempts: 3, backoff_ms: 1, jitter: 0.5}}
",
    );
    let plan = "seed: 1\nfaults:\n  - {kind: error, tools: [search_incidents], code: -32000}\n";
    let (s, evs) = play(
        &w,
        stdio(through(dir.path(), plan, &fixture())),
        opts(1, Some(1)),
    )
    .await;
    assert_eq!(count(&evs, "search_incidents", Outcome::Error), 30);
    assert_eq!(count(&evs, "echo", Outcome::Ok), 30);
    assert_eq!(s.tasks_failed, 30);
    // Every search was tried three times, each attempt reached the relay.
    assert!(calls(&evs)
        .iter()
        .filter(|c| c.tool.as_deref() == Some("search_incidents"))
        .all(|c| c.attempts == 3));
    assert_eq!(s.attempts, 30 * 3 + 30);
    let injected = events(dir.path())
        .iter()
        .filter(|e| e["type"] == "fault" && e["kind"] == "error")
        .count();
    assert_eq!(injected, 90);
    assert!((s.error_rate - 0.5).abs() < 1e-9, "{}", s.error_rate);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seed_replays_the_schedule() {
    let w = workload(
        "tasks: 60
arrival: {mode: open, rate_per_s: 600}
steps:
  - calls: [{tool: echo, arguments: {message: x}}]
",
    );
    let run = |seed| {
        let w = w.clone();
        async move { play(&w, stdio(fixture()), opts(3, Some(seed))).await.0 }
    };
    let (a, b, c) = (run(11).await, run(11).await, run(12).await);
    assert_eq!(a.schedule_fingerprint, b.schedule_fingerprint);
    assert_ne!(a.schedule_fingerprint, c.schedule_fingerprint);
    assert_eq!((a.calls, b.calls, c.calls), (60, 60, 60));
    assert_eq!(a.seed, 11);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duration_or_a_cancel_ends_an_endless_load() {
    let w = workload(
        "tasks: 100000000
arrival: {mode: closed, concurrency: 2}
think_ms: 5
steps:
  - calls: [{tool: echo, arguments: {message: x}}]
  - calls: [{tool: echo, arguments: {message: y}}]
",
    );
    let o = LoadOptions {
        duration: Some(Duration::from_millis(400)),
        ..opts(1, None)
    };
    let (s, _) = play(&w, stdio(fixture()), o).await;
    assert!(s.calls > 0 && s.calls < 100_000, "{s:?}");
    assert_eq!(s.outcomes.get("ok").copied(), Some(s.calls));
    let cancel = tokio_util::sync::CancellationToken::new();
    let o = LoadOptions {
        cancel: cancel.clone(),
        ..opts(1, None)
    };
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        c2.cancel();
    });
    let (s, _) = play(&w, stdio(fixture()), o).await;
    assert!(s.calls > 0 && s.tasks < 100_000_000, "{s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_through_the_relay_with_four_sessions() {
    let (relay, url) = common::http::brownout_http(&["--quiet", "--", brownout(), "fixture"]);
    let w = workload(ARGS);
    let target = LoadTarget::Http {
        url,
        headers: vec![("x-load-test".into(), "1".into())],
    };
    let (s, evs) = play(&w, target, opts(4, None)).await;
    assert_eq!(s.calls, 200, "{s:?}");
    assert_eq!(count(&evs, "echo", Outcome::Ok), 40);
    assert_eq!(count(&evs, "echo", Outcome::ToolError), 40);
    assert_eq!(count(&evs, "search_incidents", Outcome::Ok), 80);
    drop(relay);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_server_over_stdio() {
    let w = workload(
        "tasks: 20
arrival: {mode: closed, concurrency: 4}
steps:
  - calls:
      - {tool: echo, arguments: {message: from-brownout}}
      - {tool: add, arguments: {a: 2, b: 3}}
      - {tool: add, arguments: {a: two}, critical: false}
client: {degrade: true}
",
    );
    let (s, evs) = play(&w, stdio(common::python_server()), opts(2, None)).await;
    assert_eq!(s.calls, 60);
    assert_eq!(count(&evs, "echo", Outcome::Ok), 20);
    assert_eq!(count(&evs, "add", Outcome::Ok), 20);
    // Arguments the server's validation refuses: it saw them.
    assert_eq!(
        calls(&evs)
            .iter()
            .filter(|c| c.tool.as_deref() == Some("add") && !c.outcome.is_success())
            .count(),
        20
    );
    assert_eq!(s.tasks_ok, 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_over_stdio() {
    let w = workload(
        "tasks: 20
arrival: {mode: closed, concurrency: 2}
steps:
  - calls:
      - {tool: echo, arguments: {message: from-brownout}}
      - {tool: echo, critical: false}
client: {degrade: true}
",
    );
    let (s, evs) = play(&w, stdio(common::everything()), opts(1, None)).await;
    assert_eq!(s.calls, 40);
    assert_eq!(count(&evs, "echo", Outcome::Ok), 20, "{s:?}");
    assert_eq!(s.tasks_ok, 20);
}

#[test]
fn the_cli_runs_reports_json_and_exits_as_documented() {
    let dir = tmp();
    let w = dir.path().join("w.yaml");
    std::fs::write(
        &w,
        "tasks: 10\nsteps:\n  - calls: [{tool: echo, arguments: {message: hi}}]\n",
    )
    .expect("write");
    let out = std::process::Command::new(brownout())
        .args([
            "load",
            &w.display().to_string(),
            "--json",
            "--",
            brownout(),
            "fixture",
        ])
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json summary");
    assert_eq!(v["calls"], 10);
    assert_eq!(v["outcomes"]["ok"], 10);
    // A bad workload: exit 2 with FILE:LINE:COL and the key.
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "tasks: 10\nsteps:\n  - calls: [{tool: echo, argumnets: {}}]\n",
    )
    .expect("write");
    let out = std::process::Command::new(brownout())
        .args([
            "load",
            &bad.display().to_string(),
            "--",
            brownout(),
            "fixture",
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.yaml:3:") && err.contains("arguments"),
        "{err}"
    );
    // A target that cannot start: exit 4.
    let out = std::process::Command::new(brownout())
        .args([
            "load",
            &w.display().to_string(),
            "--",
            "/nonexistent/server",
        ])
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
