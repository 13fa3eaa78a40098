//! Adaptive seeds: keep adding seeds until the median of the seeds' boundaries is known to
//! the asked precision, or a budget is spent.
//!
//! **The interval.** Each seed's bisection ends in a bracket `[hold, break]` that holds its
//! crossing. The interval for the median of the crossings over seeds is distribution-free,
//! from order statistics: `[hold₍r₎, break₍n+1−r₎]` with the largest `r` whose coverage
//! `1 − 2·P(Binomial(n, ½) < r)` is at least 95 %. Using the holds for the lower end and the
//! breaks for the upper end makes it honest about each seed's bracket too (the r-th smallest
//! crossing is at least the r-th smallest hold). Order statistics rather than a bootstrap:
//! the coverage is exact for any distribution of crossings (the cascade's is skewed and
//! lumpy, where a bootstrap of the median is known to be unreliable), it needs no resampling
//! and no random draws (nothing to seed), and the median printed (of the brackets' midpoints)
//! always lies inside it.
//!
//! **Rounds.** A first round of seeds, then rounds sized from the interval so far (its width
//! shrinks as 1/√n), each capped by what is left of the budgets. A round's seeds are
//! bisected in parallel; a seed's result depends only on the seed, and the rounds' sizes
//! only on earlier results, so the outcome does not depend on the threads (only a
//! `deadline` can cut a round at a time that depends on the machine: then it is said).
//!
//! **Focus.** From the second round on, a seed's bisection stops refining once its bracket
//! lies wholly outside the region where the interval's ends can fall (the last interval,
//! widened by its own width on each side): where far seeds are, only their side matters.
//! Their wide brackets are still used as they are, so the interval stays honest.
//!
//! **Monotonicity** is checked on the first round's seeds (two extra points each, as in the
//! fixed-seed search): enough to say whether seeds cross more than once, without paying two
//! simulations more for every seed added.

use super::order::interval_rank;
use super::{pool, Objective, SeedCrossing};
use std::time::Instant;

/// What the adaptive search may do.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Seeds are `first_seed`, `first_seed + 1`, …
    pub first_seed: u64,
    /// Seeds in the first round (at least 6: fewer cannot give a 95 % interval).
    pub initial: usize,
    pub max_seeds: usize,
    /// The interval's half width to reach, in t (a fraction of the segment).
    pub precision: f64,
    /// Each seed's bracket, in t, at most this wide where it matters.
    pub tol: f64,
    /// Simulations at most (checked between rounds: a round is sized to fit).
    pub max_evals: u64,
    pub deadline: Option<Instant>,
    pub threads: usize,
}

/// One round's state after it ran.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Round {
    pub seeds: usize,
    pub evals: u64,
    pub median: Option<f64>,
    pub interval: Option<(f64, f64)>,
}

/// The adaptive search's result.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Outcome {
    /// Every seed searched, in seed order.
    pub seeds: Vec<SeedCrossing>,
    /// The median of the seeds' crossings (brackets' midpoints), in t; `None` when most
    /// seeds do not cross (hold everywhere or break at the start).
    pub median: Option<f64>,
    /// The 95 % interval for that median (always holds it), in t.
    pub interval: Option<(f64, f64)>,
    /// The larger distance from the median to an end of its interval, in t.
    pub half_width: Option<f64>,
    /// The half width asked for was reached.
    pub reached: bool,
    /// Why it stopped short: `max-seeds`, `max-evals`, `time`, `no crossing`.
    pub stopped: Option<&'static str>,
    /// The median of the seeds' breaking points (the barely-violating point), in t.
    pub barely: Option<f64>,
    pub rounds: Vec<Round>,
    pub evals: u64,
    /// Seeds whose extra points contradicted a single crossing (their crossing is the one
    /// the bisection found), of the `checked` ones (the first round's).
    pub non_monotone: usize,
    pub checked: usize,
    pub always_hold: usize,
    pub always_break: usize,
    /// A deadline cut a round: this result depends on the machine's speed.
    pub timed_out: bool,
}

