//! Gate arithmetic, property-tested against a brute-force recomputation over the calls
//! inside the window: time and count windows, minimum samples, sustained breaches, and
//! calls leaving the window.

use super::window::{slot_index, SLOTS};
use super::*;
use crate::event::Outcome;
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Call {
    at_ms: f64,
    outcome: Outcome,
    latency_ms: f64,
    correct: bool,
    timed_out: bool,
    attempts: u32,
    tool: &'static str,
}

impl Call {
    fn observation(&self) -> CallObservation {
        CallObservation {
            at_ms: self.at_ms,
            method: "tools/call".into(),
            tool: Some(self.tool.into()),
            outcome: self.outcome,
            latency_ms: self.latency_ms,
            correct: self.correct,
            timed_out: self.timed_out,
            attempts: self.attempts,
        }
    }
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        6 => Just(Outcome::Ok),
        1 => Just(Outcome::Error),
        1 => Just(Outcome::ToolError),
        1 => Just(Outcome::Malformed),
        1 => Just(Outcome::Dropped),
        1 => Just(Outcome::Unanswered),
    ]
}

/// Calls at increasing times (with some jitter backwards), and how far the clock moves
/// before each evaluation.
fn calls() -> impl Strategy<Value = Vec<(Call, f64)>> {
    let call = (
        0.0..400.0f64,
        -150.0..0.0f64,
        outcome(),
        prop_oneof![0.0..5.0f64, 5.0..2000.0f64, 2000.0..60_000.0f64],
        any::<bool>(),
        prop::bool::weighted(0.1),
        1u32..4,
        prop::sample::select(vec!["get_incident", "search_incidents", "list"]),
        prop_oneof![3 => Just(0.0), 1 => 0.0..3000.0f64],
    );
    prop::collection::vec(call, 1..400).prop_map(|v| {
        let mut t = 0.0;
        v.into_iter()
            .map(
                |(gap, back, outcome, latency_ms, correct, timed_out, attempts, tool, wait)| {
                    t += gap;
                    let c = Call {
                        at_ms: (t + back).max(0.0),
                        outcome,
                        latency_ms,
                        correct,
                        timed_out,
                        attempts,
                        tool,
                    };
                    (c, wait)
                },
            )
            .collect()
    })
}

fn frac(a: usize, b: usize) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

/// The SLI recomputed from the calls themselves.
fn brute(sli: Sli, calls: &[&Call]) -> Option<f64> {
    let n = calls.len();
    let to = |c: &Call| c.timed_out || c.outcome == Outcome::Unanswered;
    let ok = calls
        .iter()
        .filter(|c| !to(c) && c.outcome == Outcome::Ok)
        .count();
    let answered = calls
        .iter()
        .filter(|c| {
            !to(c) && matches!(c.outcome, Outcome::Ok | Outcome::Error | Outcome::ToolError)
        })
        .count();
    let correct = calls
        .iter()
        .filter(|c| !to(c) && c.outcome == Outcome::Ok && c.correct)
        .count();
    let mut lat: Vec<f64> = calls.iter().map(|c| c.latency_ms).collect();
    lat.sort_by(f64::total_cmp);
    match sli {
        Sli::ErrorRate => frac(n - ok, n),
        Sli::Availability => frac(answered, n),
        Sli::Correctness => frac(correct, answered),
        Sli::Eta => frac(answered, n).map(|a| a * frac(correct, answered).unwrap_or(1.0)),
        Sli::Tcsr => frac(correct, n),
        Sli::Timeouts => frac(calls.iter().filter(|c| to(c)).count(), n),
        Sli::Amplification => frac(calls.iter().map(|c| c.attempts as usize).sum(), n),
        Sli::Mean => (n > 0).then(|| lat.iter().sum::<f64>() / n as f64),
        Sli::Max => lat.last().copied(),
        Sli::Percentile(ppm) => (n > 0).then(|| lat[(hist::rank(ppm, n as u64) - 1) as usize]),
        Sli::TaskSuccess | Sli::BlastRadius => None,
        Sli::SilentRate | Sli::SafeRate | Sli::Propagated => None,
        Sli::TargetRss | Sli::TargetCpu => None,
    }
}

