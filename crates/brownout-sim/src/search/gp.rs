//! A small Gaussian-process regression: a constant mean, a squared-exponential (RBF) kernel
//! with one length scale over the unit cube, Gaussian noise, the length scale chosen from a
//! short grid by the log marginal likelihood, a Cholesky factor for the solves.
//!
//! Written by hand (about a hundred lines): the searches fit at most a few hundred points in
//! at most five dimensions, and brownout-sim stays a small, pure, dependency-light crate. The
//! GP crates looked at do not fit that: `egobox-gp` pulls linfa and ndarray (hundreds of
//! thousands of lines), `gprx` runs on rayon's process-wide pool (its own threads, beside
//! the search's deterministic ones) and is young, `friedrich` pulls nalgebra for what is one
//! Cholesky factorisation here.

/// A fitted process.
#[derive(Debug, Clone)]
pub struct Gp {
    x: Vec<Vec<f64>>,
    /// K⁻¹(y − mean).
    alpha: Vec<f64>,
    /// The lower Cholesky factor of K + noise·I, row-major n×n.
    l: Vec<f64>,
    mean: f64,
    signal: f64,
    /// The length scale chosen.
    pub length: f64,
}

fn kernel(a: &[f64], b: &[f64], length: f64, signal: f64) -> f64 {
    let d2: f64 = a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum();
    signal * (-0.5 * d2 / (length * length)).exp()
}

/// The lower factor `L` of the symmetric positive definite `a` (n×n, row-major), or `None`
/// when it is not positive definite.
fn cholesky(a: &[f64], n: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let s: f64 = (0..j).map(|k| l[i * n + k] * l[j * n + k]).sum();
            if i == j {
                let d = a[i * n + i] - s;
                if d <= 0.0 || !d.is_finite() {
                    return None;
                }
                l[i * n + i] = d.sqrt();
            } else {
                l[i * n + j] = (a[i * n + j] - s) / l[j * n + j];
            }
        }
    }
    Some(l)
}

/// Solve `L z = b` (forward).
fn forward(l: &[f64], n: usize, b: &[f64]) -> Vec<f64> {
    let mut z = vec![0.0; n];
    for i in 0..n {
        let s: f64 = (0..i).map(|k| l[i * n + k] * z[k]).sum();
        z[i] = (b[i] - s) / l[i * n + i];
    }
    z
}

/// Solve `Lᵀ z = b` (backward).
fn backward(l: &[f64], n: usize, b: &[f64]) -> Vec<f64> {
    let mut z = vec![0.0; n];
    for i in (0..n).rev() {
        let s: f64 = (i + 1..n).map(|k| l[k * n + i] * z[k]).sum();
        z[i] = (b[i] - s) / l[i * n + i];
    }
    z
}

impl Gp {
    /// Fit at one length scale; the log marginal likelihood with it.
    fn fit_with(x: &[Vec<f64>], y: &[f64], length: f64, noise: f64) -> Option<(Gp, f64)> {
        let n = x.len();
        let mean = y.iter().sum::<f64>() / n.max(1) as f64;
        let var = y.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n.max(1) as f64;
        let signal = var.max(1e-4);
        let mut k = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..=i {
                let v = kernel(&x[i], &x[j], length, signal);
                k[i * n + j] = v;
                k[j * n + i] = v;
            }
            k[i * n + i] += noise + 1e-9 * signal;
        }
        let l = cholesky(&k, n)?;
        let r: Vec<f64> = y.iter().map(|v| v - mean).collect();
        let z = forward(&l, n, &r);
        let alpha = backward(&l, n, &z);
        let logdet: f64 = (0..n).map(|i| l[i * n + i].ln()).sum();
        let lml = -0.5 * z.iter().map(|v| v * v).sum::<f64>() - logdet;
        Some((
            Gp {
                x: x.to_vec(),
                alpha,
                l,
                mean,
                signal,
                length,
            },
            lml,
        ))
    }

    /// Fit `y` at the points `x` (in the unit cube) with noise variance `noise`, the length
    /// scale the likeliest of a short grid (or `length`, when given).
    pub fn fit(x: &[Vec<f64>], y: &[f64], noise: f64, length: Option<f64>) -> Option<Gp> {
        Gp::fit_until(x, y, noise, length, None)
    }

    /// [`Gp::fit`], trying no further length scales once `deadline` has passed (the
    /// likeliest of those fitted by then; at least one is tried).
    pub fn fit_until(
        x: &[Vec<f64>],
        y: &[f64],
        noise: f64,
        length: Option<f64>,
        deadline: Option<std::time::Instant>,
    ) -> Option<Gp> {
        let grid: &[f64] = match &length {
            Some(l) => std::slice::from_ref(l),
            None => &[0.08, 0.12, 0.18, 0.27, 0.4, 0.6, 0.9],
        };
        let mut best: Option<(Gp, f64)> = None;
        for &l in grid {
            if best.is_some() && deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                break;
            }
            if let Some(g) = Gp::fit_with(x, y, l, noise) {
                if best.as_ref().is_none_or(|b| g.1.total_cmp(&b.1).is_ge()) {
                    best = Some(g);
                }
            }
        }
        best.map(|g| g.0)
    }

    /// The posterior mean and standard deviation at `p`.
    pub fn predict(&self, p: &[f64]) -> (f64, f64) {
        let n = self.x.len();
        let k: Vec<f64> = self
            .x
            .iter()
            .map(|x| kernel(x, p, self.length, self.signal))
            .collect();
        let mu = self.mean + k.iter().zip(&self.alpha).map(|(a, b)| a * b).sum::<f64>();
        let v = forward(&self.l, n, &k);
        let var = self.signal - v.iter().map(|x| x * x).sum::<f64>();
        (mu, var.max(0.0).sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_interpolates_a_smooth_function_and_knows_where_it_has_not_looked() {
        let f = |x: &[f64]| (3.0 * x[0]).sin() + x[1] * x[1];
        let mut pts = Vec::new();
        for i in 0..6 {
            for j in 0..6 {
                pts.push(vec![f64::from(i) / 5.0, f64::from(j) / 5.0]);
            }
        }
        let y: Vec<f64> = pts.iter().map(|p| f(p)).collect();
        let gp = Gp::fit(&pts, &y, 1e-6, None).expect("fit");
        let (mu, sd) = gp.predict(&[0.5, 0.5]);
        assert!((mu - f(&[0.5, 0.5])).abs() < 0.02, "{mu}");
        assert!(sd < 0.05, "{sd}");
        // At a training point: almost exact; far outside: unsure.
        let (mu, _) = gp.predict(&[0.2, 0.4]);
        assert!((mu - f(&[0.2, 0.4])).abs() < 1e-3, "{mu}");
        let (_, far) = gp.predict(&[3.0, 3.0]);
        assert!(far > 10.0 * sd, "{far} {sd}");
    }

    #[test]
    fn a_matrix_that_is_not_positive_definite_is_refused() {
        assert!(cholesky(&[1.0, 2.0, 2.0, 1.0], 2).is_none());
        let l = cholesky(&[4.0, 2.0, 2.0, 3.0], 2).expect("spd");
        assert_eq!(l, vec![2.0, 0.0, 1.0, 2f64.sqrt()]);
    }
}
