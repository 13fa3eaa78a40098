//! Detection and recovery times (MTTD/MTTR) from the `during: true` probes' samples: when
//! the faults were applied, the first failing sample and the first alert after that; when
//! they were removed (or the target came back by itself), the first passing sample and the
//! recovery notice; the failure reasons seen. Pure: the runner passes the samples and the
//! times (run-clock milliseconds).

use super::journal::Sample;
pub use super::records::Detection;

/// Detection over `samples` (every probe's, in any order) for faults applied at `applied`
/// and removed at `removed`.
pub fn detect(samples: &[&Sample], applied: f64, removed: Option<f64>) -> Detection {
    let mut s: Vec<(f64, &Sample)> = samples
        .iter()
        .filter_map(|x| x.at_ms.map(|t| (t, *x)))
        .filter(|(t, _)| *t >= applied)
        .collect();
    s.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut d = Detection {
        faults_applied_ms: applied,
        faults_removed_ms: removed,
        samples: s.len() as u64,
        ..Detection::default()
    };
    // A sample is bad when it failed, or while an incident is open (from an alert to its
    // recovery notice: a P95 alert over samples that each answered, only slowly).
    let mut open = false;
    let bad: Vec<bool> = s
        .iter()
        .map(|(_, x)| {
            match x.notice.as_deref() {
                Some("alert") => open = true,
                Some("recovery") => open = false,
                _ => {}
            }
            !x.ok || open
        })
        .collect();
    let mut last_failure: Option<f64> = None;
    for ((t, x), bad) in s.iter().zip(&bad) {
        if *bad {
            d.failures += 1;
            let reason = match (&x.reason, x.ok) {
                (Some(r), _) => r.clone(),
                (None, true) => "latency".into(),
                (None, false) => "failed".into(),
            };
            *d.reasons.entry(reason).or_default() += 1;
            d.first_failure_ms.get_or_insert(*t);
            last_failure = Some(*t);
        }
        if x.notice.as_deref() == Some("alert") {
            d.first_alert_ms.get_or_insert(*t);
        }
    }
    d.ttd_ms = d.first_failure_ms.map(|t| t - applied);
    d.tta_ms = d.first_alert_ms.map(|t| t - applied);
    let Some(last) = last_failure else {
        return d;
    };
    // The failing run that ended last started at `start`: recovery is measured from the
    // removal if that run was still going when the faults left, else from its start.
    let start = s
        .iter()
        .zip(&bad)
        .rev()
        .skip_while(|((t, _), _)| *t > last)
        .take_while(|(_, b)| **b)
        .last()
        .map_or(last, |((t, _), _)| *t);
    d.first_pass_ms = s
        .iter()
        .zip(&bad)
        .find(|((t, _), b)| *t > last && !**b)
        .map(|((t, _), _)| *t);
    let from = match (removed, d.first_pass_ms) {
        // Back before the faults left (a restart): the outage is measured from its start.
        (Some(r), Some(pass)) if pass < r => start,
        (Some(r), _) if r >= start => r,
        _ => start,
    };
    d.recovery_from_ms = Some(from);
    d.ttr_ms = d.first_pass_ms.map(|t| (t - from).max(0.0));
    d.recovery_notice_ms = s
        .iter()
        .find(|(t, x)| *t > last && x.notice.as_deref() == Some("recovery"))
        .map(|(t, _)| *t);
    d.ttrn_ms = d.recovery_notice_ms.map(|t| (t - from).max(0.0));
    d
}

/// `detected in 700 ms (alert 1.2 s; process_exited ×3), recovered in 300 ms (notice 300 ms)`.
pub fn one_line(d: &Detection) -> String {
    let ms = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{v:.0} ms"));
    if d.failures == 0 {
        return format!(
            "{} sample(s) under the faults, none failed: not detected",
            d.samples
        );
    }
    let reasons: Vec<String> = d.reasons.iter().map(|(k, v)| format!("{k} ×{v}")).collect();
    format!(
        "detected in {} (alert {}; {}), recovered in {} (notice {})",
        ms(d.ttd_ms),
        ms(d.tta_ms),
        reasons.join(", "),
        ms(d.ttr_ms),
        ms(d.ttrn_ms)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t: f64, ok: bool, notice: Option<&str>) -> Sample {
        Sample {
            ok,
            latency_ms: 1.0,
            error: None,
            reason: (!ok).then(|| "process_exited".to_string()),
            at_ms: Some(t),
            notice: notice.map(str::to_string),
        }
    }

    #[test]
    fn a_server_down_until_the_faults_leave() {
        let xs = [
            at(900.0, true, None),
            at(1200.0, true, None),
            at(1700.0, false, None),
            at(2200.0, false, Some("alert")),
            at(2700.0, false, None),
            at(3300.0, true, Some("recovery")),
        ];
        let refs: Vec<&Sample> = xs.iter().collect();
        let d = detect(&refs, 1000.0, Some(3000.0));
        assert_eq!(d.samples, 5);
        assert_eq!(d.failures, 3);
        assert_eq!(d.ttd_ms, Some(700.0));
        assert_eq!(d.tta_ms, Some(1200.0));
        assert_eq!(d.recovery_from_ms, Some(3000.0));
        assert_eq!(d.ttr_ms, Some(300.0));
        assert_eq!(d.ttrn_ms, Some(300.0));
        assert_eq!(d.reasons.get("process_exited"), Some(&3));
    }

    #[test]
    fn a_server_that_comes_back_while_the_faults_stay() {
        let xs = [
            at(1500.0, false, None),
            at(2000.0, false, Some("alert")),
            at(2500.0, true, Some("recovery")),
            at(3000.0, true, None),
        ];
        let refs: Vec<&Sample> = xs.iter().collect();
        let d = detect(&refs, 1000.0, Some(5000.0));
        assert_eq!(d.ttd_ms, Some(500.0));
        // Measured from the outage's first failure, not the (later) removal.
        assert_eq!(d.recovery_from_ms, Some(1500.0));
        assert_eq!(d.ttr_ms, Some(1000.0));
    }

    #[test]
    fn a_p95_incident_over_samples_that_answered_is_detected_and_recovers() {
        let xs = [
            at(1500.0, true, None),
            at(3000.0, true, Some("alert")),
            at(4000.0, true, None),
            at(6500.0, true, Some("recovery")),
        ];
        let refs: Vec<&Sample> = xs.iter().collect();
        let d = detect(&refs, 1000.0, Some(5000.0));
        assert_eq!((d.ttd_ms, d.tta_ms), (Some(2000.0), Some(2000.0)));
        assert_eq!(d.reasons.get("latency"), Some(&2));
        assert_eq!(d.recovery_from_ms, Some(5000.0));
        assert_eq!((d.ttr_ms, d.ttrn_ms), (Some(1500.0), Some(1500.0)));
    }

    #[test]
    fn nothing_failed_nothing_detected_and_no_recovery_yet_is_null() {
        let ok = [at(1500.0, true, None)];
        let refs: Vec<&Sample> = ok.iter().collect();
        let d = detect(&refs, 1000.0, None);
        assert_eq!((d.ttd_ms, d.ttr_ms, d.failures), (None, None, 0));
        let down = [at(1500.0, false, None)];
        let refs: Vec<&Sample> = down.iter().collect();
        let d = detect(&refs, 1000.0, Some(2000.0));
        assert_eq!(d.ttd_ms, Some(500.0));
        assert_eq!((d.recovery_from_ms, d.first_pass_ms), (Some(2000.0), None));
    }
}
