//! The search for the barely-violating setting: where, along a segment of the searched
//! space, robustness ρ crosses 0 — the faults that take an SLO just past its boundary.
//!
//! brownout's draws are threshold-coupled: for a fixed seed, a higher probability or a wider
//! share of sessions fires on a superset of the calls. So for one seed (common random
//! numbers) ρ is, in the usual case, monotone along a segment that strengthens the faults,
//! and plain bisection finds that seed's boundary in a handful of runs. The search bisects
//! per seed, aggregates the seeds' boundaries (median, and a 95 % interval for it),
//! checks monotonicity on the way (extra points on both sides of each seed's boundary), and
//! where it fails falls back to a noise-aware **majority bisection**: at each point every
//! seed votes hold/break, and the bisection follows the majority (the point where half the
//! seeds break).
//!
//! Pure: the caller's [`Objective`] runs the simulator; points are parameters `t` in [0, 1]
//! along the segment, mapped by the caller.

pub mod adaptive;
pub mod genetic;
pub mod gp;
pub mod levelset;
pub mod order;
pub mod pool;
pub mod probes;
pub mod space;
#[cfg(test)]
mod space_tests;

use order::{median, median_interval};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// ρ at a point `t` along the segment for one seed. `full`: run to the end (the exact ρ);
/// otherwise the run may stop at the first breach (only the sign is used). Shared by the
/// threads that search seeds in parallel.
pub trait Objective: Sync {
    fn rho(&self, t: f64, seed: u64, full: bool) -> f64;
}

impl<F: Fn(f64, u64, bool) -> f64 + Sync> Objective for F {
    fn rho(&self, t: f64, seed: u64, full: bool) -> f64 {
        self(t, seed, full)
    }
}

/// How far a search may go.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub max_evals: u64,
    pub deadline: Option<Instant>,
}

impl Budget {
    fn spent(&self, evals: u64) -> bool {
        evals >= self.max_evals || self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

/// Evaluations counted across threads.
struct Counter<'a> {
    n: AtomicU64,
    budget: &'a Budget,
}

impl Counter<'_> {
    fn eval(&self, obj: &dyn Objective, t: f64, seed: u64) -> f64 {
        self.n.fetch_add(1, Ordering::Relaxed);
        obj.rho(t, seed, false)
    }

    fn spent(&self) -> bool {
        self.budget.spent(self.n.load(Ordering::Relaxed))
    }
}

/// One seed's crossing.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SeedCrossing {
    pub seed: u64,
    /// The last point found holding and the first found breaking (`None`: no crossing in
    /// the segment — it holds everywhere, or breaks already at its start).
    pub hold: Option<f64>,
    pub brk: Option<f64>,
    /// ρ at the segment's ends.
    pub rho_start: f64,
    pub rho_end: f64,
    /// The extra points agreed with a single crossing.
    pub monotone: bool,
}

impl SeedCrossing {
    pub fn boundary(&self) -> Option<f64> {
        match (self.hold, self.brk) {
            (Some(a), Some(b)) => Some((a + b) / 2.0),
            _ => None,
        }
    }
}

/// A segment's result.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Crossing {
    /// `per-seed bisection` or `majority bisection` (the fallback).
    pub method: &'static str,
    pub seeds: Vec<SeedCrossing>,
    /// The boundary (median of the seeds' boundaries, or the majority's), in t.
    pub boundary: Option<f64>,
    /// A 95 % interval for the boundary over seeds (order statistics of the seeds'
    /// crossings around their median; `[min, max]` under 6 seeds), in t; it always holds the
    /// boundary (the majority's bracket is added when the majority decided).
    pub interval: Option<(f64, f64)>,
    /// The seeds' crossings' standard deviation, in t: how much the boundary itself moves
    /// from seed to seed.
    pub spread: Option<f64>,
    /// Every seed's extra points agreed with one crossing.
    pub monotone: bool,
    /// Seeds that hold over the whole segment, and that break at its start.
    pub always_hold: usize,
    pub always_break: usize,
    /// The barely-violating point: just past the boundary, where most seeds break.
    pub barely: Option<f64>,
    pub evals: u64,
    /// The budget ran out before the tolerance was reached.
    pub cut_short: bool,
}

