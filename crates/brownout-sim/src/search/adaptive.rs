//! Adaptive seeds: keep adding seeds until the median of the seeds' boundaries is known to
//! the asked precision, or a budget is spent.
//!
//! **The interval.** Each seed's simulations end in a bracket `[hold, break]` that holds one
//! of its crossings. The interval for the median of the crossings over seeds is
//! distribution-free, from order statistics: `[hold₍r₎, break₍n+1−r₎]` with the largest `r`
//! whose coverage `1 − 2·P(Binomial(n, ½) < r)` is at least 95 %. Using the holds for the
//! lower end and the breaks for the upper end makes it honest about each seed's bracket too
//! (the r-th smallest crossing is at least the r-th smallest hold), however wide the
//! brackets are. Order statistics rather than a bootstrap: the coverage is exact for any
//! distribution of crossings (the cascade's is skewed and lumpy, where a bootstrap of the
//! median is known to be unreliable), it needs no resampling and no random draws, and the
//! median printed (of the brackets' midpoints) always lies inside it.
//!
//! **Cut points, not bisections.** What decides the interval is only on which side of its
//! two ends each seed's crossing lies: `hold₍r₎ ≥ L` exactly when at most `r − 1` seeds
//! have breached at or below `L`, and `break₍n+1−r₎ ≤ U` when at most `r − 1` have held at
//! or above `U` (the same reason a sample median's precision comes from the signs of the
//! observations around it, not their distances). So the first round's seeds are bisected
//! (coarsely: [`FIRST_TOL`]) for a first median; from then on the search certifies an
//! interval `[L, U] = median ∓ 0.9·precision` ([`HALF`]): every later seed gets a
//! simulation at one cut and, unless that already puts it beyond the cut, one at the other
//! — one or two simulations a seed instead of a bisection's five or more. The cuts move
//! (to where the counts either side put the median) when the first ones were off; a seed
//! whose bracket then straddles a new cut gets one more simulation there. Every simulation
//! lies inside its seed's bracket, so brackets stay honest ([`super::probes`]). When the
//! counts either side show that the budgets (seeds, simulations) cannot certify cuts that
//! close, the cuts widen (the precision aimed at doubles) to what they can: a seed placed
//! beyond a cut says nothing of how far beyond, so cuts too close would leave the interval
//! at the segment's ends.
//!
//! **Rounds.** Seeds are added in rounds sized from the counts either side of the cuts
//! (the seeds that should make both counts small enough), at least a sixth more each
//! round, capped by what is left of the budgets. A round's seeds are simulated in
//! parallel, one or two simulations each, so no core waits long for the round's last seed.
//! A seed's result depends only on the seed and the cuts, and the cuts and rounds only on
//! earlier results, so the outcome does not depend on the threads (only a `deadline` can
//! cut a round at a time that depends on the machine: then it is said).
//!
//! **Monotonicity** is checked on the first round's seeds (two extra points each, as in the
//! fixed-seed search): enough to say whether seeds cross more than once, without paying two
//! simulations more for every seed added.

use super::order::interval_rank;
use super::probes::{bisect, place, Bracket};
use super::{pool, Objective, SeedCrossing};
use std::time::Instant;

