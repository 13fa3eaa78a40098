//! A latency histogram for sliding windows: log-spaced buckets 1 % wide from 10 µs to a
//! week, counted in a Fenwick tree so that adding a call, removing one that left the window
//! and finding a percentile all cost O(log buckets) — cheap enough to evaluate on every
//! completed call. A percentile is reported as its bucket's geometric midpoint: within
//! 0.5 % of the exact order statistic (latencies under 10 µs all read as 5 µs).
//!
//! hdrhistogram (used for whole-run summaries) has no cheap "remove" and no cheap
//! per-slot copy, which a sliding window needs; this is the smallest structure that has both.

/// The smallest latency told apart, in milliseconds.
const MIN_MS: f64 = 0.01;
/// Each bucket is this much wider than the one before.
const GROWTH: f64 = 1.01;
/// Bucket 0 holds everything under [`MIN_MS`]; the last holds everything beyond a week.
pub(crate) const BUCKETS: usize = 2500;

/// The bucket of a latency.
pub(crate) fn bucket(ms: f64) -> u16 {
    if ms.is_nan() || ms < MIN_MS {
        return 0;
    }
    let b = 1.0 + ((ms / MIN_MS).ln() / GROWTH.ln()).floor();
    b.min((BUCKETS - 1) as f64) as u16
}

/// The value a bucket reports: its geometric midpoint.
pub(crate) fn representative(b: u16) -> f64 {
    if b == 0 {
        return MIN_MS / 2.0;
    }
    MIN_MS * GROWTH.powf(f64::from(b - 1) + 0.5)
}

/// Counts per bucket, as a Fenwick tree.
#[derive(Debug, Clone)]
pub(crate) struct Hist {
    tree: Vec<u64>,
    total: u64,
}

impl Hist {
    pub(crate) fn new() -> Hist {
        Hist {
            tree: vec![0; BUCKETS + 1],
            total: 0,
        }
    }

    pub(crate) fn add(&mut self, b: u16, n: u64) {
        self.total += n;
        let mut i = usize::from(b) + 1;
        while i <= BUCKETS {
            self.tree[i] += n;
            i += i & i.wrapping_neg();
        }
    }

    pub(crate) fn sub(&mut self, b: u16, n: u64) {
        self.total = self.total.saturating_sub(n);
        let mut i = usize::from(b) + 1;
        while i <= BUCKETS {
            self.tree[i] = self.tree[i].saturating_sub(n);
            i += i & i.wrapping_neg();
        }
    }

    pub(crate) fn clear(&mut self) {
        self.tree.iter_mut().for_each(|c| *c = 0);
        self.total = 0;
    }

    /// The nearest-rank percentile (`ppm` parts per million): the bucket of the
    /// ⌈q·n⌉-th smallest latency, as milliseconds. `None` when empty.
    pub(crate) fn quantile(&self, ppm: u32) -> Option<f64> {
        if self.total == 0 {
            return None;
        }
        let mut rank = rank(ppm, self.total);
        let mut pos = 0usize;
        let mut step = (BUCKETS + 1).next_power_of_two() / 2;
        while step > 0 {
            let next = pos + step;
            if next <= BUCKETS && self.tree[next] < rank {
                pos = next;
                rank -= self.tree[next];
            }
            step /= 2;
        }
        // `pos` buckets hold fewer than `rank` latencies: the answer is bucket `pos`.
        Some(representative(pos.min(BUCKETS - 1) as u16))
    }
}

/// ⌈ppm·n / 10⁶⌉, at least 1: the rank of a percentile among `n` sorted samples.
pub fn rank(ppm: u32, n: u64) -> u64 {
    let r = (u128::from(ppm) * u128::from(n)).div_ceil(1_000_000) as u64;
    r.clamp(1, n.max(1))
}
