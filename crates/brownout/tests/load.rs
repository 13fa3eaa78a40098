//! `brownout load` and `brownout::load::run` against real servers: the built-in fixture over
//! stdio (directly and through the relay) and over HTTP (through `proxy http`), the official
//! Python SDK server and server-everything over stdio.

mod common;
#[path = "common/load.rs"]
mod support;

use brownout::load::{LoadEvent, LoadOptions, LoadTarget};
use brownout_core::event::Outcome;
use brownout_sim::Workload;
use common::{brownout, events, fixture, through, tmp};
use std::time::Duration;
use support::{calls, count, opts, play, stdio, workload};

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
    // Cancelled once the first call is done.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        while let Some(e) = rx.recv().await {
            if matches!(e, LoadEvent::Call(_)) {
                c2.cancel();
            }
        }
    });
    let s = tokio::time::timeout(
        support::WATCHDOG,
        brownout::load::run(&w, stdio(fixture()), o, tx),
    )
    .await
    .expect("the load ended in time")
    .unwrap_or_else(|e| panic!("load failed: {e}"));
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

/// Through a relay, session number `i` is `label:load-i` to the engine, so the blast radius
/// (`sessions: 50%`) picks the same sessions every run of a seed, whatever order the
/// sessions happened to open in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_sessions_are_labelled_so_a_seed_picks_the_same_sessions() {
    let dir = tmp();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "seed: 7\nfaults:\n  - {id: half, kind: error, tools: [echo], sessions: 0.5}\n",
    )
    .expect("plan");
    let log = dir.path().join("events.jsonl");
    let (plan_s, log_s) = (plan.display().to_string(), log.display().to_string());
    let (relay, url) = common::http::brownout_http(&[
        "--quiet",
        "--plan",
        &plan_s,
        "--events",
        &log_s,
        "--",
        brownout(),
        "fixture",
    ]);
    let w = workload(&ARGS.replace("concurrency: 4", "concurrency: 8"));
    let target = LoadTarget::Http {
        url,
        headers: vec![],
    };
    let (s, _) = play(&w, target, opts(8, None)).await;
    assert!(s.calls > 0, "{s:?}");
    relay.stop(); // SIGTERM: the event log is written out before the relay exits
    let faulted: std::collections::BTreeSet<String> = events(dir.path())
        .iter()
        .filter(|e| e["type"] == "fault")
        .filter_map(|e| e["session"].as_str().map(str::to_string))
        .collect();
    let expected: std::collections::BTreeSet<String> = (0..8)
        .map(|i| format!("label:load-{i}"))
        .filter(|k| brownout_core::select::session_selected(7, k, 0.5))
        .collect();
    assert!(!expected.is_empty(), "seed 7 picks some of 8 sessions");
    let seen: std::collections::BTreeSet<String> = events(dir.path())
        .iter()
        .filter(|e| e["type"] == "call" && e["tool"] == "echo")
        .filter_map(|e| e["session"].as_str().map(str::to_string))
        .collect();
    assert_eq!(seen.len(), 8, "every session called echo: {seen:?}");
    assert_eq!(faulted, expected);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drifted_result_is_answered_but_not_correct() {
    let dir = tmp();
    let w = workload(
        "tasks: 20
steps:
  - calls:
      - {tool: get_incident, arguments: {id: INC-1}}
      - {tool: search_incidents, arguments: {query: db}}
",
    );
    let plan = "seed: 1\nfaults:\n  - {kind: schema_drift, tools: [get_incident], mutation: retype, path: /severity}\n";
    let (_, evs) = play(
        &w,
        stdio(through(dir.path(), plan, &fixture())),
        opts(1, None),
    )
    .await;
    let get: Vec<_> = calls(&evs)
        .into_iter()
        .filter(|c| c.tool.as_deref() == Some("get_incident"))
        .collect();
    assert_eq!(get.len(), 20);
    // Outcome ok (an answer came), but the `structuredContent` breaks the `outputSchema`.
    assert!(get.iter().all(|c| c.outcome == Outcome::Ok && !c.correct));
    // A tool without an output schema is correct when ok.
    assert!(calls(&evs)
        .iter()
        .filter(|c| c.tool.as_deref() == Some("search_incidents"))
        .all(|c| c.correct));
}

#[test]
fn a_workload_without_servers_runs_live_and_the_simulator_says_what_is_missing() {
    let text = "tasks: 5\nsteps:\n  - calls: [{tool: echo, arguments: {message: hi}}]\n";
    let w = Workload::from_str_live(text, "w.yaml").expect("live load needs no servers");
    assert_eq!(
        w.steps[0].calls[0]
            .arguments
            .as_ref()
            .map(|a| a["message"].clone()),
        Some(serde_json::json!("hi"))
    );
    let err = Workload::from_str_named(text, "w.yaml")
        .expect_err("the simulator needs servers")
        .to_string();
    assert!(err.contains("servers") && err.contains("missing"), "{err}");
}

