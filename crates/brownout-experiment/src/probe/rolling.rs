//! Rolling latency percentiles over a monitor's last N probes (nearest rank; N is small).

use std::collections::VecDeque;

#[derive(Debug, Clone)]
pub struct Rolling {
    cap: usize,
    samples: VecDeque<f64>,
}

/// P50, P95 and P99 of the window, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Percentiles {
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    /// Probes in the window.
    pub samples: usize,
}

impl Rolling {
    pub fn new(cap: usize) -> Rolling {
        Rolling {
            cap: cap.max(1),
            samples: VecDeque::with_capacity(cap.max(1)),
        }
    }

    pub fn push(&mut self, ms: f64) {
        if self.samples.len() == self.cap {
            self.samples.pop_front();
        }
        self.samples.push_back(ms);
    }

    pub fn len(&self) -> usize {
        self.samples.len()
    }

    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// `None` while the window is empty.
    pub fn percentiles(&self) -> Option<Percentiles> {
        if self.samples.is_empty() {
            return None;
        }
        let mut v: Vec<f64> = self.samples.iter().copied().collect();
        v.sort_by(f64::total_cmp);
        let at = |q: f64| {
            let rank = (q * v.len() as f64).ceil() as usize;
            v[rank.clamp(1, v.len()) - 1]
        };
        Some(Percentiles {
            p50_ms: at(0.50),
            p95_ms: at(0.95),
            p99_ms: at(0.99),
            samples: v.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_over_a_sliding_window() {
        let mut r = Rolling::new(20);
        assert!(r.percentiles().is_none());
        for i in 1..=20 {
            r.push(f64::from(i));
        }
        let p = r.percentiles().unwrap_or_else(|| unreachable!());
        assert_eq!((p.p50_ms, p.p95_ms, p.p99_ms), (10.0, 19.0, 20.0));
        for _ in 0..20 {
            r.push(1.0);
        }
        assert_eq!(r.percentiles().map(|p| p.p99_ms), Some(1.0));
        assert_eq!(r.len(), 20);
    }
}