/// The first round's bisection stops at brackets this wide (or `tol`, if wider): its seeds
/// give a first median; precision comes from the cut points.
pub const FIRST_TOL: f64 = 1.0 / 16.0;
/// The cut points' distance from the median, as a share of the precision asked: the
/// interval certified is this much inside the goal, so that the median of the brackets'
/// midpoints may sit a little off its centre.
pub const HALF: f64 = 0.9;
/// The cut points move when the counts either side put the median this far (as a share of
/// their half distance) from their centre.
const RECENTRE: f64 = 0.25;

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
    /// The first round's brackets, in t, at most this wide (or [`FIRST_TOL`]).
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
    /// Every seed searched, in seed order. A seed placed beyond a cut point has only that
    /// side simulated (`hold` or `break` is `None` for the side never simulated).
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
    /// The median of the crossing seeds' breaking points (the barely-violating point), in
    /// t: each seed's bracket's upper end.
    pub barely: Option<f64>,
    pub rounds: Vec<Round>,
    pub evals: u64,
    /// Seeds whose extra points contradicted a single crossing (their crossing is the one
    /// the bisection found), of the `checked` ones (the first round's).
    pub non_monotone: usize,
    pub checked: usize,
    /// Seeds simulated at an end of the segment and found never to cross there.
    pub always_hold: usize,
    pub always_break: usize,
    /// A deadline cut a round: this result depends on the machine's speed.
    pub timed_out: bool,
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
fn summarise(seeds: &[Bracket]) -> (Option<f64>, Option<(f64, f64)>) {
    let n = seeds.len();
    if n == 0 {
        return (None, None);
    }
    let br: Vec<(f64, f64)> = seeds.iter().map(Bracket::span).collect();
    let mut mids: Vec<f64> = br.iter().map(|(h, k)| (h + k) / 2.0).collect();
    let mut holds: Vec<f64> = br.iter().map(|b| b.0).collect();
    let mut brks: Vec<f64> = br.iter().map(|b| b.1).collect();
    let m = median_of(&mut mids);
    let lo_censored = seeds.iter().filter(|c| c.always_breaks()).count();
    let hi_censored = seeds.iter().filter(|c| c.always_holds()).count();
    if 2 * lo_censored >= n || 2 * hi_censored >= n {
        return (None, None);
    }
    holds.sort_by(f64::total_cmp);
    brks.sort_by(f64::total_cmp);
    let r = interval_rank(n);
    (Some(m), Some((holds[r - 1], brks[n - r])))
}

/// Seeds wholly below `lo` (breached at or below it) and wholly above `hi`.
fn beyond(seeds: &[Bracket], (lo, hi): (f64, f64)) -> (usize, usize) {
    let below = seeds.iter().filter(|b| b.span().1 <= lo).count();
    let above = seeds.iter().filter(|b| b.span().0 >= hi).count();
    (below, above)
}

/// Where the cut points go next: around the median, kept where they are unless the counts
/// either side put the median clearly elsewhere.
fn next_cuts(
    seeds: &[Bracket],
    cuts: Option<(f64, f64)>,
    median: f64,
    precision: f64,
) -> (f64, f64) {
    let half = HALF * precision;
    let around = |c: f64| ((c - half).max(0.0), (c + half).min(1.0));
    let Some((lo, hi)) = cuts else {
        return around(median);
    };
    let n = seeds.len() as f64;
    let (below, above) = beyond(seeds, (lo, hi));
    let (f_lo, f_hi) = (below as f64 / n, 1.0 - above as f64 / n);
    // The median by the counts: interpolated between the cuts, or past the nearer one.
    let estimate = if f_lo < 0.5 && f_hi > 0.5 {
        lo + (0.5 - f_lo) / (f_hi - f_lo) * (hi - lo)
    } else if f_lo >= 0.5 {
        median.max(lo - (hi - lo))
    } else {
        median.min(hi + (hi - lo))
    };
    let centre = (lo + hi) / 2.0;
    if (estimate - centre).abs() > RECENTRE * (hi - lo) / 2.0 {
        around(estimate)
    } else {
        (lo, hi)
    }
}

/// Whether `budget` seeds could certify `cuts`: both counts beyond them under the interval's
/// rank, at the shares seen so far.
fn certifiable(seeds: &[Bracket], cuts: (f64, f64), budget: usize) -> bool {
    let n = seeds.len().max(1);
    let (below, above) = beyond(seeds, cuts);
    let q = below.max(above) as f64 / n as f64;
    let m = budget.max(n);
    q * m as f64 <= (interval_rank(m) - 1) as f64
}

/// Seeds in all that should bring both counts beyond the cuts under the interval's rank
/// (at the shares seen so far).
fn seeds_wanted(seeds: &[Bracket], cuts: (f64, f64), max_seeds: usize) -> usize {
    let n = seeds.len();
    let (below, above) = beyond(seeds, cuts);
    let q = below.max(above) as f64 / n.max(1) as f64;
    (n..=max_seeds)
        .find(|&m| q * m as f64 <= (interval_rank(m) - 1) as f64)
        .unwrap_or(max_seeds)
}

/// A round's work: a new seed, or a seed already searched to place against moved cuts.
enum Job {
    New(u64),
    Again(usize),
}

