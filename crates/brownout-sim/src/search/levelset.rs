//! The surrogate-guided level-set search for ρ = 0 in three to five dimensions: a Gaussian
//! process ([`super::gp`]) fitted to every point evaluated so far (value `½ − share of
//! seeds breaching`), and batches of new points chosen by two acquisitions:
//!
//! - **nearest-boundary improvement** (three points a batch): the probability that a point
//!   breaches under the surrogate, `Φ(−μ/σ)`, times how much nearer the origin it is than
//!   the nearest breaching point so far — constrained expected improvement with the distance
//!   as the objective. Its candidates are drawn inside the ball of that distance (uniform
//!   directions of the positive orthant) and around the nearest point itself.
//! - **straddle** (one point a batch): `1.96·σ − |μ|`, largest where the surrogate cannot
//!   tell the side (Bryan et al.'s level-set acquisition), over the whole cube: it maps the
//!   boundary, and keeps the surrogate honest away from the nearest point.
//!
//! A batch's points are evaluated in parallel, each on every seed. The candidates come from
//! the search's own seeded draws and the batches' sizes from the budget only: the same
//! settings give the same samples on any number of threads.

use super::gp::Gp;
use super::space::{gauss, norm, uniform, Evaluator, Field, Outcome, Settings};
use brownout_core::rng::SplitMix;

/// Points a batch: three by improvement, one by straddle.
const BATCH: usize = 4;
/// Candidates scored a batch for the improvement picks (half as many for the straddle).
const CANDIDATES: usize = 500;
/// Points the surrogate is fitted on at most: those nearest the boundary (a fit costs the
/// cube of its points; past a few hundred the far ones add little but time).
pub const FIT_MAX: usize = 300;

/// The samples the surrogate is fitted on: all of them up to [`FIT_MAX`], else the
/// [`FIT_MAX`] whose value is nearest 0 (the boundary), earlier first on a tie; in sample
/// order.
pub fn fit_subset(values: &[f64]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..values.len()).collect();
    if idx.len() > FIT_MAX {
        idx.sort_by(|a, b| values[*a].abs().total_cmp(&values[*b].abs()).then(a.cmp(b)));
        idx.truncate(FIT_MAX);
        idx.sort_unstable();
    }
    idx
}

/// Φ, the standard normal distribution function (Abramowitz–Stegun 7.1.26 erf).
fn phi(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let y = 1.0
        - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t - 0.284_496_736) * t
            + 0.254_829_592)
            * t
            * (-x * x).exp();
    if z >= 0.0 {
        0.5 * (1.0 + y)
    } else {
        0.5 * (1.0 - y)
    }
}

/// A point of the positive orthant at distance at most `r` (clipped to the cube).
fn in_ball(rng: &mut SplitMix, d: usize, r: f64) -> Vec<f64> {
    let dir: Vec<f64> = (0..d).map(|_| gauss(rng).abs() + 1e-12).collect();
    let n = norm(&dir);
    let rad = r * rng.unit().powf(1.0 / d as f64);
    dir.iter().map(|v| (v / n * rad).min(1.0)).collect()
}

fn far_enough(x: &[f64], from: &[Vec<f64>], min: f64) -> bool {
    from.iter()
        .all(|p| p.iter().zip(x).map(|(a, b)| (a - b) * (a - b)).sum::<f64>() > min * min)
}

/// The initial design: `n` points of a Latin hypercube (one in each of `n` slices of every
/// dimension), seeded.
fn latin(rng: &mut SplitMix, d: usize, n: usize) -> Vec<Vec<f64>> {
    let mut pts = vec![vec![0.0; d]; n];
    for k in 0..d {
        let mut perm: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            perm.swap(i, rng.below(i + 1));
        }
        for (i, p) in pts.iter_mut().enumerate() {
            p[k] = (perm[i] as f64 + rng.unit()) / n as f64;
        }
    }
    pts
}