/// One seed: bisection between a holding and a breaking end, then the monotonicity check.
/// `None`: the objective gave no answer at an end (its deadline stopped it).
fn one_seed(
    obj: &dyn Objective,
    seed: u64,
    tol: f64,
    count: &Counter,
) -> Option<(SeedCrossing, bool)> {
    let f = |t: f64| count.eval(obj, t, seed);
    let r0 = f(0.0);
    if r0.is_nan() {
        return None;
    }
    let r1 = f(1.0);
    if r1.is_nan() {
        return None;
    }
    let mut c = SeedCrossing {
        seed,
        hold: None,
        brk: None,
        rho_start: r0,
        rho_end: r1,
        monotone: true,
    };
    let mut cut = false;
    if r0 >= 0.0 && r1 < 0.0 {
        let (mut a, mut b) = (0.0, 1.0);
        while b - a > tol {
            if count.spent() {
                cut = true;
                break;
            }
            let m = (a + b) / 2.0;
            let r = f(m);
            if r.is_nan() {
                cut = true;
                break;
            } else if r >= 0.0 {
                a = m;
            } else {
                b = m;
            }
        }
        // Monotone: halfway below the hold still holds, halfway above the break breaks
        // (a NaN, no answer, says nothing either way).
        if a > 0.0 && !count.spent() && f(a * 0.5) < 0.0 {
            c.monotone = false;
        }
        if b < 1.0 && !count.spent() && f(b + (1.0 - b) * 0.5) >= 0.0 {
            c.monotone = false;
        }
        c.hold = Some(a);
        c.brk = Some(b);
    } else if r0 >= 0.0 && r1 >= 0.0 {
        // Holds at both ends: a crossing in between would need two (not monotone).
        if !count.spent() && f(0.5) < 0.0 {
            c.monotone = false;
        }
    }
    Some((c, cut))
}