/// Search seeds in rounds until the median's interval is `precision` wide on each side.
pub fn search(obj: &dyn Objective, s: &Settings, progress: &(dyn Fn(&str) + Sync)) -> Outcome {
    let tol = s.tol.clamp(1e-9, 0.5).max(FIRST_TOL);
    let max_seeds = s.max_seeds.max(1);
    let mut seeds: Vec<Bracket> = Vec::new();
    let mut rounds = Vec::new();
    let mut evals = 0u64;
    let (mut stopped, mut timed_out, mut reached) = (None, false, false);
    // The first round: bisected, checked for monotonicity.
    let first = s.initial.clamp(6, max_seeds.max(6)).min(max_seeds);
    let jobs: Vec<u64> = (s.first_seed..s.first_seed + first as u64).collect();
    let done = pool::map(&jobs, s.threads, &|&seed| {
        bisect(obj, seed, tol, s.deadline)
    });
    let checked = done.iter().filter(|r| r.is_some()).count();
    for r in done {
        match r {
            Some((b, e)) => {
                evals += e;
                seeds.push(b);
            }
            None => timed_out = true,
        }
    }
    let mut next_seed = s.first_seed + first as u64;
    let mut cuts = None;
    // The precision the cuts are placed for: the one asked, or coarser once the counts say
    // the budgets cannot certify cuts that close (review G11: seeds placed against cuts
    // too close left the interval at the segment's ends, far wider than an early round's).
    let mut aim = s.precision;
    let (mut median, mut interval);
    loop {
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
        let (Some(h), Some(m)) = (half, median) else {
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
        let n = seeds.len();
        let left = s.max_evals.saturating_sub(evals);
        let budget = max_seeds.min(n + (left / 2) as usize);
        // Judged once seeds were placed against cuts (the first round's eight bisections
        // count too coarsely).
        let placed = cuts.is_some();
        let mut c = next_cuts(&seeds, cuts, m, aim);
        while placed && !certifiable(&seeds, c, budget) && c.1 - c.0 < 1.0 {
            aim *= 2.0;
            let centre = (c.0 + c.1) / 2.0;
            let half = HALF * aim;
            c = ((centre - half).max(0.0), (centre + half).min(1.0));
        }
        cuts = Some(c);
        // Seeds already searched whose bracket straddles a cut: one or two simulations
        // each; new seeds: one or two each. No more than the budgets leave room for.
        let again: Vec<usize> = (0..seeds.len())
            .filter(|&i| seeds[i].straddles(c.0) || seeds[i].straddles(c.1))
            .collect();
        let room = (left.saturating_sub(2 * again.len() as u64) / 2) as usize;
        let size = seeds_wanted(&seeds, c, max_seeds)
            .saturating_sub(n)
            .clamp(n.div_ceil(6).max(2), n)
            .min(max_seeds - n)
            .min(room);
        if size == 0 && (again.is_empty() || left < 2 * again.len() as u64) {
            stopped = Some("max-evals");
            break;
        }
        // The cut with more seeds beyond it first: those then need one simulation.
        let (below, above) = beyond(&seeds, c);
        let low_first = below >= above;
        let jobs: Vec<Job> = again
            .iter()
            .map(|&i| Job::Again(i))
            .chain((next_seed..next_seed + size as u64).map(Job::New))
            .collect();
        next_seed += size as u64;
        let base = &seeds;
        let done = pool::map(&jobs, s.threads, &|j| {
            let b = match j {
                Job::New(seed) => Bracket::new(*seed),
                Job::Again(i) => base[*i].clone(),
            };
            place(obj, b, c, low_first, s.deadline)
        });
        for (j, r) in jobs.iter().zip(done) {
            match (j, r) {
                (Job::Again(i), Some((b, e))) => {
                    evals += e;
                    seeds[*i] = b;
                }
                (Job::New(_), Some((b, e))) => {
                    evals += e;
                    seeds.push(b);
                }
                (_, None) => timed_out = true,
            }
        }
    }
    let crossing = |b: &&Bracket| !b.always_breaks() && !b.always_holds();
    let mut brks: Vec<f64> = seeds.iter().filter(crossing).map(|b| b.span().1).collect();
    let barely = (median.is_some() && !brks.is_empty()).then(|| median_of(&mut brks));
    Outcome {
        non_monotone: seeds.iter().filter(|c| !c.monotone).count(),
        checked,
        always_hold: seeds.iter().filter(|c| c.always_holds()).count(),
        always_break: seeds.iter().filter(|c| c.always_breaks()).count(),
        half_width: half_width(median, interval),
        seeds: seeds.iter().map(Bracket::crossing).collect(),
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