/// A session the relay expires (404) is initialized again; the call that met the 404 is an
/// error, the calls after it succeed on the new session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_http_session_is_initialized_again() {
    let dir = tmp();
    let plan = common::http::plan_file(
        dir.path(),
        "seed: 1\nfaults:\n  - {kind: session_expiry, methods: [tools/call], after_calls: 10, max_injections: 1}\n",
    );
    let (relay, url) =
        common::http::brownout_http(&["--quiet", "--plan", &plan, "--", brownout(), "fixture"]);
    let w = workload(
        "tasks: 60
steps:
  - calls: [{tool: echo, arguments: {message: x}}]
",
    );
    let target = LoadTarget::Http {
        url,
        headers: vec![],
    };
    let (s, evs) = play(&w, target, opts(1, None)).await;
    drop(relay);
    assert_eq!(s.calls, 60);
    let errors = count(&evs, "echo", Outcome::Error);
    assert!(errors >= 1, "{s:?}");
    // After the expiry the load went on, on a new session.
    let last = calls(&evs).last().map(|c| c.outcome);
    assert_eq!(last, Some(Outcome::Ok), "{s:?}");
    assert!(count(&evs, "echo", Outcome::Ok) >= 40, "{s:?}");
}

/// The client's circuit breaker (the simulator's) opens on a failing tool and fails calls
/// fast, without an attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_breaker_fails_calls_fast_once_open() {
    let dir = tmp();
    let w = workload(
        "tasks: 50
steps:
  - calls: [{tool: search_incidents, arguments: {query: db}}]
client: {breaker: {mode: error_rate, threshold: 0.5, window: 10, min_calls: 5, open_ms: 60000}}
",
    );
    let plan = "seed: 1\nfaults:\n  - {kind: error, tools: [search_incidents]}\n";
    let (s, evs) = play(
        &w,
        stdio(through(dir.path(), plan, &fixture())),
        opts(1, None),
    )
    .await;
    assert_eq!(s.calls, 50);
    assert_eq!(count(&evs, "search_incidents", Outcome::Error), 50);
    // Five attempts open it; the other 45 calls never leave the client.
    assert_eq!(s.breaker_rejections, 45, "{s:?}");
    assert_eq!(s.attempts, 5);
    let relayed = events(dir.path())
        .iter()
        .filter(|e| e["type"] == "call" && e["method"] == "tools/call")
        .count();
    assert_eq!(relayed, 5);
}

#[test]
fn sigint_stops_the_load_with_a_summary_and_exit_130() {
    let dir = tmp();
    let w = dir.path().join("w.yaml");
    std::fs::write(
        &w,
        "tasks: 100000000\narrival: {mode: closed, concurrency: 2}\nthink_ms: 2\nsteps:\n  - calls: [{tool: echo, arguments: {message: hi}}]\n  - calls: [{tool: echo, arguments: {message: again}}]\n",
    )
    .expect("write");
    // The server notes what the client sends it (tee), so the test sees the calls go on:
    // with two tasks at once, a third call sent means a first one was answered.
    let sent = dir.path().join("sent.jsonl");
    let server = format!("tee '{}' | exec '{}' fixture", sent.display(), brownout());
    let child = std::process::Command::new(brownout())
        .args(["load", &w.display().to_string(), "--json", "--", "sh", "-c"])
        .arg(&server)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run");
    let until = std::time::Instant::now() + Duration::from_secs(60);
    while std::fs::read_to_string(&sent)
        .unwrap_or_default()
        .matches("tools/call")
        .count()
        < 3
    {
        assert!(
            std::time::Instant::now() < until,
            "no call reached the server"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("SIGINT");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json summary");
    assert!(v["calls"].as_u64().unwrap_or(0) > 0, "{v}");
    assert_eq!(v["outcomes"]["ok"], v["calls"], "{v}");
}

/// A stdio server that exits is started again (and initialized) on a later call; with
/// retries, the calls in between are not lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_that_exits_is_started_again() {
    // The fixture sees 20 lines (initialize, initialized, then calls), then end of input.
    let script = format!("sed -u 20q | exec '{}' fixture", brownout());
    let server = vec!["sh".to_string(), "-c".to_string(), script];
    let w = workload(
        "tasks: 40
steps:
  - calls: [{tool: echo, arguments: {message: x}}]
client: {timeout_ms: 5000, retries: {max_attempts: 100, backoff_ms: 50, multiplier: 1}}
",
    );
    let (s, _) = play(&w, stdio(server), opts(1, None)).await;
    assert_eq!(s.calls, 40);
    assert_eq!(s.outcomes.get("ok").copied(), Some(40), "{s:?}");
    assert!(s.session_restarts >= 1, "{s:?}");
    assert!(s.attempts > 40, "{s:?}");
}

/// Streamable HTTP servers that answer in SSE: the Python SDK's and server-everything's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_answers_from_the_python_sdk_and_server_everything() {
    let w = workload(
        "tasks: 20
arrival: {mode: closed, concurrency: 4}
steps:
  - calls: [{tool: echo, arguments: {message: over-http}}]
",
    );
    let (py, url) = common::http::python_http(&[]);
    let target = LoadTarget::Http {
        url,
        headers: vec![],
    };
    let (s, evs) = play(&w, target, opts(2, None)).await;
    drop(py);
    assert_eq!(count(&evs, "echo", Outcome::Ok), 20, "{s:?}");
    let (ev, url) = common::http::everything_http("streamableHttp");
    let target = LoadTarget::Http {
        url,
        headers: vec![],
    };
    let (s, evs) = play(&w, target, opts(2, None)).await;
    drop(ev);
    assert_eq!(count(&evs, "echo", Outcome::Ok), 20, "{s:?}");
}
