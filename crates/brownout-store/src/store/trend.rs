//! Trends across an experiment's runs: pass rate, MTTR, the probes' MTTD/MTTR, ρ and key SLIs
//! run by run, and drift
//! flags — a metric rising over the recent passing runs although they still pass (the
//! recovery that slows down release after release, before it ever fails a bound).

use super::backend::Backend;
use super::val::Val;
use super::StoreError;
use serde::Serialize;

/// One run in a trend.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrendRun {
    pub run_id: String,
    pub started_unix_ms: i64,
    pub status: String,
    pub mttr_ms: Option<f64>,
    pub abort_latency_ms: Option<f64>,
    pub baseline_p95_ms: Option<f64>,
    /// The worst stage's p99 latency.
    pub stage_p99_ms: Option<f64>,
    /// The worst stage's error rate (0–1).
    pub stage_error_rate: Option<f64>,
    /// The probes' time to detect and to recover (the journal's `detection`).
    pub ttd_ms: Option<f64>,
    pub probe_ttr_ms: Option<f64>,
    /// Robustness ρ of the run.
    pub robustness: Option<f64>,
}

/// A metric that moved the wrong way over the recent passing runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Drift {
    pub metric: String,
    /// Mean over the earlier and the later half of the recent passing runs.
    pub earlier: f64,
    pub later: f64,
    /// later / earlier − 1.
    pub change: f64,
    /// Least-squares slope, per run.
    pub slope_per_run: f64,
    pub runs: usize,
    pub message: String,
}

/// Reads one metric of a run.
type Metric = fn(&TrendRun) -> Option<f64>;

/// An experiment's trend.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trend {
    pub experiment: String,
    /// Oldest first.
    pub runs: Vec<TrendRun>,
    /// Completed runs / runs that reached a verdict (refused, failed and interrupted runs
    /// say nothing of the system and are left out).
    pub pass_rate: Option<f64>,
    pub drifts: Vec<Drift>,
}

/// How drift is judged.
#[derive(Debug, Clone, Copy)]
pub struct DriftRule {
    /// The recent passing runs looked at.
    pub window: usize,
    /// The later half's mean must exceed the earlier half's by this share (0.2 = 20 %).
    pub threshold: f64,
}

impl Default for DriftRule {
    fn default() -> Self {
        DriftRule {
            window: 6,
            threshold: 0.2,
        }
    }
}

/// The last `last` runs of `experiment` (not dry runs), oldest first, with drift flags.
pub fn trend<B: Backend + ?Sized>(
    s: &B,
    experiment: &str,
    last: u64,
    rule: DriftRule,
) -> Result<Trend, StoreError> {
    let d = s.dialect();
    let json = |keys: &[&str]| d.json_number("j.json", keys);
    let sql = format!(
        "SELECT run_id, started_unix_ms, status, mttr_ms, abort_latency_ms, baseline_p95_ms,
                (SELECT max(p99_ms) FROM stages g WHERE g.run_id = r.run_id),
                (SELECT max(error_rate) FROM stages g WHERE g.run_id = r.run_id),
                {}, {}, {}
         FROM runs r LEFT JOIN journals j USING (run_id) WHERE experiment = ?1 AND dry_run = 0
         ORDER BY started_unix_ms DESC, run_id DESC LIMIT ?2",
        json(&["detection", "ttd_ms"]),
        json(&["detection", "ttr_ms"]),
        json(&["robustness"]),
    );
    let last = i64::try_from(last).unwrap_or(i64::MAX);
    let at = |r: &[Val], k: usize| r.get(k).cloned().unwrap_or(Val::Null);
    let mut runs: Vec<TrendRun> = s
        .select(&sql, &[experiment.into(), last.into()])?
        .iter()
        .map(|r| TrendRun {
            run_id: at(r, 0).string(),
            started_unix_ms: at(r, 1).int().unwrap_or(0),
            status: at(r, 2).string(),
            mttr_ms: at(r, 3).real(),
            abort_latency_ms: at(r, 4).real(),
            baseline_p95_ms: at(r, 5).real(),
            stage_p99_ms: at(r, 6).real(),
            stage_error_rate: at(r, 7).real(),
            ttd_ms: at(r, 8).real(),
            probe_ttr_ms: at(r, 9).real(),
            robustness: at(r, 10).real(),
        })
        .collect();
    runs.reverse();
    let judged: Vec<&TrendRun> = runs
        .iter()
        .filter(|r| {
            matches!(
                r.status.as_str(),
                "completed" | "deviated" | "aborted" | "not_run"
            )
        })
        .collect();
    let pass_rate = (!judged.is_empty()).then(|| {
        judged.iter().filter(|r| r.status == "completed").count() as f64 / judged.len() as f64
    });
    let passing: Vec<&TrendRun> = runs.iter().filter(|r| r.status == "completed").collect();
    let recent = &passing[passing.len().saturating_sub(rule.window)..];
    let metrics: [(&str, Metric); 5] = [
        ("mttr_ms", |r| r.mttr_ms),
        ("stage_p99_ms", |r| r.stage_p99_ms),
        ("baseline_p95_ms", |r| r.baseline_p95_ms),
        ("ttd_ms", |r| r.ttd_ms),
        ("probe_ttr_ms", |r| r.probe_ttr_ms),
    ];
    let drifts = metrics
        .iter()
        .filter_map(|(name, get)| {
            let xs: Vec<f64> = recent.iter().filter_map(|r| get(r)).collect();
            drift(name, &xs, rule.threshold)
        })
        .collect();
    Ok(Trend {
        experiment: experiment.to_string(),
        runs,
        pass_rate,
        drifts,
    })
}