/// Run the search.
pub fn search(field: &dyn Field, s: &Settings, progress: &(dyn Fn(&str) + Sync)) -> Outcome {
    const METHOD: &str = "gaussian-process level set";
    let d = s.dims.max(1);
    let mut ev = Evaluator::new(field, s);
    if let Some(why) = ev.corners() {
        return ev.finish(METHOD, why);
    }
    let mut rng = SplitMix::new(s.rng_seed ^ 0x6c65_7665_6c73_6574);
    ev.eval(latin(&mut rng, d, 4 * d));
    let noise = (0.5 / s.seeds.len().max(1) as f64).powi(2);
    let mut length = None;
    let mut batches = 0usize;
    while ev.room() > 0 && !ev.late() && !ev.timed_out {
        let all: Vec<f64> = ev.samples.iter().map(|p| p.value()).collect();
        let keep = fit_subset(&all);
        let xs: Vec<Vec<f64>> = keep.iter().map(|&i| ev.samples[i].x.clone()).collect();
        let ys: Vec<f64> = keep.iter().map(|&i| all[i]).collect();
        // The length scale is chosen afresh every fifth batch (a grid of fits), kept between.
        if batches.is_multiple_of(5) {
            length = None;
        }
        let Some(gp) = Gp::fit_until(&xs, &ys, noise, length, s.deadline) else {
            break;
        };
        length = Some(gp.length);
        let best = ev.nearest().map(|i| ev.samples[i].x.clone());
        let r = best.as_deref().map_or((d as f64).sqrt(), norm);
        // One candidate set for the improvement picks, one for the straddle pick; each
        // scored once, then taken best first, apart from each other.
        let mut near: Vec<(f64, Vec<f64>)> = (0..CANDIDATES)
            .map(|c| {
                if c % 6 == 0 {
                    uniform(&mut rng, d)
                } else if c % 3 == 0 && best.is_some() {
                    let b = best.as_deref().unwrap_or(&[]);
                    let w = 0.1 * rng.unit();
                    b.iter()
                        .map(|v| (v + w * gauss(&mut rng)).clamp(0.0, 1.0))
                        .collect()
                } else {
                    in_ball(&mut rng, d, r * 1.02)
                }
            })
            .filter(|x| far_enough(x, &xs, 0.005))
            .map(|x| {
                let (mu, sd) = gp.predict(&x);
                (phi(-mu / sd.max(1e-9)) * (r - norm(&x)).max(0.0), x)
            })
            .collect();
        let mut wide: Vec<(f64, Vec<f64>)> = (0..CANDIDATES / 2)
            .map(|_| uniform(&mut rng, d))
            .filter(|x| far_enough(x, &xs, 0.005))
            .map(|x| {
                let (mu, sd) = gp.predict(&x);
                (1.96 * sd - mu.abs(), x)
            })
            .collect();
        near.sort_by(|a, b| b.0.total_cmp(&a.0));
        wide.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut picks: Vec<Vec<f64>> = Vec::new();
        for (_, x) in near {
            if picks.len() == BATCH - 1 {
                break;
            }
            if far_enough(&x, &picks, 0.04) {
                picks.push(x);
            }
        }
        if let Some((_, x)) = wide.into_iter().find(|(_, x)| far_enough(x, &picks, 0.04)) {
            picks.push(x);
        }
        if picks.is_empty() {
            break;
        }
        ev.eval(picks);
        batches += 1;
        if batches.is_multiple_of(10) {
            let best = ev.nearest().map_or(f64::NAN, |i| ev.samples[i].norm());
            progress(&format!(
                "gaussian process: {} points, {} simulations, nearest breach at distance {best:.4}",
                ev.samples.len(),
                ev.evals
            ));
        }
    }
    ev.finish(METHOD, "max-evals")
}

#[cfg(test)]
mod tests {
    use super::{fit_subset, FIT_MAX};
    #[test]
    fn the_surrogate_is_fitted_on_at_most_the_points_nearest_the_boundary() {
        // 1000 samples (the fit's cost grew as their cube): the 300 nearest 0 are kept.
        let v: Vec<f64> = (0..1000).map(|i| f64::from(i) / 1000.0 - 0.25).collect();
        let k = fit_subset(&v);
        assert_eq!(k.len(), FIT_MAX);
        assert!(k.iter().all(|&i| v[i].abs() <= 0.15 + 1e-9), "{k:?}");
        assert!(k.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(fit_subset(&v[..10]), (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn phi_is_the_normal_distribution() {
        assert!((super::phi(0.0) - 0.5).abs() < 1e-7);
        assert!((super::phi(1.96) - 0.975).abs() < 1e-4);
        assert!((super::phi(-1.0) - 0.158_655).abs() < 1e-5);
    }
}