/// One seed's bisection, refined only where `focus` (in t) says it matters. `None` if the
/// deadline passed. The second value is the simulations it took.
fn one_seed(
    obj: &dyn Objective,
    seed: u64,
    tol: f64,
    focus: (f64, f64),
    check: bool,
    deadline: Option<Instant>,
) -> Option<(SeedCrossing, u64)> {
    let mut evals = 0u64;
    let late = || deadline.is_some_and(|d| Instant::now() >= d);
    let mut f = |t: f64| {
        evals += 1;
        obj.rho(t, seed, false)
    };
    let (mut a, mut b) = (0.0f64, 1.0f64);
    let (mut held, mut broke) = (false, false);
    while b - a > tol && b > focus.0 && a < focus.1 {
        if late() {
            return None;
        }
        let m = (a + b) / 2.0;
        let r = f(m);
        if r.is_nan() {
            return None; // no answer: the objective's own deadline stopped it
        } else if r >= 0.0 {
            (a, held) = (m, true);
        } else {
            (b, broke) = (m, true);
        }
    }
    let mut c = SeedCrossing {
        seed,
        hold: Some(a),
        brk: Some(b),
        rho_start: f64::NAN,
        rho_end: f64::NAN,
        monotone: true,
    };
    // The ends, only where the bisection never saw that side.
    if !held {
        c.rho_start = f(0.0);
        if c.rho_start.is_nan() {
            return None;
        }
        if c.rho_start < 0.0 {
            (c.hold, c.brk) = (None, None);
        }
    }
    if !broke {
        c.rho_end = f(1.0);
        if c.rho_end.is_nan() {
            return None;
        }
        if c.rho_end >= 0.0 {
            (c.hold, c.brk) = (None, None);
        }
    }
    // Monotone where the bracket is fine: halfway below the hold holds, halfway above the
    // break breaks.
    if let (Some(h), Some(k)) = (c.hold, c.brk) {
        if check && k - h <= tol {
            if late() {
                return None;
            }
            if h > 0.0 && f(h * 0.5) < 0.0 {
                c.monotone = false;
            }
            if k < 1.0 && f(k + (1.0 - k) * 0.5) >= 0.0 {
                c.monotone = false;
            }
        }
    }
    Some((c, evals))
}

/// A seed's bracket, with the seeds that never cross censored at the ends.
fn bracket(c: &SeedCrossing) -> (f64, f64) {
    match (c.hold, c.brk) {
        (Some(h), Some(k)) => (h, k),
        _ if c.rho_start < 0.0 => (0.0, 0.0),
        _ => (1.0, 1.0),
    }
}

