//! [`GateWatch::tick`] skips gates whose window neither took a sample nor slid since their
//! last evaluation: it must come to exactly what evaluating every gate every time does,
//! even when an evaluation comes at an earlier time than the one before. Calls go to the
//! ticked watch through scopes resolved once per tool ([`GateWatch::call_scope`]), to the
//! other through [`GateWatch::observe_call`]'s own matching.

use super::*;
use crate::event::Outcome;
use crate::rng::SplitMix;

const GATES: [&str; 14] = [
    "error_rate < 1% over 10s",
    "availability >= 99% over 10s",
    "tcsr > 95% over 500 calls",
    "timeouts <= 2% over 3s for 200ms",
    "eta >= 97% over 5s",
    "p90 < 49ms over 200 calls",
    "p99 < 800ms over 10s",
    "eta{tool=\"get_logs\"} >= 99% over 1000 calls",
    "blast_radius <= 20% over 10s",
    "max < 300ms over 50 calls",
    "p95 <= 150ms over 2s min 20 calls for 1s",
    "error_rate{tool=\"get_traces\"} < 10% over 3s for 500ms",
    "silent_rate < 5% over 5s",
    "task_success >= 90% over 200 tasks",
];

fn watch() -> GateWatch {
    GateWatch::new(
        GATES
            .iter()
            .map(|g| Gate::parse(g).unwrap_or_else(|e| panic!("{g}: {e}")))
            .collect(),
    )
}

/// The gap before the next call (ms) and whether it fails: rarely when calm, often in a
/// `storm`, and now and then a gap long enough for windows to empty out.
fn next_call(rng: &mut SplitMix, storm: bool) -> (f64, bool) {
    let gap = match rng.below(100) {
        0 => 2_500.0,
        1..=9 => 40.0 * rng.unit(),
        _ => 2.0 * rng.unit(),
    };
    let failing = rng.unit() < if storm { 0.4 } else { 0.005 };
    (gap, failing)
}

/// A taint mark and the tool it lands on, drawn in that order.
fn a_taint<'t>(rng: &mut SplitMix, tools: &[&'t str]) -> (TaintMark, Option<&'t str>) {
    let mark = [
        TaintMark::Altered,
        TaintMark::Propagated,
        TaintMark::Noticed,
    ][rng.below(3)];
    (mark, Some(tools[rng.below(3)]))
}

/// A `tools/call` of `tool` at `now`: failing or not, slow in a storm; its latency,
/// correctness, timeout and attempts drawn from `rng` in that order.
fn a_call(rng: &mut SplitMix, now: f64, tool: &str, failing: bool, storm: bool) -> CallObservation {
    CallObservation {
        at_ms: now,
        method: "tools/call".into(),
        tool: Some(tool.into()),
        outcome: if failing { Outcome::Error } else { Outcome::Ok },
        latency_ms: if storm {
            900.0 * rng.unit()
        } else {
            30.0 + 20.0 * rng.unit()
        },
        correct: rng.unit() > 0.01,
        timed_out: failing && rng.below(2) == 0,
        attempts: 1 + rng.below(3) as u32,
    }
}

#[test]
fn tick_comes_to_what_evaluating_every_gate_does() {
    for seed in 0..6u64 {
        let mut rng = SplitMix::new(seed);
        let (mut ticked, mut evaluated) = (watch(), watch());
        let tools = ["get_logs", "get_metrics", "get_traces"];
        let scopes: Vec<CallScope> = tools
            .iter()
            .map(|t| ticked.call_scope("tools/call", Some(t)))
            .collect();
        let mut now = 0.0;
        // Calm, then a burst of slow failures, then calm again, with gaps long enough for
        // windows to empty out.
        for i in 0..40_000u32 {
            let storm = (15_000..22_000).contains(&i);
            let (gap, failing) = next_call(&mut rng, storm);
            now += gap;
            let (t, b) = (&mut ticked, &mut evaluated);
            match rng.below(10) {
                0 => {
                    let task = TaskObservation {
                        at_ms: now,
                        ok: !failing,
                    };
                    t.observe_task(&task);
                    b.observe_task(&task);
                }
                1 => {
                    let (mark, tool) = a_taint(&mut rng, &tools);
                    t.observe_taint(now, tool, mark);
                    b.observe_taint(now, tool, mark);
                }
                2..=3 => {} // an evaluation between calls (the 100 ms tick)
                _ => {
                    let k = rng.below(3);
                    let c = a_call(&mut rng, now, tools[k], failing, storm);
                    t.observe_call_in(&scopes[k], &c);
                    b.observe_call(&c);
                }
            }
            // Now and then an evaluation at an earlier time than the last one (the simulator
            // ends a run stopped at a breach at the last handled event's time, before the
            // tick that found it): a gate breached with `for` 0 reads as failing there.
            let at = if rng.below(50) == 0 { now - 120.0 } else { now };
            let breached = t.tick(at);
            let states = b.evaluate(at);
            assert_eq!(
                breached,
                states.iter().any(|s| s.status == GateStatus::Breached),
                "seed {seed}, step {i}"
            );
        }
        let (a, b) = (ticked.summaries(), evaluated.summaries());
        assert_eq!(a, b, "seed {seed}");
        // The guarded gates were skipped on the way (each one: it held at times).
        let (t, e) = (ticked.steps(), evaluated.steps());
        for (i, g) in GATES.iter().enumerate().take(7) {
            assert!(
                t[i] < e[i] / 2,
                "seed {seed}: {g} evaluated {} of {}",
                t[i],
                e[i]
            );
        }
        assert!(a.iter().any(|g| g.breached), "the storm breached some gate");
        assert!(
            a.iter().any(|g| g.status != GateStatus::Breached),
            "some gate recovered after the storm"
        );
    }
}