fn close(sli: Sli, got: Option<f64>, want: Option<f64>) -> bool {
    match (got, want) {
        (None, None) => true,
        (Some(g), Some(w)) => match sli {
            // Buckets under 0.8 % wide: the midpoint is within 0.4 %; under 10 µs, absolute.
            Sli::Percentile(_) => (g - w).abs() <= 0.004 * w + 0.005,
            // Latencies are kept in whole nanoseconds.
            Sli::Mean | Sli::Max => (g - w).abs() <= 1e-6 + 1e-9 * w,
            _ => g == w,
        },
        _ => false,
    }
}

const SLIS: [&str; 12] = [
    "error_rate",
    "availability",
    "correctness",
    "eta",
    "tcsr",
    "timeouts",
    "amplification",
    "mean",
    "max",
    "p50",
    "p99",
    "p999",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Every SLI over a sliding time window equals a recomputation over the calls whose
    /// slot is inside the window (see window.rs for the slot rule).
    #[test]
    fn time_windows_equal_a_brute_force_recomputation(
        calls in calls(),
        sli in prop::sample::select(SLIS.to_vec()),
        length in prop_oneof![Just(1000.0), Just(10_000.0), 50.0..5000.0f64],
        scoped in any::<bool>(),
    ) {
        let scope = if scoped { "{tool=\"*_incident*\"}" } else { "" };
        let unit = if sli.starts_with('p') || sli == "mean" || sli == "max" { "ms" } else { "" };
        let gate = Gate::parse(&format!("{sli}{scope} < 1{unit} over {length}ms min 1 calls")).expect("parses");
        let width = length / SLOTS as f64;
        let mut watch = GateWatch::new(vec![gate.clone()]);
        let mut kept: Vec<&Call> = Vec::new();
        let mut head = i64::MIN;
        let mut now = 0.0f64;
        for (c, wait) in &calls {
            if gate.scope.matches("tools/call", Some(c.tool)) {
                let s = slot_index(c.at_ms, width);
                if s > head.saturating_sub(SLOTS) {
                    kept.push(c);
                }
                head = head.max(s);
            }
            watch.observe_call(&c.observation());
            now = now.max(c.at_ms) + wait;
            head = head.max(slot_index(now, width));
            let inside: Vec<&Call> = kept.iter().copied().filter(|k| slot_index(k.at_ms, width) > head - SLOTS).collect();
            let state = &watch.evaluate(now)[0];
            prop_assert_eq!(state.samples, inside.len() as u64);
            let want = brute(gate.sli, &inside);
            prop_assert!(close(gate.sli, state.value, want), "{}: got {:?}, want {:?}", gate, state.value, want);
        }
    }

    /// Count windows: the last N calls in scope, exactly.
    #[test]
    fn count_windows_equal_a_brute_force_recomputation(
        calls in calls(),
        sli in prop::sample::select(SLIS.to_vec()),
        size in 1u32..120,
    ) {
        let unit = if sli.starts_with('p') || sli == "mean" || sli == "max" { "ms" } else { "" };
        let gate = Gate::parse(&format!("{sli}{{tool=\"get_incident\"}} < 1{unit} over {size} calls min 1")).expect("parses");
        let mut watch = GateWatch::new(vec![gate.clone()]);
        let mut seen: Vec<&Call> = Vec::new();
        for (c, _) in &calls {
            if c.tool == "get_incident" {
                seen.push(c);
            }
            watch.observe_call(&c.observation());
            let inside = &seen[seen.len().saturating_sub(size as usize)..];
            let state = &watch.evaluate(c.at_ms)[0];
            prop_assert_eq!(state.samples, inside.len() as u64);
            let want = brute(gate.sli, inside);
            prop_assert!(close(gate.sli, state.value, want), "{}: got {:?}, want {:?}", gate, state.value, want);
        }
    }

    /// Below its minimum sample count a gate is `insufficient`, whatever the calls say.
    #[test]
    fn below_the_minimum_a_gate_never_trips(calls in calls(), min in 1u32..60, window in prop_oneof![Just("2s"), Just("50 calls")]) {
        let min = if window == "50 calls" { min.min(50) } else { min };
        let gate = Gate::parse(&format!("error_rate == 0 over {window} min {min}")).expect("parses");
        let mut watch = GateWatch::new(vec![gate]);
        for (c, wait) in &calls {
            watch.observe_call(&c.observation());
            let state = &watch.evaluate(c.at_ms + wait)[0];
            if state.samples < u64::from(min) {
                prop_assert_eq!(state.status, GateStatus::Insufficient);
            } else {
                prop_assert_ne!(state.status, GateStatus::Insufficient);
            }
        }
    }

    /// `for D`: breached only once the condition has failed at every evaluation for D;
    /// a single good evaluation resets it.
    #[test]
    fn sustained_gates_breach_only_after_continuous_failure(
        steps in prop::collection::vec((any::<bool>(), 1.0..400.0f64), 1..200),
        sustain in 1.0..1500.0f64,
    ) {
        let gate = Gate::parse(&format!("error_rate < 50% over 1 calls for {sustain}ms")).expect("parses");
        let mut watch = GateWatch::new(vec![gate]);
        let mut now = 0.0;
        let mut failing_since: Option<f64> = None;
        for (good, gap) in steps {
            now += gap;
            let outcome = if good { Outcome::Ok } else { Outcome::Error };
            let c = Call { at_ms: now, outcome, latency_ms: 1.0, correct: true, timed_out: false, attempts: 1, tool: "t" };
            watch.observe_call(&c.observation());
            let state = &watch.evaluate(now)[0];
            if good {
                failing_since = None;
                prop_assert_eq!(state.status, GateStatus::Holding);
            } else {
                let since = *failing_since.get_or_insert(now);
                let want = if now - since >= sustain { GateStatus::Breached } else { GateStatus::Failing };
                prop_assert_eq!(state.status, want);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Once the clock has moved a window's length past the last call, the window is empty
    /// and the gate cannot trip, however bad the calls were.
    #[test]
    fn old_calls_leave_the_window(calls in calls(), length in 10.0..20_000.0f64) {
        let gate = Gate::parse(&format!("error_rate == 0 over {length}ms min 1")).expect("parses");
        let mut watch = GateWatch::new(vec![gate]);
        let mut last: f64 = 0.0;
        for (c, _) in &calls {
            watch.observe_call(&c.observation());
            last = last.max(c.at_ms);
        }
        let state = &watch.evaluate(last)[0];
        prop_assert!(state.samples >= 1);
        let state = &watch.evaluate(last + length + length / SLOTS as f64)[0];
        prop_assert_eq!(state.samples, 0);
        prop_assert_eq!(state.value, None);
        prop_assert_eq!(state.status, GateStatus::Insufficient);
    }
}

#[test]
fn the_last_ten_seconds_are_not_diluted_by_the_run_before_them() {
    // k6 #2379: 100 % errors in the last 10 s must read 100 %, not 5.8 %.
    let gate = Gate::parse("error_rate < 1% over 10s").expect("parses");
    let mut watch = GateWatch::new(vec![gate]);
    let call = |t: f64, outcome| CallObservation {
        at_ms: t,
        method: "tools/call".into(),
        tool: Some("x".into()),
        outcome,
        latency_ms: 5.0,
        correct: true,
        timed_out: false,
        attempts: 1,
    };
    for i in 0..16_000 {
        watch.observe_call(&call(f64::from(i) * 10.0, Outcome::Ok));
    }
    let state = &watch.evaluate(160_000.0)[0];
    assert_eq!(
        (state.status, state.value),
        (GateStatus::Holding, Some(0.0))
    );
    for i in 0..1_000 {
        watch.observe_call(&call(160_000.0 + f64::from(i) * 10.0, Outcome::Error));
    }
    let state = &watch.evaluate(170_000.0)[0];
    assert_eq!(state.value, Some(1.0));
    assert_eq!(state.status, GateStatus::Breached);
    assert!(state.changed);
    assert_eq!(state.since_ms, 170_000.0);
    // Nothing since: the old calls leave and the gate has nothing to judge.
    let state = &watch.evaluate(181_000.0)[0];
    assert_eq!((state.samples, state.status), (0, GateStatus::Insufficient));
    let s = &watch.summaries()[0];
    assert_eq!(s.first_breach_ms, Some(170_000.0));
    assert_eq!(s.worst, Some(1.0));
    assert_eq!(s.breaches, 1);
}

#[test]
fn task_gates_count_tasks() {
    let mut watch = GateWatch::new(vec![
        Gate::parse("blast_radius <= 10% over 10 tasks").expect("parses"),
        Gate::parse("task_success >= 90% over 10 tasks").expect("parses"),
    ]);
    for i in 0..10 {
        watch.observe_task(&TaskObservation {
            at_ms: f64::from(i),
            ok: i % 5 != 0,
        });
    }
    let states = watch.evaluate(10.0);
    assert_eq!(states[0].value, Some(0.2));
    assert_eq!(states[0].status, GateStatus::Breached);
    assert_eq!(states[1].value, Some(0.8));
    assert_eq!(states[1].samples, 10);
}
