//! The genetic search the surrogate is compared with (Krkn-AI's method, written plainly):
//! a population of points of the unit cube evolved by tournament selection, uniform
//! crossover and Gaussian mutation, the two fittest kept as they are (elitism), every draw
//! from the search's seed.
//!
//! Fitness (lower is better) for the same goal as the surrogate's: a breaching point's
//! distance from the origin; a holding point is worse than any breaching one, and less bad
//! the nearer half of its seeds are to breaching (`√d + ½ − share breaching`).

use super::space::{gauss, uniform, Evaluator, Field, Outcome, Sample, Settings};
use brownout_core::rng::SplitMix;

/// Individuals in a generation.
const POPULATION: usize = 16;
/// Tournament size.
const TOURNAMENT: usize = 3;
/// Kept unchanged into the next generation.
const ELITE: usize = 2;

fn cost(s: &Sample, d: usize) -> f64 {
    if s.breaches() {
        s.norm()
    } else {
        (d as f64).sqrt() + s.value()
    }
}

/// Run the search.
pub fn search(field: &dyn Field, s: &Settings, progress: &(dyn Fn(&str) + Sync)) -> Outcome {
    const METHOD: &str = "genetic";
    let d = s.dims.max(1);
    let mut ev = Evaluator::new(field, s);
    if let Some(why) = ev.corners() {
        return ev.finish(METHOD, why);
    }
    let mut rng = SplitMix::new(s.rng_seed ^ 0x6765_6e65_7469_6373);
    let first: Vec<Vec<f64>> = (0..POPULATION).map(|_| uniform(&mut rng, d)).collect();
    let mut pop: Vec<Sample> = ev.eval(first);
    let mut generation = 0usize;
    while ev.room() > 0 && !ev.late() && !ev.timed_out && !pop.is_empty() {
        pop.sort_by(|a, b| cost(a, d).total_cmp(&cost(b, d)));
        let mut children: Vec<Vec<f64>> = Vec::with_capacity(POPULATION - ELITE);
        while children.len() < POPULATION - ELITE {
            let mut pick = || {
                (0..TOURNAMENT)
                    .map(|_| rng.below(pop.len()))
                    .min_by(|&a, &b| cost(&pop[a], d).total_cmp(&cost(&pop[b], d)))
                    .unwrap_or(0)
            };
            let (a, b) = (pick(), pick());
            let mut child: Vec<f64> = (0..d)
                .map(|k| {
                    if rng.unit() < 0.5 {
                        pop[a].x[k]
                    } else {
                        pop[b].x[k]
                    }
                })
                .collect();
            for v in child.iter_mut() {
                if rng.unit() < 1.0 / d as f64 {
                    *v = (*v + 0.1 * gauss(&mut rng)).clamp(0.0, 1.0);
                }
            }
            children.push(child);
        }
        let born = ev.eval(children);
        if born.is_empty() {
            break;
        }
        pop.truncate(ELITE);
        pop.extend(born);
        generation += 1;
        if generation.is_multiple_of(10) {
            let best = ev.nearest().map_or(f64::NAN, |i| ev.samples[i].norm());
            progress(&format!(
                "genetic: generation {generation}, {} simulations, nearest breach at distance {best:.4}",
                ev.evals
            ));
        }
    }
    ev.finish(METHOD, "max-evals")
}