/// A holding gate whose value the one sample that came in cannot make worse is not
/// evaluated again ([`GateWatch::tick`]'s guard); it is at a sample that could, at a
/// slide, and when more than one sample came in between ticks.
#[test]
fn a_holding_gate_is_not_evaluated_again_on_samples_that_cannot_worsen_it() {
    let gates = ["error_rate < 1% over 10s", "p99 < 800ms over 10s"];
    let mut w = GateWatch::new(
        gates
            .iter()
            .map(|g| Gate::parse(g).expect("gate"))
            .collect(),
    );
    let scope = w.call_scope("tools/call", Some("get_logs"));
    let mut now = 0.0;
    let call = |now: f64, failing: bool, latency_ms: f64| CallObservation {
        at_ms: now,
        method: "tools/call".into(),
        tool: Some("get_logs".into()),
        outcome: if failing { Outcome::Error } else { Outcome::Ok },
        latency_ms,
        correct: true,
        timed_out: false,
        attempts: 1,
    };
    // 200 good calls of 40–60 ms within one slot of the window (10 s / 100): both gates
    // hold once they have their least samples.
    for i in 0..200 {
        now += 0.25;
        w.observe_call_in(&scope, &call(now, false, 40.0 + f64::from(i % 21)));
        assert!(!w.tick(now));
    }
    let steps = |w: &GateWatch| w.steps();
    let before = steps(&w);
    for i in 0..100 {
        now += 0.25;
        w.observe_call_in(&scope, &call(now, false, 40.0 + f64::from(i % 20)));
        assert!(!w.tick(now));
    }
    assert_eq!(
        steps(&w),
        before,
        "good calls under the p99: neither is evaluated"
    );
    // A failing call (as fast) is evaluated by error_rate, not by p99; its value is the
    // worst seen so far.
    now += 0.25;
    w.observe_call_in(&scope, &call(now, true, 41.0));
    assert!(!w.tick(now));
    assert_eq!(steps(&w), vec![before[0] + 1, before[1]]);
    let worst = w.summaries()[0].worst.expect("a value");
    assert!((worst - 1.0 / 301.0).abs() < 1e-12, "{worst}");
    // A slow one is evaluated by p99 (and by error_rate, which judges from its last
    // evaluation: that one was a failure's).
    now += 0.25;
    w.observe_call_in(&scope, &call(now, false, 700.0));
    assert!(!w.tick(now));
    assert_eq!(steps(&w), vec![before[0] + 1, before[1] + 1]);
    // Two good calls between ticks: both are evaluated.
    for _ in 0..2 {
        now += 0.25;
        w.observe_call_in(&scope, &call(now, false, 41.0));
    }
    assert!(!w.tick(now));
    assert_eq!(steps(&w), vec![before[0] + 2, before[1] + 2]);
    // A slide (the next slot), good call or not.
    w.observe_call_in(&scope, &call(now + 150.0, false, 41.0));
    assert!(!w.tick(now + 150.0));
    assert_eq!(steps(&w), vec![before[0] + 3, before[1] + 3]);
}

