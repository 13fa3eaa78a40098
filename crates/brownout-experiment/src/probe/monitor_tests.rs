//! The incident logic: one alert per incident, recovery when probes pass again, P95.

use super::*;

fn result(ok: bool, ms: f64, at: f64) -> ProbeResult {
    ProbeResult {
        ok,
        target: "t".into(),
        failure_reason: (!ok).then_some(FailureReason::ConnectionRefused),
        failure: (!ok).then(|| "connection_refused".to_string()),
        phases: Vec::new(),
        at_ms: at,
        total_ms: ms,
        detail: String::new(),
    }
}

fn kinds(t: &mut Tracker, seq: &[(bool, f64)]) -> Vec<&'static str> {
    seq.iter()
        .enumerate()
        .filter_map(
            |(i, (ok, ms))| match t.observe(&result(*ok, *ms, i as f64 * 1000.0)).1 {
                Some(MonitorEvent::Alert(_)) => Some("alert"),
                Some(MonitorEvent::Recovery(_)) => Some("recovery"),
                _ => None,
            },
        )
        .collect()
}

#[test]
fn one_alert_per_incident_and_one_recovery() {
    let mut t = Tracker::new(0, "t".into(), &MonitorOptions::default());
    let seq = [
        (true, 5.0),
        (false, 5.0),
        (false, 5.0),
        (false, 5.0),
        (false, 5.0),
        (true, 5.0),
        (true, 5.0),
        (false, 5.0),
        (true, 5.0),
    ];
    assert_eq!(kinds(&mut t, &seq), ["alert", "recovery"]);
    assert!(!t.in_incident());
}

#[test]
fn the_recovery_carries_the_incidents_reason_and_length() {
    let mut t = Tracker::new(0, "t".into(), &MonitorOptions::default());
    t.observe(&result(false, 1.0, 0.0));
    let (_, a) = t.observe(&result(false, 1.0, 1000.0));
    let Some(MonitorEvent::Alert(a)) = a else {
        panic!("no alert")
    };
    assert_eq!(a.failure_reason, Some(FailureReason::ConnectionRefused));
    assert_eq!(a.consecutive_failures, 2);
    let (_, r) = t.observe(&result(true, 1.0, 5000.0));
    let Some(MonitorEvent::Recovery(r)) = r else {
        panic!("no recovery")
    };
    assert_eq!(r.failure.as_deref(), Some("connection_refused"));
    assert_eq!(r.duration_ms, Some(4000.0));
}

#[test]
fn a_slow_p95_opens_an_incident_until_the_window_is_fast_again() {
    let opts = MonitorOptions {
        p95: Tolerance::parse("< 500ms").ok(),
        window: 4,
        ..MonitorOptions::default()
    };
    let mut t = Tracker::new(0, "t".into(), &opts);
    let mut seq = vec![(true, 10.0); 4];
    seq.extend([(true, 2000.0), (true, 2000.0)]);
    seq.extend(vec![(true, 10.0); 6]);
    assert_eq!(kinds(&mut t, &seq), ["alert", "recovery"]);
}

#[test]
fn schedules_are_jittered_and_reproducible_from_the_seed() {
    let opts = MonitorOptions {
        interval: Duration::from_secs(1),
        seed: 7,
        stagger: true,
        ..MonitorOptions::default()
    };
    let a: Vec<Duration> = Schedule::new(&opts, "t", 0).take(50).collect();
    let b: Vec<Duration> = Schedule::new(&opts, "t", 0).take(50).collect();
    assert_eq!(a, b);
    let other = MonitorOptions {
        seed: 8,
        ..opts.clone()
    };
    assert_ne!(
        a,
        Schedule::new(&other, "t", 0).take(50).collect::<Vec<_>>()
    );
    assert_ne!(a, Schedule::new(&opts, "t", 1).take(50).collect::<Vec<_>>());
    assert!(a[0] < Duration::from_secs(1));
    for w in a.windows(2) {
        let gap = (w[1] - w[0]).as_secs_f64();
        assert!((0.9..=1.1).contains(&gap), "{gap}");
    }
    let gaps: Vec<f64> = a.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()).collect();
    assert!(gaps.iter().any(|g| (g - gaps[0]).abs() > 1e-6), "no jitter");
}