/// A rising metric: at least 4 values, the later half's mean above the earlier half's by
/// more than `threshold`, and a positive least-squares slope.
pub fn drift(metric: &str, xs: &[f64], threshold: f64) -> Option<Drift> {
    if xs.len() < 4 {
        return None;
    }
    let half = xs.len() / 2;
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (earlier, later) = (mean(&xs[..half]), mean(&xs[xs.len() - half..]));
    let n = xs.len() as f64;
    let mx = (n - 1.0) / 2.0;
    let my = mean(xs);
    let (num, den) = xs.iter().enumerate().fold((0.0, 0.0), |(a, b), (i, y)| {
        let dx = i as f64 - mx;
        (a + dx * (y - my), b + dx * dx)
    });
    let slope = if den > 0.0 { num / den } else { 0.0 };
    // An absolute floor: 1 ms of noise on a 0.5 ms MTTR is not a drift.
    let floor = 1.0;
    let change = if earlier > 0.0 {
        later / earlier - 1.0
    } else {
        f64::INFINITY
    };
    (slope > 0.0 && later - earlier > floor && change > threshold).then(|| Drift {
        metric: metric.to_string(),
        earlier,
        later,
        change,
        slope_per_run: slope,
        runs: xs.len(),
        message: format!(
            "{metric} rising over the last {} passing runs: {earlier:.0} → {later:.0} ms ({:+.0} %), {slope:+.1} ms per run",
            xs.len(),
            change * 100.0
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::drift;

    #[test]
    fn a_rising_series_drifts_and_a_flat_or_falling_one_does_not() {
        let d = drift("mttr_ms", &[100.0, 110.0, 150.0, 200.0, 260.0, 300.0], 0.2).expect("drift");
        assert!(d.slope_per_run > 0.0 && d.change > 0.2, "{d:?}");
        assert!(drift("mttr_ms", &[100.0, 102.0, 99.0, 101.0, 100.0, 103.0], 0.2).is_none());
        assert!(drift("mttr_ms", &[300.0, 260.0, 200.0, 150.0], 0.2).is_none());
        assert!(
            drift("mttr_ms", &[1.0, 2.0, 3.0], 0.2).is_none(),
            "too few runs"
        );
        assert!(
            drift("mttr_ms", &[0.1, 0.2, 0.3, 0.9], 0.2).is_none(),
            "under the absolute floor"
        );
    }
}