/// Find where ρ crosses 0 along the segment, to within `tol` (in t), for `seeds`, the
/// seeds spread over `threads` threads. An objective answers NaN when its own deadline
/// stopped it: that seed is unfinished (cut short, left out of [`Crossing::seeds`]).
pub fn crossing(
    obj: &dyn Objective,
    seeds: &[u64],
    tol: f64,
    budget: Budget,
    threads: usize,
    progress: &(dyn Fn(&str) + Sync),
) -> Crossing {
    let tol = tol.clamp(1e-9, 0.5);
    let count = Counter {
        n: AtomicU64::new(0),
        budget: &budget,
    };
    let threads = threads.clamp(1, seeds.len().max(1));
    // A queue of seeds (not fixed chunks): a thread that drew quick seeds takes more.
    let next = AtomicUsize::new(0);
    let mut results: Vec<(usize, Option<(SeedCrossing, bool)>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (count, next) = (&count, &next);
                s.spawn(move || {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&seed) = seeds.get(i) else { break };
                        if count.spent() {
                            break;
                        }
                        let Some(r) = one_seed(obj, seed, tol, count) else {
                            mine.push((i, None));
                            break;
                        };
                        progress(&format!(
                            "seed {seed}: {}",
                            r.0.boundary()
                                .map_or("no crossing".into(), |b| format!("boundary at t={b:.4}"))
                        ));
                        mine.push((i, Some(r)));
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    results.sort_by_key(|r| r.0);
    let unfinished = results.iter().any(|r| r.1.is_none());
    let results: Vec<(SeedCrossing, bool)> = results.into_iter().filter_map(|r| r.1).collect();
    let cut_short = unfinished || results.iter().any(|r| r.1) || count.spent();
    let per_seed: Vec<SeedCrossing> = results.into_iter().map(|r| r.0).collect();
    let evals = count.n.load(Ordering::Relaxed);
    let monotone = per_seed.iter().all(|c| c.monotone);
    let always_hold = per_seed
        .iter()
        .filter(|c| c.rho_start >= 0.0 && c.rho_end >= 0.0)
        .count();
    let always_break = per_seed.iter().filter(|c| c.rho_start < 0.0).count();
    let mut out = Crossing {
        method: "per-seed bisection",
        seeds: per_seed,
        boundary: None,
        interval: None,
        spread: None,
        monotone,
        always_hold,
        always_break,
        barely: None,
        evals,
        cut_short,
    };
    // The interval is over the seeds' crossings (each bracketed, monotone or not): how
    // much the boundary moves from one seed to the next, not the bisection's precision.
    let mut bs: Vec<f64> = out
        .seeds
        .iter()
        .filter_map(SeedCrossing::boundary)
        .collect();
    let n = bs.len();
    if n > 0 {
        let mean = bs.iter().sum::<f64>() / n as f64;
        let sd = if n > 1 {
            (bs.iter().map(|b| (b - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        // An interval for the *median* (the boundary printed), from order statistics: it
        // always holds the median, whatever the seeds' skew (a t interval for the mean
        // did not, and printed boundaries outside their own interval).
        out.interval = Some(if n > 1 {
            median_interval(&mut bs)
        } else {
            ((bs[0] - tol).max(0.0), (bs[0] + tol).min(1.0))
        });
        out.spread = Some(sd);
    }
    // Not monotone but the budget is spent: the majority has nothing left to run on (its
    // points would all go unanswered); the seeds' own crossings stand, cut short.
    if monotone || count.spent() {
        let mut brks: Vec<f64> = out.seeds.iter().filter_map(|c| c.brk).collect();
        out.boundary = median(&mut bs);
        out.barely = median(&mut brks);
    } else {
        majority(obj, seeds, tol, budget, threads, &mut out, progress);
    }
    out
}

/// The fallback: bisection on the share of seeds that break (the majority's boundary),
/// each point's seeds evaluated in parallel.
fn majority(
    obj: &dyn Objective,
    seeds: &[u64],
    tol: f64,
    budget: Budget,
    threads: usize,
    out: &mut Crossing,
    progress: &(dyn Fn(&str) + Sync),
) {
    out.method = "majority bisection";
    let count = Counter {
        n: AtomicU64::new(out.evals),
        budget: &budget,
    };
    let threads = threads.clamp(1, seeds.len().max(1));
    let breaking = |t: f64| -> f64 {
        let next = AtomicUsize::new(0);
        let n: usize = std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads)
                .map(|_| {
                    let (count, next) = (&count, &next);
                    s.spawn(move || {
                        let mut broke = 0;
                        while let Some(&seed) = seeds.get(next.fetch_add(1, Ordering::Relaxed)) {
                            // NaN (no answer: the deadline) counts as holding; the
                            // deadline also ends the bisection below.
                            if count.eval(obj, t, seed) < 0.0 {
                                broke += 1;
                            }
                        }
                        broke
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap_or(0)).sum()
        });
        n as f64 / seeds.len().max(1) as f64
    };
    if breaking(1.0) < 0.5 || breaking(0.0) >= 0.5 {
        out.evals = count.n.load(Ordering::Relaxed);
        return;
    }
    let (mut a, mut b) = (0.0, 1.0);
    while b - a > tol {
        if count.spent() {
            out.cut_short = true;
            break;
        }
        let m = (a + b) / 2.0;
        if breaking(m) >= 0.5 {
            b = m;
        } else {
            a = m;
        }
        progress(&format!("majority: between t={a:.4} and t={b:.4}"));
    }
    let boundary = (a + b) / 2.0;
    out.boundary = Some(boundary);
    // The majority's point is the boundary here: its interval holds it too.
    out.interval = Some(match out.interval {
        None => (a, b),
        Some((lo, hi)) => (lo.min(a), hi.max(b)),
    });
    out.barely = Some(b);
    out.evals = count.n.load(Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_interval_holds_the_median_whatever_the_skew() {
        let mut v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(median_interval(&mut v), (2.0, 9.0));
        let mut few = vec![0.3, 0.1, 0.2];
        assert_eq!(median_interval(&mut few), (0.1, 0.3));
        // Skewed: one far seed pulled a mean's interval away from the median before.
        let mut skew = vec![0.20, 0.21, 0.22, 0.23, 0.24, 0.25, 0.95, 0.96];
        let m = median(&mut skew.clone()).unwrap_or(f64::NAN);
        let (lo, hi) = median_interval(&mut skew);
        assert!(lo <= m && m <= hi, "{lo} {m} {hi}");
    }

    fn budget() -> Budget {
        Budget {
            max_evals: 10_000,
            deadline: None,
        }
    }

    #[test]
    fn per_seed_bisection_finds_each_seeds_threshold() {
        // Seed s breaks above 0.3 + s/100: a monotone, threshold-coupled objective.
        let obj = |t: f64, s: u64, _full: bool| 0.3 + s as f64 / 100.0 - t;
        let seeds: Vec<u64> = (0..5).collect();
        let c = crossing(&obj, &seeds, 1.0 / 256.0, budget(), 2, &|_| {});
        assert!(c.monotone);
        assert_eq!(c.method, "per-seed bisection");
        let b = c.boundary.expect("a boundary");
        assert!((b - 0.32).abs() < 0.01, "{b}");
        let (lo, hi) = c.interval.expect("interval");
        assert!(lo < 0.32 && 0.32 < hi, "{lo} {hi}");
        let barely = c.barely.expect("barely");
        assert!(barely >= b && barely - b < 0.01, "{barely} {b}");
        assert!(c.evals < 5 * 20, "{}", c.evals);
    }

    #[test]
    fn a_non_monotone_objective_is_caught_and_the_majority_decides() {
        // Breaks in a band (0.2, 0.4) and again above 0.7: two crossings.
        let obj = |t: f64, _s: u64, _full: bool| {
            if (0.2..0.4).contains(&t) || t > 0.7 {
                -0.1
            } else {
                0.1
            }
        };
        let c = crossing(&obj, &[1, 2, 3], 1.0 / 128.0, budget(), 2, &|_| {});
        assert!(!c.monotone, "{c:?}");
        assert_eq!(c.method, "majority bisection");
        assert!(c.boundary.is_some());
    }

    #[test]
    fn a_seed_its_deadline_stopped_is_unfinished_not_a_seed_without_crossing() {
        // NaN: the simulation's own deadline stopped it (no answer). Such a seed is left out
        // (it was counted as neither holding nor breaking, yet as a seed searched).
        let obj = |t: f64, s: u64, _f: bool| if s == 1 { 0.5 - t } else { f64::NAN };
        let c = crossing(&obj, &[1, 2, 3], 0.01, budget(), 1, &|_| {});
        assert_eq!(c.seeds.len(), 1, "{c:?}");
        assert!(c.cut_short);
        assert_eq!((c.always_hold, c.always_break), (0, 0));
        let none = |_t: f64, _s: u64, _f: bool| f64::NAN;
        let c = crossing(&none, &[1, 2], 0.01, budget(), 2, &|_| {});
        assert!(
            c.seeds.is_empty() && c.cut_short && c.boundary.is_none(),
            "{c:?}"
        );
    }

    #[test]
    fn a_spent_budget_keeps_the_seeds_crossings_when_monotonicity_fails() {
        // Two crossings (a band, then above 0.7): not monotone; the budget is spent with the
        // seeds (their 21 simulations), after which the objective answers NaN (its deadline).
        // The majority cannot run; it used to, on NaNs, and left no boundary at all.
        let calls = AtomicU64::new(0);
        let obj = |t: f64, _s: u64, _f: bool| {
            if calls.fetch_add(1, Ordering::Relaxed) >= 21 {
                f64::NAN
            } else if (0.2..0.4).contains(&t) || t > 0.7 {
                -0.1
            } else {
                0.1
            }
        };
        let tight = Budget {
            max_evals: 21,
            deadline: None,
        };
        let c = crossing(&obj, &[1, 2, 3], 1.0 / 8.0, tight, 1, &|_| {});
        assert_eq!(c.seeds.len(), 3, "{c:?}");
        assert!(!c.monotone && c.cut_short, "{c:?}");
        assert!(c.boundary.is_some(), "{c:?}");
    }

    #[test]
    fn no_crossing_is_said_and_the_budget_is_kept() {
        let hold = |_t: f64, _s: u64, _f: bool| 0.5;
        let c = crossing(&hold, &[1, 2], 0.01, budget(), 2, &|_| {});
        assert_eq!((c.boundary, c.always_hold), (None, 2));
        let obj = |t: f64, _s: u64, _f: bool| 0.5 - t;
        let tight = Budget {
            max_evals: 6,
            deadline: None,
        };
        let c = crossing(&obj, &[1, 2, 3], 1e-6, tight, 1, &|_| {});
        assert!(c.cut_short);
        assert!(c.evals <= 8, "{}", c.evals);
    }
}
