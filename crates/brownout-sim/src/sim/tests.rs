//! Small whole runs, one mechanism each, with numbers worked out by hand: step and task
//! deadlines, deadline-aware skipping, client timeouts with retries and backoff, a server's
//! pool and its queue timeout.

use super::*;

fn run(workload: &str) -> Report {
    let w = Workload::from_str_named(workload, "w.yaml").unwrap_or_else(|e| panic!("{e}"));
    let plan = Plan::from_str_named("faults: []\n", "p.yaml").unwrap_or_else(|e| panic!("{e}"));
    simulate(
        &w,
        plan,
        &SimOptions {
            keep_series: true,
            ..SimOptions::default()
        },
    )
}

/// One tool `t` with a fixed service time, `tasks` tasks one after another.
fn one_tool(tasks: u32, service_ms: u32, step: &str, client: &str) -> String {
    format!(
        "tasks: {tasks}
steps:
  - {{{step}calls: [{{tool: t}}]}}
servers:
  - name: s
    tools:
      t: {{latency: {{added_ms: {service_ms}}}}}
client: {{{client}}}
"
    )
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= b * 0.01
}

#[test]
fn a_step_deadline_fails_what_is_still_open() {
    let r = run(&one_tool(10, 100, "deadline_ms: 30, ", "timeout_ms: 1000"));
    assert_eq!((r.calls, r.attempts, r.surfaced_failures), (10, 10, 10));
    assert_eq!(r.blast_radius, 1.0);
    // Each call ends at its deadline, not when the server answers.
    assert!(close(r.latency_ms.max, 30.0), "{:?}", r.latency_ms);
    // The server still finishes each abandoned attempt; the run covers that time.
    assert!(
        r.duration_s >= 0.1 && r.duration_s < 1.2,
        "{}",
        r.duration_s
    );
}

#[test]
fn a_deadline_aware_client_skips_a_call_that_cannot_finish() {
    let r = run(&one_tool(
        10,
        100,
        "deadline_ms: 50, ",
        "timeout_ms: 1000, deadline_aware: true",
    ));
    assert_eq!((r.calls, r.attempts, r.skipped_calls), (10, 0, 10));
    assert_eq!(r.latency_ms.max, 0.001);
    // With time enough, the same call goes out. (A task slot is reused; the 500 ms deadline
    // of the first task's step once failed the call of the sixth task in the same slot.)
    let r = run(&one_tool(
        10,
        100,
        "deadline_ms: 500, ",
        "timeout_ms: 1000, deadline_aware: true",
    ));
    assert_eq!((r.attempts, r.skipped_calls, r.tcsr), (10, 0, 1.0));
}

#[test]
fn a_task_deadline_makes_a_slow_task_late_and_failed() {
    let w = "tasks: 4
task_deadline_ms: 60
steps:
  - calls: [{tool: t}]
  - calls: [{tool: t}]
servers:
  - name: s
    tools:
      t: {latency: {added_ms: 40}}
client: {timeout_ms: 1000}
";
    let r = run(w);
    assert_eq!(r.tasks, 4);
    // The first step answers at 40 ms; the second is cut at the task's 60 ms.
    assert_eq!((r.calls, r.surfaced_failures), (8, 4));
    assert_eq!(r.blast_radius, 1.0);
    assert_eq!(
        r.deadline_adherence, 1.0,
        "ended at the deadline, not after it"
    );
    assert!(close(r.latency_ms.max, 40.0), "{:?}", r.latency_ms);
}

#[test]
fn timeouts_retry_after_a_growing_backoff() {
    let r = run(&one_tool(
        5,
        100,
        "",
        "timeout_ms: 30, retries: {max_attempts: 3, backoff_ms: 10, multiplier: 2}",
    ));
    assert_eq!((r.calls, r.attempts, r.surfaced_failures), (5, 15, 5));
    assert_eq!(r.attempt_error_rate, 1.0);
    // 30 (timeout) + 10 (backoff) + 30 + 20 (backoff × 2) + 30 = 120 ms a call.
    assert!(close(r.latency_ms.p50, 120.0), "{:?}", r.latency_ms);
    assert!(close(r.latency_ms.max, 120.0), "{:?}", r.latency_ms);
    // Every attempt and its failure land in the second it started: second 0.
    assert_eq!(r.series.len(), 1, "{:?}", r.series);
    assert_eq!((r.series[0].attempts, r.series[0].errors), (15, 15));
}

