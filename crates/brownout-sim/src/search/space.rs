//! The space searched in three to five dimensions: points of the unit cube (each dimension
//! normalised to its range, 0 its low end: the weakest faults), each evaluated on the same
//! seeds (common random numbers), and what a search keeps of them — the samples, the nearest
//! barely-violating one, and the trace of how near it was after each simulation.
//!
//! A point **breaches** when at least half of its seeds breach (the majority's boundary, as
//! in one dimension); its value for a surrogate is `½ − the share of seeds breaching`, 0 on
//! the boundary. The barely-violating point is the breaching sample nearest the origin.

use super::pool;
use brownout_core::rng::SplitMix;
use std::time::Instant;

/// ρ at a point of the unit cube for one seed (the run may stop at its first breach: only
/// the sign is used). Shared by the threads.
pub trait Field: Sync {
    fn rho(&self, x: &[f64], seed: u64) -> f64;
}

impl<F: Fn(&[f64], u64) -> f64 + Sync> Field for F {
    fn rho(&self, x: &[f64], seed: u64) -> f64 {
        self(x, seed)
    }
}

/// One evaluated point.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Sample {
    /// In the unit cube.
    pub x: Vec<f64>,
    /// The share of the seeds that breach.
    pub breaching: f64,
    /// The (lower) median ρ over the seeds (a breaching seed's is its margin at the first
    /// breach): below 0 exactly when [`Sample::breaches`].
    pub rho: f64,
    /// Simulations spent when it was known.
    pub evals: u64,
}

impl Sample {
    pub fn breaches(&self) -> bool {
        self.breaching >= 0.5
    }

    /// Its distance from the origin (the weakest corner).
    pub fn norm(&self) -> f64 {
        norm(&self.x)
    }

    /// The surrogate's value: ½ − the share breaching (≤ 0: breaches).
    pub fn value(&self) -> f64 {
        0.5 - self.breaching
    }
}

pub fn norm(x: &[f64]) -> f64 {
    x.iter().map(|v| v * v).sum::<f64>().sqrt()
}

/// What a search may spend.
#[derive(Debug, Clone)]
pub struct Settings {
    pub dims: usize,
    /// Every point is evaluated on these seeds.
    pub seeds: Vec<u64>,
    /// Simulations at most (a batch is trimmed to fit).
    pub max_evals: u64,
    pub deadline: Option<Instant>,
    pub threads: usize,
    /// The search's own draws (candidates, the genetic search's choices).
    pub rng_seed: u64,
}

/// A search's result.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Outcome {
    /// `gaussian-process level set` or `genetic`.
    pub method: &'static str,
    /// Every point evaluated, in order: the map of the boundary.
    pub samples: Vec<Sample>,
    /// The barely-violating point: the breaching sample nearest the origin.
    pub nearest: Option<usize>,
    /// After each batch: (simulations so far, the nearest breaching distance so far).
    pub trace: Vec<(u64, f64)>,
    pub evals: u64,
    /// Why it stopped: `max-evals` (the budget is the plan), `time`, or `no crossing`
    /// (the strongest corner holds, or the weakest breaches).
    pub stopped: &'static str,
    pub timed_out: bool,
}

/// Evaluates batches of points on the seeds, in parallel, keeping the samples and trace.
pub struct Evaluator<'a> {
    field: &'a dyn Field,
    pub s: &'a Settings,
    pub samples: Vec<Sample>,
    pub evals: u64,
    pub trace: Vec<(u64, f64)>,
    pub timed_out: bool,
}

impl<'a> Evaluator<'a> {
    pub fn new(field: &'a dyn Field, s: &'a Settings) -> Self {
        Evaluator {
            field,
            s,
            samples: Vec::new(),
            evals: 0,
            trace: Vec::new(),
            timed_out: false,
        }
    }

    /// Points the budget still has room for.
    pub fn room(&self) -> usize {
        let per = self.s.seeds.len().max(1) as u64;
        (self.s.max_evals.saturating_sub(self.evals) / per) as usize
    }

    pub fn late(&self) -> bool {
        self.s.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Evaluate `points` (trimmed to the budget); the samples added, in order. A point whose
    /// seeds did not all run before the deadline is dropped (and `timed_out` set).
    pub fn eval(&mut self, mut points: Vec<Vec<f64>>) -> Vec<Sample> {
        points.truncate(self.room());
        let seeds = &self.s.seeds;
        let jobs: Vec<(usize, u64)> = (0..points.len())
            .flat_map(|i| seeds.iter().map(move |&s| (i, s)))
            .collect();
        let deadline = self.s.deadline;
        let field = self.field;
        let pts = &points;
        let rhos = pool::map(&jobs, self.s.threads, &|&(i, seed)| {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return None;
            }
            let r = field.rho(&pts[i], seed);
            // A NaN once the deadline has passed is no answer (the field's own deadline
            // stopped it); before it, a point the field cannot evaluate (counted breaching).
            (!r.is_nan() || deadline.is_none_or(|d| Instant::now() < d)).then_some(r)
        });
        let mut added = Vec::new();
        for (i, x) in points.into_iter().enumerate() {
            let r: Option<Vec<f64>> = rhos[i * seeds.len()..(i + 1) * seeds.len()]
                .iter()
                .copied()
                .collect();
            let Some(mut r) = r else {
                self.timed_out = true;
                continue;
            };
            self.evals += r.len() as u64;
            let broke = r.iter().filter(|v| **v < 0.0 || v.is_nan()).count();
            r.sort_by(f64::total_cmp);
            let sample = Sample {
                x,
                breaching: broke as f64 / r.len().max(1) as f64,
                // The lower median: below 0 exactly when half the seeds or more breach
                // (as `breaches`), so the map's ρ and its breaching share agree.
                rho: r.get((r.len().max(1) - 1) / 2).copied().unwrap_or(f64::NAN),
                evals: self.evals,
            };
            self.samples.push(sample.clone());
            added.push(sample);
        }
        let best = self
            .nearest()
            .map_or(f64::INFINITY, |i| self.samples[i].norm());
        self.trace.push((self.evals, best));
        added
    }

    /// The breaching sample nearest the origin.
    pub fn nearest(&self) -> Option<usize> {
        self.samples
            .iter()
            .enumerate()
            .filter(|(_, s)| s.breaches())
            .min_by(|a, b| a.1.norm().total_cmp(&b.1.norm()))
            .map(|(i, _)| i)
    }

    /// The two corners first: the strongest must breach and the weakest hold, or there is
    /// no crossing to look for (`Some(reason)`).
    pub fn corners(&mut self) -> Option<&'static str> {
        let d = self.s.dims;
        let got = self.eval(vec![vec![1.0; d], vec![0.0; d]]);
        match got.as_slice() {
            [hi, lo] if hi.breaches() && !lo.breaches() => None,
            [_, _] => Some("no crossing"),
            _ => Some(if self.timed_out { "time" } else { "max-evals" }),
        }
    }

    pub fn finish(self, method: &'static str, stopped: &'static str) -> Outcome {
        Outcome {
            method,
            nearest: self.nearest(),
            samples: self.samples,
            trace: self.trace,
            evals: self.evals,
            stopped: if self.timed_out { "time" } else { stopped },
            timed_out: self.timed_out,
        }
    }
}

/// A standard normal draw (Box–Muller).
pub fn gauss(rng: &mut SplitMix) -> f64 {
    let u = rng.unit().max(1e-300);
    let v = rng.unit();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// A uniform point of the unit cube.
pub fn uniform(rng: &mut SplitMix, d: usize) -> Vec<f64> {
    (0..d).map(|_| rng.unit()).collect()
}
