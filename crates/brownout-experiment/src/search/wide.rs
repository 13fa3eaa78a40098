//! The wider searches: adaptive seeds along a segment (`--precision`: seeds are added until
//! the median boundary is known that well, [`brownout_sim::search::adaptive`]) and three to
//! five dimensions at once (a Gaussian-process level-set search, or the genetic search it is
//! compared with: [`brownout_sim::search::levelset`], [`brownout_sim::search::genetic`]).
//! The searches themselves are pure and live in brownout-sim; this module maps them onto a
//! marked file and its simulations.

use super::{Barely, Problem, SearchArgs, Segment};
use brownout_sim::search::space::{self, Field};
use brownout_sim::search::{adaptive, genetic, levelset, Crossing};
use clap::{Args, ValueEnum};
use std::time::Instant;

/// The search method for three to five dimensions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum Method {
    /// A Gaussian-process surrogate, sampling near the boundary (the default).
    #[default]
    Gp,
    /// A genetic search (tournament selection, crossover, mutation), for comparison.
    Ga,
}

/// `--tol`: a fraction of each range, above 0 and at most 1 (`nan` or `inf` gave a
/// zero-width "interval", 0 or less a bisection that cannot end where it should).
pub fn parse_tol(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(t) if t > 0.0 && t <= 1.0 => Ok(t),
        _ => Err(format!(
            "`{s}` is not a fraction of the range above 0 and at most 1 (e.g. 0.03125)"
        )),
    }
}

/// `--precision`: a half width above 0 (in the dimension's units, or a fraction of a ray).
pub fn parse_precision(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p.is_finite() => Ok(p),
        _ => Err(format!(
            "`{s}` is not a precision: a number above 0 (e.g. 0.01)"
        )),
    }
}

/// Options of the wider searches.
#[derive(Args, Debug, Clone, Default)]
pub struct WideArgs {
    /// Adaptive seeds: add seeds until the median boundary's 95 % interval is this wide on
    /// each side (in the dimension's units; with two dimensions, a fraction of each ray), or
    /// a budget (--max-seeds, --max-evals, --time-budget) is spent. `--seeds` is then the
    /// first round's. A number above 0.
    #[arg(long, value_parser = parse_precision)]
    pub precision: Option<f64>,
    /// Adaptive seeds: seeds at most (1 to 10000).
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u64).range(1..=super::MAX_SEEDS))]
    pub max_seeds: u64,
    /// Three to five dimensions: `gp` (a Gaussian-process level-set search) or `ga` (a
    /// genetic search, for comparison).
    #[arg(long, value_enum, default_value_t = Method::Gp)]
    pub method: Method,
    /// Threads for the simulations (default: every core). The result does not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
}

impl WideArgs {
    pub fn threads(&self) -> usize {
        self.threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
            .max(1)
    }
}