#[test]
fn a_full_pool_queues_and_its_queue_timeout_fails_the_waiting() {
    // Four calls at once on a pool of one: 50 ms each; the queue gives up after 70 ms, so the
    // second call is served (starts at 50) and the third and fourth time out waiting.
    let w = "tasks: 1
steps:
  - calls: [{tool: t, repeat: 4}]
servers:
  - name: s
    concurrency: 1
    queue_timeout_ms: 70
    tools:
      t: {latency: {added_ms: 50}}
client: {timeout_ms: 1000, degrade: true}
";
    let r = run(w);
    assert_eq!((r.calls, r.attempts), (4, 4));
    assert_eq!(r.surfaced_failures, 2);
    assert_eq!(r.series[0].max_queue, 3);
    assert!(close(r.latency_ms.max, 100.0), "{:?}", r.latency_ms);
}

/// `sessions: N`: tasks share N long-lived sessions keyed as brownout's live load labels
/// them, so a fault's `sessions` share hits exactly the sessions `session_selected` picks,
/// and their draws go on from task to task (a share of 100 % of one session: every call).
#[test]
fn long_lived_sessions_are_the_ones_the_relay_would_select() {
    let w = Workload::from_str_named(
        "tasks: 3200\narrival: {mode: closed, concurrency: 16}\nsteps:\n  - calls: [{tool: t}]\nservers:\n  - name: s\n    tools:\n      t: {latency: {added_ms: 1}}\n",
        "w.yaml",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let plan = || {
        Plan::from_str_named(
            "seed: 0\nfaults:\n  - {kind: error, phase: response, tools: [t], sessions: 0.25}\n",
            "p.yaml",
        )
        .unwrap_or_else(|e| panic!("{e}"))
    };
    let selected = (0..16)
        .filter(|i| brownout_core::select::session_selected(0, &format!("label:load-{i}"), 0.25))
        .count();
    assert!(selected > 0 && selected < 16, "{selected}");
    let r = simulate(
        &w,
        plan(),
        &SimOptions {
            sessions: Some(16),
            ..SimOptions::default()
        },
    );
    // Errors after the work (`phase: response`) take as long as answers: every agent runs
    // as many tasks, and each session carries 1/16 of the calls.
    let failed = 1.0 - r.availability;
    let expected = selected as f64 / 16.0;
    assert!((failed - expected).abs() < 0.02, "{failed} vs {expected}");
    // One session per task (the default): a quarter of the tasks, whatever their number.
    let per_task = simulate(&w, plan(), &SimOptions::default());
    assert!(
        ((1.0 - per_task.availability) - 0.25).abs() < 0.05,
        "{}",
        per_task.availability
    );
}

#[test]
fn a_budget_stops_the_run_and_names_the_bound() {
    let w = Workload::from_str_named(&one_tool(100_000, 5, "", ""), "w.yaml")
        .unwrap_or_else(|e| panic!("{e}"));
    let opts = |budget: budget::Budget| SimOptions {
        budget,
        ..SimOptions::default()
    };
    let full = simulate(&w, Plan::empty(), &SimOptions::default());
    assert_eq!(full.stopped_by, None);
    let r = simulate(
        &w,
        Plan::empty(),
        &opts(budget::Budget {
            max_events: Some(10_000),
            ..Default::default()
        }),
    );
    assert!(r
        .stopped_by
        .as_deref()
        .is_some_and(|s| s.starts_with("events:")));
    assert!(
        r.calls > 0 && r.calls < full.calls,
        "{} of {}",
        r.calls,
        full.calls
    );
    let cancelled = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let r = simulate(
        &w,
        Plan::empty(),
        &opts(budget::Budget {
            cancel: Some(cancelled),
            ..Default::default()
        }),
    );
    assert!(r
        .stopped_by
        .as_deref()
        .is_some_and(|s| s.starts_with("cancelled")));
    let r = simulate(
        &w,
        Plan::empty(),
        &opts(budget::Budget {
            max_bytes: Some(1),
            ..Default::default()
        }),
    );
    assert!(r
        .stopped_by
        .as_deref()
        .is_some_and(|s| s.starts_with("memory:")));
}

/// A fault that picks servers (`servers: [a]`) hits the calls to tools of those servers only,
/// as on a relay in front of several servers.
#[test]
fn a_fault_that_picks_a_server_hits_only_that_server_s_tools() {
    let w = Workload::from_str_named(
        "tasks: 400\narrival: {mode: closed, concurrency: 4}\nsteps:\n  - calls: [{tool: t}, {tool: u}]\nservers:\n  - name: a\n    tools:\n      t: {latency: {added_ms: 1}}\n  - name: b\n    tools:\n      u: {latency: {added_ms: 1}}\n",
        "w.yaml",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let plan = |servers: &str| {
        Plan::from_str_named(
            &format!("seed: 0\nfaults:\n  - {{id: e, kind: error, servers: [{servers}]}}\n"),
            "p.yaml",
        )
        .unwrap_or_else(|e| panic!("{e}"))
    };
    let on_a = simulate(&w, plan("a"), &SimOptions::default());
    // Every task calls t (on a) once: every one of those calls is hit, none of u's.
    assert_eq!(
        on_a.injections.get("e"),
        Some(&400),
        "{:?}",
        on_a.injections
    );
    assert!(close(on_a.availability, 0.5), "{}", on_a.availability);
    let on_c = simulate(&w, plan("c"), &SimOptions::default());
    assert_eq!(on_c.injections.get("e"), None, "{:?}", on_c.injections);
    assert!(close(on_c.availability, 1.0));
}

/// A plan whose faults delay requests and answers, fail fast and after the service, and
/// lose answers.
const SHAPES: &str = "seed: 3
faults:
  - id: slow-request
    kind: latency
    direction: to_server
    probability: 0.1
    added_ms: 12
  - id: slow-answer
    kind: latency
    probability: 0.1
    added_ms: 8
  - id: fast-fail
    kind: error
    phase: request
    probability: 0.05
  - id: late-fail
    kind: error
    probability: 0.05
  - id: lost
    kind: timeout
    probability: 0.03
";

/// A workload without a breaker, limiter, retries or deadlines runs through the loop
/// compiled without them (`run_until::<false>`): the same report, byte for byte, as the
/// full loop gives it — with client timeouts, queue timeouts, errors, corruption under
/// every agent policy and gates — and only such a workload is called plain.
#[test]
fn the_plain_loop_reports_what_the_full_loop_does() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sim");
    let read =
        |f: &str| std::fs::read_to_string(root.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
    let headline = read("headline.yaml");
    let chained = read("chained-incident.yaml");
    // Slow answers past a short client timeout, a squeezed pool with a queue timeout.
    let squeezed = headline
        .replace("timeout_ms: 1000", "timeout_ms: 30")
        .replace(
            "  - name: inventory\n",
            "  - name: inventory\n    concurrency: 2\n    queue_timeout_ms: 10\n",
        );
    assert_ne!(squeezed, headline);
    // The same, every server squeezed.
    let squeezed_all = squeezed.replace(
        "  - name: observability\n",
        "  - name: observability\n    concurrency: 3\n",
    );
    assert_ne!(squeezed_all, squeezed);
    let gates: Vec<brownout_core::slo::Gate> = [
        "error_rate < 1% over 10s",
        "p99 < 40ms over 10s",
        "task_success >= 80% over 100 tasks",
    ]
    .iter()
    .map(|g| brownout_core::slo::Gate::parse(g).unwrap_or_else(|e| panic!("{g}: {e}")))
    .collect();
    let mut runs = 0;
    for (workload, plan) in [
        (headline.clone(), "errors-2pct.yaml"),
        (headline, "errors-50pct.yaml"),
        (squeezed, "errors-2pct.yaml"),
        (chained.clone(), "corrupt-service.yaml"),
        (
            chained.replace("policy: trust", "policy: verify"),
            "corrupt-service.yaml",
        ),
        // Every way an attempt can leave the one-record path (`serve_alone`): a delayed
        // request or answer, a fast failure, no answer, a full pool, a service past the
        // timeout.
        (squeezed_all.clone(), SHAPES),
    ] {
        let w = Workload::from_str_named(&workload, "w.yaml").unwrap_or_else(|e| panic!("{e}"));
        for gated in [false, true] {
            let opts = SimOptions {
                tasks: Some(400),
                keep_series: true,
                gates: if gated { gates.clone() } else { Vec::new() },
                ..SimOptions::default()
            };
            let report = |full: bool| {
                let text = if plan == SHAPES {
                    SHAPES.to_string()
                } else {
                    read(plan)
                };
                let plan =
                    Plan::from_str_named(&text, "plan.yaml").unwrap_or_else(|e| panic!("{e}"));
                let mut sim = build(&w, plan, &opts);
                if !full {
                    assert!(sim.plain(), "{:?}", w.name);
                }
                sim.start();
                if full {
                    sim.run_until::<true>(None);
                } else {
                    sim.run_until::<false>(None);
                }
                // The events handled too: an event the plain loop hands on without the queue
                // (`push_now`) counts as one, as a `max_events` budget reads them.
                let events = sim.events;
                format!(
                    "{events} {}",
                    serde_json::to_string(&sim.report(&opts)).unwrap_or_default()
                )
            };
            let plain = report(false);
            assert!(plain.len() > 100);
            assert_eq!(plain, report(true), "{:?} under {plan}", w.name);
            runs += 1;
        }
    }
    assert_eq!(runs, 12);
    // Any of the four makes a workload full.
    let resilient = read("headline-resilient.yaml");
    let w = Workload::from_str_named(&resilient, "w.yaml").unwrap_or_else(|e| panic!("{e}"));
    let plan = Plan::from_str_named("faults: []\n", "p.yaml").unwrap_or_else(|e| panic!("{e}"));
    assert!(!build(&w, plan, &SimOptions::default()).plain());
}

/// A server without a concurrency limit keeps no count of the calls it serves at once
/// (`serve_alone`): its report is the one a limit no run can reach gives (`u32::MAX`,
/// counted and round-robined), through both loops, with services past the client's
/// timeout (an attempt record on such a server) and replicas.
#[test]
fn a_server_without_a_limit_reports_what_the_largest_limit_does() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sim");
    let headline = std::fs::read_to_string(root.join("headline.yaml")).unwrap_or_default();
    let unlimited = headline
        .replace("timeout_ms: 1000", "timeout_ms: 30")
        .replace(
            "  - name: inventory\n",
            "  - name: inventory\n    replicas: 3\n",
        );
    assert_ne!(unlimited, headline);
    let limited = unlimited
        .replace(
            "    replicas: 3\n",
            "    replicas: 3\n    concurrency: 4294967295\n",
        )
        .replace(
            "  - name: observability\n",
            "  - name: observability\n    concurrency: 4294967295\n",
        );
    assert_ne!(limited, unlimited);
    for text in [SHAPES, "faults: []\n"] {
        let report = |workload: &str, full: bool| {
            let w = Workload::from_str_named(workload, "w.yaml").unwrap_or_else(|e| panic!("{e}"));
            let plan = Plan::from_str_named(text, "plan.yaml").unwrap_or_else(|e| panic!("{e}"));
            let opts = SimOptions {
                tasks: Some(400),
                keep_series: true,
                ..SimOptions::default()
            };
            let mut sim = build(&w, plan, &opts);
            assert_eq!(
                sim.tools.iter().filter(|t| t.unbounded).count(),
                if workload == unlimited { 5 } else { 0 }
            );
            sim.start();
            if full {
                sim.run_until::<true>(None);
            } else {
                sim.run_until::<false>(None);
            }
            let r = sim.report(&opts);
            assert!(r.calls > 1_000 && r.surfaced_failures > 0, "{text}: {r:?}");
            serde_json::to_string(&r).unwrap_or_default()
        };
        for full in [false, true] {
            assert_eq!(report(&unlimited, full), report(&limited, full), "{text}");
        }
    }
}

/// `delay_us` (the service time's conversion) gives what `ms` does for every delay a
/// latency can draw: up to a day, negatives (a cap below zero), NaN, halves of a µs.
#[test]
fn a_drawn_delay_converts_as_ms_does() {
    let mut rng = brownout_core::rng::SplitMix::new(7);
    let mut values = vec![
        0.0,
        -0.0,
        -1.0,
        f64::NAN,
        0.0005,
        0.0015,
        1e-300,
        brownout_core::faults::latency::MAX_DELAY_MS,
    ];
    for _ in 0..100_000 {
        let u = rng.unit();
        values.push(u * brownout_core::faults::latency::MAX_DELAY_MS);
        values.push(u * 100.0 - 10.0);
        values.push((u * 1e6).round() / 2000.0);
    }
    for x in values {
        assert_eq!(delay_us(x), ms(x), "{x}");
    }
}

/// Fixed service times keep a closed loop's tasks in step: calls end at the same
/// microsecond, so the next task or step of one is due while another's call still waits at
/// that instant. The plain loop hands such an event on without the queue only when nothing
/// else is due (`push_now`): both loops give the same report and event count.
#[test]
fn tasks_in_step_report_the_same_through_both_loops() {
    let workload = "tasks: 400
arrival: {mode: closed, concurrency: 3}
steps:
  - calls: [{tool: t}]
  - calls: [{tool: t}, {tool: u}]
servers:
  - name: s
    tools:
      t: {latency: {added_ms: 10}, error_rate: 0.3}
      u: {latency: {added_ms: 5}, error_rate: 0.2}
client: {degrade: true}
";
    let w = Workload::from_str_named(workload, "w.yaml").unwrap_or_else(|e| panic!("{e}"));
    let report = |full: bool| {
        let plan = Plan::from_str_named("faults: []\n", "p.yaml").unwrap_or_else(|e| panic!("{e}"));
        let opts = SimOptions::default();
        let mut sim = build(&w, plan, &opts);
        assert!(sim.plain());
        sim.start();
        if full {
            sim.run_until::<true>(None);
        } else {
            sim.run_until::<false>(None);
        }
        let events = sim.events;
        let r = sim.report(&opts);
        assert!(r.calls > 900 && r.surfaced_failures > 100, "{r:?}");
        format!("{events} {}", serde_json::to_string(&r).unwrap_or_default())
    };
    assert_eq!(report(false), report(true));
}