fn median_of(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The median of the seeds' crossings and its interval (`None` when the median is
/// censored: most seeds do not cross).
fn summarise(seeds: &[SeedCrossing]) -> (Option<f64>, Option<(f64, f64)>) {
    let n = seeds.len();
    if n == 0 {
        return (None, None);
    }
    let br: Vec<(f64, f64)> = seeds.iter().map(bracket).collect();
    let mut mids: Vec<f64> = br.iter().map(|(h, k)| (h + k) / 2.0).collect();
    let mut holds: Vec<f64> = br.iter().map(|b| b.0).collect();
    let mut brks: Vec<f64> = br.iter().map(|b| b.1).collect();
    let m = median_of(&mut mids);
    let (lo_censored, hi_censored) = (
        seeds.iter().filter(|c| bracket(c) == (0.0, 0.0)).count(),
        seeds.iter().filter(|c| bracket(c) == (1.0, 1.0)).count(),
    );
    if 2 * lo_censored >= n || 2 * hi_censored >= n {
        return (None, None);
    }
    holds.sort_by(f64::total_cmp);
    brks.sort_by(f64::total_cmp);
    let r = interval_rank(n);
    (Some(m), Some((holds[r - 1], brks[n - r])))
}

/// Search seeds in rounds until the median's interval is `precision` wide on each side.
pub fn search(obj: &dyn Objective, s: &Settings, progress: &(dyn Fn(&str) + Sync)) -> Outcome {
    let tol = s.tol.clamp(1e-9, 0.5);
    let max_seeds = s.max_seeds.max(1);
    let mut seeds: Vec<SeedCrossing> = Vec::new();
    let mut rounds = Vec::new();
    let mut evals = 0u64;
    let mut focus = (0.0, 1.0);
    let mut next_size = s.initial.clamp(6, max_seeds.max(6)).min(max_seeds);
    let (mut stopped, mut timed_out, mut reached) = (None, false, false);
    let mut checked = 0;
    let (mut median, mut interval);
    loop {
        let first = s.first_seed + seeds.len() as u64;
        let jobs: Vec<u64> = (first..first + next_size as u64).collect();
        let check = rounds.is_empty();
        let done = pool::map(&jobs, s.threads, &|&seed| {
            one_seed(obj, seed, tol, focus, check, s.deadline)
        });
        if check {
            // The seeds that finished (a seed the deadline cut was not checked).
            checked = done.iter().filter(|r| r.is_some()).count();
        }
        for r in done {
            match r {
                Some((c, e)) => {
                    evals += e;
                    seeds.push(c);
                }
                None => timed_out = true,
            }
        }
        (median, interval) = summarise(&seeds);
        rounds.push(Round {
            seeds: seeds.len(),
            evals,
            median,
            interval,
        });
        let half = half_width(median, interval);
        progress(&match (median, half) {
            (Some(m), Some(h)) => format!(
                "{} seeds, {evals} simulations: median t={m:.4} ±{h:.4} (goal ±{:.4})",
                seeds.len(),
                s.precision
            ),
            _ => format!("{} seeds: most do not cross", seeds.len()),
        });
        if timed_out || s.deadline.is_some_and(|d| Instant::now() >= d) {
            stopped = Some("time");
            timed_out = true;
            break;
        }
        let Some(h) = half else {
            stopped = Some("no crossing");
            break;
        };
        if h <= s.precision {
            reached = true;
            break;
        }
        if seeds.len() >= max_seeds {
            stopped = Some("max-seeds");
            break;
        }
        // The width shrinks as 1/√n: the seeds that should reach the goal, at least a
        // quarter more and at most as many again as there are; no more than the budgets
        // leave room for at this round's cost per seed.
        let n = seeds.len();
        let want = ((n as f64) * (h / s.precision).powi(2)).ceil() as usize;
        let per_seed = (evals as f64 / n as f64).max(1.0);
        let room = ((s.max_evals.saturating_sub(evals)) as f64 / per_seed).floor() as usize;
        next_size = want
            .saturating_sub(n)
            .clamp(n.div_ceil(4).max(2), n)
            .min(max_seeds - n)
            .min(room);
        if next_size == 0 {
            stopped = Some("max-evals");
            break;
        }
        if let Some((lo, hi)) = interval {
            let w = hi - lo;
            focus = ((lo - w).max(0.0), (hi + w).min(1.0));
        }
    }
    let mut brks: Vec<f64> = seeds.iter().filter_map(|c| c.brk).collect();
    let barely = (median.is_some() && !brks.is_empty()).then(|| median_of(&mut brks));
    Outcome {
        non_monotone: seeds.iter().filter(|c| !c.monotone).count(),
        checked,
        always_hold: seeds.iter().filter(|c| bracket(c) == (1.0, 1.0)).count(),
        always_break: seeds.iter().filter(|c| bracket(c) == (0.0, 0.0)).count(),
        half_width: half_width(median, interval),
        seeds,
        median,
        interval,
        reached,
        stopped,
        barely,
        rounds,
        evals,
        timed_out,
    }
}

fn half_width(median: Option<f64>, interval: Option<(f64, f64)>) -> Option<f64> {
    Some((median? - interval?.0).max(interval?.1 - median?))
}

#[cfg(test)]
#[path = "adaptive_tests.rs"]
mod tests;