/// The seeds' crossings' standard deviation, in t, over the first round's seeds: those are
/// bisected over the whole segment (later seeds are only placed against the interval's
/// ends, so their brackets say little about the spread).
fn spread(o: &adaptive::Outcome) -> Option<f64> {
    let b: Vec<f64> = o
        .seeds
        .iter()
        .take(o.checked)
        .filter_map(brownout_sim::search::SeedCrossing::boundary)
        .collect();
    let n = b.len() as f64;
    (n > 1.0).then(|| {
        let m = b.iter().sum::<f64>() / n;
        (b.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    })
}

/// One segment with adaptive seeds: the outcome, and the same as a [`Crossing`] for the
/// report shared with the fixed-seed search.
pub fn adaptive_segment(
    p: &Problem,
    a: &SearchArgs,
    seg: &Segment,
    max_evals: u64,
    deadline: Option<Instant>,
    progress: &(dyn Fn(&str) + Sync),
) -> (Crossing, adaptive::Outcome) {
    let precision = a.wide.precision.unwrap_or(0.01);
    // One dimension: the precision is in the dimension's units; two: a fraction of the ray.
    let precision_t = if p.marks.len() == 1 {
        precision / (p.marks[0].hi - p.marks[0].lo).abs().max(f64::MIN_POSITIVE)
    } else {
        precision
    };
    let s = adaptive::Settings {
        first_seed: a.seed,
        initial: a.seeds.max(1) as usize,
        max_seeds: a.wide.max_seeds.max(1) as usize,
        precision: precision_t,
        // A seed's bracket narrower than the precision asked: it widens the interval little.
        tol: a.tol.min(precision_t / 2.0),
        max_evals,
        deadline,
        threads: a.wide.threads(),
    };
    let forks = p.forks(4 * s.threads);
    let obj = |t: f64, seed: u64, full: bool| match full {
        true => p.rho(&seg.at(t), seed, true),
        false => p.rho_in(forks.as_ref(), &seg.at(t), seed),
    };
    let o = adaptive::search(&obj, &s, progress);
    let c = Crossing {
        method: "adaptive per-seed bisection",
        seeds: o.seeds.clone(),
        boundary: o.median,
        interval: o.interval,
        spread: spread(&o),
        monotone: o.non_monotone == 0,
        always_hold: o.always_hold,
        always_break: o.always_break,
        barely: o.barely,
        evals: o.evals,
        cut_short: !o.reached,
    };
    (c, o)
}

/// A search in three to five dimensions, with what it is mapped back to.
pub struct Multi {
    pub outcome: space::Outcome,
    /// The seeds every point was evaluated on.
    pub seeds: Vec<u64>,
}

impl Problem {
    /// A point of the unit cube in the marks' units.
    pub fn denormalise(&self, x: &[f64]) -> Vec<f64> {
        self.marks
            .iter()
            .zip(x)
            .map(|(m, v)| m.lo + (m.hi - m.lo) * v)
            .collect()
    }
}

/// Search three to five dimensions; the barely-violating point (the breaching sample nearest
/// the origin of the normalised space).
pub fn multi(
    p: &Problem,
    a: &SearchArgs,
    deadline: Option<Instant>,
    progress: &(dyn Fn(&str) + Sync),
) -> (Multi, Option<Barely>) {
    let seeds: Vec<u64> = (0..a.seeds.clamp(1, super::MAX_SEEDS))
        .map(|k| a.seed.saturating_add(k))
        .collect();
    let s = space::Settings {
        dims: p.marks.len(),
        seeds: seeds.clone(),
        max_evals: a.max_evals(p.marks.len()),
        deadline,
        threads: a.wide.threads(),
        rng_seed: a.seed,
    };
    // Every point runs on the same seeds: each seed's prefix is kept for all of them.
    let forks = p.forks(seeds.len().clamp(16, 64));
    let field = |x: &[f64], seed: u64| p.rho_in(forks.as_ref(), &p.denormalise(x), seed);
    let field: &dyn Field = &field;
    let outcome = match a.wide.method {
        Method::Gp => levelset::search(field, &s, progress),
        Method::Ga => genetic::search(field, &s, progress),
    };
    let barely = outcome.nearest.map(|i| {
        let values = p.denormalise(&outcome.samples[i].x);
        // The median breaching seed, by its margin at the first breach, run to the end:
        // within the --time budget, else unchecked.
        match super::confirm(p, &values, &seeds) {
            Some((_, median, rho, seed)) => Barely {
                rho,
                values,
                breaching: outcome.samples[i].breaching,
                margin_at_breach: median.map(|m| m.0),
                rho_seed: seed,
                checked: true,
            },
            None => Barely {
                rho: f64::NAN,
                values,
                breaching: outcome.samples[i].breaching,
                margin_at_breach: None,
                rho_seed: seeds.first().copied().unwrap_or(0),
                checked: false,
            },
        }
    });
    (Multi { outcome, seeds }, barely)
}
