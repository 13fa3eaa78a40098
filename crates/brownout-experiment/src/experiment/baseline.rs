//! Tolerances taken from history: a steady-state probe's `from_baseline` bound, derived
//! before the run from the same probe's steady state (before the faults) in the latest
//! completed runs of the same experiment in the store, and recorded in the journal with
//! the runs it came from.
//!
//! The arithmetic ([`derive`]) and the reading of past journals ([`value_in`]) are pure;
//! [`resolve`] reads the store and writes the bound into the loaded experiment.

use super::load::Loaded;
pub use super::records::BaselineRecord;
use super::spec::{BaselineStat, Tolerance};
use brownout_store::store::{ListFilter, Store};
use serde_json::Value;
use std::path::Path;

/// Default number of past runs learnt from.
pub const DEFAULT_RUNS: u32 = 10;
/// Default fewest runs a bound is taken from.
pub const DEFAULT_MIN_RUNS: u32 = 3;
/// Default number of standard deviations.
pub const DEFAULT_SIGMA: f64 = 3.0;

/// The bound from history: `mean ± sigma·sd` (upward for latency, downward for success),
/// or the `percentile`-th percentile of the values (the lower tail for success). The
/// standard deviation is at least 1 % of the mean (and 0.1 ms for latency): a history of
/// identical values still leaves room for the next run's rounding.
pub fn derive(stat: BaselineStat, values: &[f64], sigma: f64, percentile: Option<f64>) -> f64 {
    let success = stat == BaselineStat::Success;
    let raw = if let Some(p) = percentile {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let q = if success { 100.0 - p } else { p };
        let rank = (q / 100.0 * (v.len() as f64 - 1.0)).clamp(0.0, v.len() as f64 - 1.0);
        let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
        v[lo] + (v[hi] - v[lo]) * (rank - lo as f64)
    } else {
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = if values.len() > 1 {
            values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        let floor = if success {
            0.01 * mean
        } else {
            (0.01 * mean).max(0.1)
        };
        let sd = var.sqrt().max(floor);
        if success {
            mean - sigma * sd
        } else {
            mean + sigma * sd
        }
    };
    if success {
        raw.clamp(0.0, 100.0)
    } else {
        raw.max(0.0)
    }
}

/// The bound as a tolerance string.
pub fn bound_text(stat: BaselineStat, bound: f64) -> String {
    match stat {
        BaselineStat::Success => format!(">= {bound:.2}%"),
        _ => format!("<= {bound:.1}ms"),
    }
}

/// A past journal's value of `stat` for probe number `idx` calling `tool` (the same
/// position first, else the first probe of that tool), from its steady state before.
pub fn value_in(journal: &Value, idx: usize, tool: &str, stat: BaselineStat) -> Option<f64> {
    let probes = journal.pointer("/steady_state_before/probes")?.as_array()?;
    let same_tool = |p: &&Value| p.get("tool").and_then(Value::as_str) == Some(tool);
    let p = probes
        .get(idx)
        .filter(same_tool)
        .or_else(|| probes.iter().find(same_tool))?;
    let v = match stat {
        BaselineStat::Success => p.get("success_pct"),
        s => p.pointer(&format!("/latency/{}_ms", s.name())),
    };
    v.and_then(Value::as_f64).filter(|v| v.is_finite())
}

fn set_bound(t: &mut Tolerance, stat: BaselineStat, text: String) {
    let slot = match stat {
        BaselineStat::P50 => &mut t.p50,
        BaselineStat::P95 => &mut t.p95,
        BaselineStat::P99 => &mut t.p99,
        BaselineStat::Success => &mut t.success,
    };
    *slot = Some(text);
}

fn own_bound(t: &Tolerance, stat: BaselineStat) -> Option<String> {
    match stat {
        BaselineStat::P50 => t.p50.clone(),
        BaselineStat::P95 => t.p95.clone(),
        BaselineStat::P99 => t.p99.clone(),
        BaselineStat::Success => t.success.clone(),
    }
}

/// Resolve every `from_baseline` tolerance of `x` from the store at `store` (`None`: the
/// default store; `Err` text: no store, e.g. `--no-store`), writing the bound into the
/// probe's tolerance. A record per such probe; nothing when no probe asks.
pub fn resolve(x: &mut Loaded, store: Result<Option<&Path>, &str>) -> Vec<BaselineRecord> {
    let asks: Vec<usize> = (0..x.spec.steady_state.len())
        .filter(|&i| x.spec.steady_state[i].tolerance.from_baseline.is_some())
        .collect();
    if asks.is_empty() {
        return Vec::new();
    }
    let opened = store.map_err(str::to_string).and_then(|p| {
        brownout_store::store::open(p).map_err(|e| format!("the store could not be opened: {e}"))
    });
    let title = x.spec.title.clone();
    let mut out = Vec::new();
    for i in asks {
        let p = &mut x.spec.steady_state[i];
        let t = &mut p.tolerance;
        let Some(stat) = t.from_baseline else {
            continue;
        };
        let (want, least) = (
            t.runs.unwrap_or(DEFAULT_RUNS),
            t.min_runs.unwrap_or(DEFAULT_MIN_RUNS),
        );
        let rule = match t.percentile {
            Some(q) => format!("p{q} of history"),
            None => format!(
                "mean {} {}σ",
                if stat == BaselineStat::Success {
                    "−"
                } else {
                    "+"
                },
                t.sigma.unwrap_or(DEFAULT_SIGMA)
            ),
        };
        let mut rec = BaselineRecord {
            probe: i,
            tool: p.call.tool.clone(),
            stat: stat.name().into(),
            rule,
            runs: Vec::new(),
            values: Vec::new(),
            bound: None,
            note: None,
        };
        match &opened {
            Err(why) => rec.note = Some(why.clone()),
            Ok(s) => {
                let filter = ListFilter {
                    experiment: Some(title.clone()),
                    status: Some("completed".into()),
                    limit: Some(u64::from(want) * 4),
                    ..ListFilter::default()
                };
                for run in s.list(&filter).unwrap_or_default() {
                    if rec.runs.len() >= want as usize {
                        break;
                    }
                    let Ok((_, j)) = s.journal(&run.run_id) else {
                        continue;
                    };
                    if j.get("dry_run").and_then(Value::as_bool) == Some(true) {
                        continue;
                    }
                    if let Some(v) = value_in(&j, i, &p.call.tool, stat) {
                        rec.runs.push(run.run_id);
                        rec.values.push(v);
                    }
                }
                if rec.values.len() < least as usize {
                    rec.note = Some(format!(
                        "{} completed run(s) with this probe in the store, {least} needed",
                        rec.values.len()
                    ));
                }
            }
        }
        if rec.note.is_none() {
            let b = derive(
                stat,
                &rec.values,
                t.sigma.unwrap_or(DEFAULT_SIGMA),
                t.percentile,
            );
            let text = bound_text(stat, b);
            set_bound(t, stat, text.clone());
            rec.bound = Some(text);
        } else {
            rec.bound = own_bound(t, stat);
        }
        out.push(rec);
    }
    out
}

/// One line per record, for the run's output.
pub fn describe(r: &BaselineRecord) -> String {
    match (&r.bound, &r.note) {
        (Some(b), None) => format!(
            "probe `{}`: {} {b} from history ({} over {} run(s))",
            r.tool,
            r.stat,
            r.rule,
            r.runs.len()
        ),
        (Some(b), Some(n)) => format!(
            "probe `{}`: {} {b} as written (no bound from history: {n})",
            r.tool, r.stat
        ),
        (None, n) => format!(
            "probe `{}`: {} unchecked this run (no bound from history: {})",
            r.tool,
            r.stat,
            n.as_deref().unwrap_or("none")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mean_plus_sigma_for_latency_and_minus_for_success() {
        let v = [100.0, 110.0, 120.0];
        // mean 110, sample sd 10.
        assert!((derive(BaselineStat::P95, &v, 3.0, None) - 140.0).abs() < 1e-9);
        let s = [99.0, 100.0, 98.0];
        assert!((derive(BaselineStat::Success, &s, 2.0, None) - 97.0).abs() < 1e-9);
        // Never above 100 % nor below 0 ms.
        assert!(derive(BaselineStat::Success, &[100.0], 3.0, None) <= 100.0);
    }

    #[test]
    fn identical_history_still_leaves_room() {
        let b = derive(BaselineStat::P95, &[50.0, 50.0, 50.0], 3.0, None);
        assert!(b > 50.0, "{b}");
        assert!((b - 51.5).abs() < 1e-9, "{b}");
    }

    #[test]
    fn percentile_is_the_upper_tail_for_latency_and_lower_for_success() {
        let v = [10.0, 20.0, 30.0, 40.0, 50.0];
        assert_eq!(derive(BaselineStat::P99, &v, 3.0, Some(100.0)), 50.0);
        assert_eq!(derive(BaselineStat::P99, &v, 3.0, Some(50.0)), 30.0);
        assert_eq!(derive(BaselineStat::Success, &v, 3.0, Some(100.0)), 10.0);
    }

    #[test]
    fn a_past_journal_gives_the_same_probe_by_position_then_by_tool() {
        let j = json!({"steady_state_before": {"probes": [
            {"tool": "a", "success_pct": 100.0, "latency": {"p95_ms": 12.5}},
            {"tool": "b", "success_pct": 95.0, "latency": {"p95_ms": 40.0}},
        ]}});
        assert_eq!(value_in(&j, 1, "b", BaselineStat::P95), Some(40.0));
        assert_eq!(value_in(&j, 0, "b", BaselineStat::Success), Some(95.0));
        assert_eq!(value_in(&j, 0, "c", BaselineStat::P95), None);
        assert_eq!(value_in(&json!({}), 0, "a", BaselineStat::P95), None);
    }

    #[test]
    fn bounds_read_back_as_tolerances() {
        assert_eq!(bound_text(BaselineStat::P95, 123.456), "<= 123.5ms");
        assert_eq!(bound_text(BaselineStat::Success, 97.5), ">= 97.50%");
    }
}
