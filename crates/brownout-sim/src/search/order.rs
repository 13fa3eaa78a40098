//! Order statistics the search's summaries rest on: the median, and a distribution-free
//! 95 % interval for it (the ranks come from the binomial distribution, so the coverage is
//! exact whatever the seeds' crossings look like).

/// The largest `r` (at least 1) with `1 − 2·P(Binomial(n, ½) < r) ≥ 95 %`; 1 when none.
pub fn interval_rank(n: usize) -> usize {
    let mut r = 1;
    let mut pmf = 0.5f64.powi(n as i32);
    let mut cdf = pmf;
    while r < n.div_ceil(2) {
        pmf *= (n - r + 1) as f64 / r as f64;
        if 2.0 * (cdf + pmf) > 0.05 {
            break;
        }
        cdf += pmf;
        r += 1;
    }
    r
}

/// A distribution-free interval for the median of `v` (two or more values): the order
/// statistics `[x(r), x(n+1-r)]` with the largest `r` whose coverage
/// `1 - 2·P(Binomial(n, ½) < r)` is at least 95 %; `[min, max]` when no `r` reaches it
/// (fewer than 6 values: coverage `1 - 2^(1-n)`).
pub fn median_interval(v: &mut [f64]) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let r = interval_rank(n);
    (v[r - 1], v[n - r])
}

pub fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}