/// A breached gate whose value a good sample cannot make worse is not evaluated again while
/// its value still fails the limit; it is at a sample that could worsen it, and at the good
/// sample that brings its value back under the limit (where it holds again).
#[test]
fn a_breached_gate_is_not_evaluated_again_while_good_samples_leave_it_failing() {
    let mut w = GateWatch::new(vec![Gate::parse("error_rate < 1% over 10s").expect("gate")]);
    let scope = w.call_scope("tools/call", Some("get_logs"));
    let call = |now: f64, failing: bool| CallObservation {
        at_ms: now,
        method: "tools/call".into(),
        tool: Some("get_logs".into()),
        outcome: if failing { Outcome::Error } else { Outcome::Ok },
        latency_ms: 40.0,
        correct: true,
        timed_out: false,
        attempts: 1,
    };
    // Within one slot of the window (10 s / 100): 2 failures in 100 calls, breached at 2 %.
    let mut now = 0.0;
    for i in 0..100 {
        now += 0.25;
        w.observe_call_in(&scope, &call(now, i % 50 == 49));
        w.tick(now);
    }
    assert!(w.tick(now), "2 % breaches it");
    let (before, worst) = (w.steps()[0], w.summaries()[0].worst);
    // 99 good calls: 2/101 … 2/199 still fail `< 1%`: none is evaluated.
    for _ in 0..99 {
        now += 0.05;
        w.observe_call_in(&scope, &call(now, false));
        assert!(w.tick(now));
    }
    assert_eq!(w.steps()[0], before, "good calls that leave it failing");
    assert_eq!(w.summaries()[0].worst, worst);
    // A failure is evaluated (3/200: past the worst? no, but it could have been).
    now += 0.05;
    w.observe_call_in(&scope, &call(now, true));
    assert!(w.tick(now));
    assert_eq!(w.steps()[0], before + 1);
    // Good calls up to 3/300 (exactly 1 %, still failing `< 1%`) are skipped; the one after
    // (3/301) holds: it is evaluated, and the gate holds again.
    for _ in 0..100 {
        now += 0.05;
        w.observe_call_in(&scope, &call(now, false));
        assert!(w.tick(now));
    }
    assert_eq!(w.steps()[0], before + 1, "3/201 … 3/300 still fail");
    now += 0.05;
    w.observe_call_in(&scope, &call(now, false));
    assert!(!w.tick(now), "3/301 holds");
    assert_eq!(w.steps()[0], before + 2);
    let s = &w.summaries()[0];
    assert_eq!(s.status, GateStatus::Holding);
    assert_eq!((s.breaches, s.worst), (1, worst));
}

/// Gates that watch the same samples over the same window share one: a watch of them all
/// must come to what one watch per gate (each with a window of its own) does.
#[test]
fn gates_sharing_a_window_come_to_what_a_window_each_does() {
    const SHARING: [&str; 14] = [
        "error_rate < 1% over 10s",
        "p99 < 800ms over 10s",
        "mean < 100ms over 10s",
        "availability > 99% over 10s for 2s",
        "max < 300ms over 50 calls",
        "p50 < 40ms over 50 calls",
        "error_rate < 5% over 50 calls",
        "error_rate{tool=\"get_traces\"} < 10% over 3s for 500ms",
        "p95{tool=\"get_traces\"} < 300ms over 3s",
        "max{tool=\"get_logs\"} < 300ms over 3s",
        "blast_radius <= 20% over 10s",
        "task_success >= 90% over 10s",
        "silent_rate < 5% over 5s",
        "safe_rate > 50% over 5s",
    ];
    let gate = |g: &str| Gate::parse(g).unwrap_or_else(|e| panic!("{g}: {e}"));
    for seed in 0..4u64 {
        let mut rng = SplitMix::new(seed);
        let mut shared = GateWatch::new(SHARING.iter().map(|g| gate(g)).collect());
        let mut alone: Vec<GateWatch> = SHARING
            .iter()
            .map(|g| GateWatch::new(vec![gate(g)]))
            .collect();
        let tools = ["get_logs", "get_metrics", "get_traces"];
        let mut now = 0.0;
        for i in 0..30_000u32 {
            let storm = (12_000..18_000).contains(&i);
            let (gap, failing) = next_call(&mut rng, storm);
            now += gap;
            match rng.below(10) {
                0 => {
                    let task = TaskObservation {
                        at_ms: now,
                        ok: !failing,
                    };
                    shared.observe_task(&task);
                    alone.iter_mut().for_each(|w| w.observe_task(&task));
                }
                1 => {
                    let (mark, tool) = a_taint(&mut rng, &tools);
                    shared.observe_taint(now, tool, mark);
                    alone
                        .iter_mut()
                        .for_each(|w| w.observe_taint(now, tool, mark));
                }
                2..=3 => {}
                _ => {
                    let tool = tools[rng.below(3)];
                    let c = a_call(&mut rng, now, tool, failing, storm);
                    shared.observe_call(&c);
                    alone.iter_mut().for_each(|w| w.observe_call(&c));
                }
            }
            let breached = shared.tick(now);
            let mut any = false;
            for w in &mut alone {
                any |= w.tick(now);
            }
            assert_eq!(breached, any, "seed {seed}, step {i}");
        }
        let each: Vec<GateSummary> = alone
            .iter()
            .enumerate()
            .map(|(i, w)| GateSummary {
                index: i,
                ..w.summaries().remove(0)
            })
            .collect();
        assert_eq!(shared.summaries(), each, "seed {seed}");
        assert!(each.iter().filter(|g| g.breached).count() >= 3);
    }
    // They did share: 14 gates over 6 windows.
    let w = GateWatch::new(SHARING.iter().map(|g| gate(g)).collect());
    assert_eq!(w.windows(), 6);
}
