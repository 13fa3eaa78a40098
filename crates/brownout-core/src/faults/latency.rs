//! `latency`: delay a request or its response.
//!
//! Distributions: `fixed` (`added_ms`), `uniform` (`min_ms`..`max_ms`), `normal`
//! (`mean_ms`, `stddev_ms`) and `pareto` (`scale_ms`, `shape`: heavy tails), each with an
//! optional `jitter_ms` (uniform ±jitter) and an optional `max_ms` cap. The default side is
//! the response (`direction: to_client`); `direction: to_server` delays the request instead.

use super::simulated::{self, SimulatedCall};
use super::{AddedDelay, FaultKind, Invalid, KindInfo, Phase, CALLS};
use super::{Ctx, Shaping};
use crate::rng::salt;
use crate::select::Direction;
use crate::time::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Distribution {
    #[default]
    Fixed,
    Uniform,
    Normal,
    Pareto,
}

/// Keys of `latency` (and of `cold_start`, which adds the same delay once per tool).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct Latency {
    /// Shape of the added delay (default `fixed`).
    #[serde(default)]
    pub distribution: Distribution,
    /// fixed: the added delay in milliseconds.
    #[serde(default, deserialize_with = "crate::millis::opt")]
    #[schemars(schema_with = "crate::millis::opt_schema")]
    pub added_ms: Option<f64>,
    /// Uniform ± jitter added to any distribution, in milliseconds.
    #[serde(default, deserialize_with = "crate::millis::opt")]
    #[schemars(schema_with = "crate::millis::opt_schema")]
    pub jitter_ms: Option<f64>,
    /// uniform: lower bound in milliseconds.
    #[serde(default, deserialize_with = "crate::millis::opt")]
    #[schemars(schema_with = "crate::millis::opt_schema")]
    pub min_ms: Option<f64>,
    /// uniform: upper bound; any distribution: a cap on the delay.
    #[serde(default, deserialize_with = "crate::millis::opt")]
    #[schemars(schema_with = "crate::millis::opt_schema")]
    pub max_ms: Option<f64>,
    /// normal: mean in milliseconds.
    #[serde(default, deserialize_with = "crate::millis::opt")]
    #[schemars(schema_with = "crate::millis::opt_schema")]
    pub mean_ms: Option<f64>,
    /// normal: standard deviation in milliseconds.
    #[serde(default, deserialize_with = "crate::millis::opt")]
    #[schemars(schema_with = "crate::millis::opt_schema")]
    pub stddev_ms: Option<f64>,
    /// pareto: the scale (minimum) in milliseconds.
    #[serde(default, deserialize_with = "crate::millis::opt")]
    #[schemars(schema_with = "crate::millis::opt_schema")]
    pub scale_ms: Option<f64>,
    /// pareto: the shape α (smaller is heavier-tailed; default 1.5).
    #[serde(default)]
    #[schemars(range(min = 0.01))]
    pub shape: Option<f64>,
}

impl Latency {
    /// Semantic checks the schema cannot express: which keys each distribution needs.
    pub fn check(&self) -> Vec<(String, String)> {
        let mut errs = Vec::new();
        let need = |errs: &mut Vec<(String, String)>, v: Option<f64>, key: &str| {
            if v.is_none() {
                errs.push((
                    key.to_string(),
                    format!("distribution `{:?}` needs `{key}`", self.distribution).to_lowercase(),
                ));
            }
        };
        match self.distribution {
            Distribution::Fixed => {
                if self.added_ms.is_none() && self.jitter_ms.is_none() {
                    errs.push((
                        "added_ms".into(),
                        "latency needs `added_ms` (or `jitter_ms`)".into(),
                    ));
                }
            }
            Distribution::Uniform => {
                need(&mut errs, self.min_ms, "min_ms");
                need(&mut errs, self.max_ms, "max_ms");
                if let (Some(a), Some(b)) = (self.min_ms, self.max_ms) {
                    if a > b {
                        errs.push(("min_ms".into(), format!("min_ms {a} is above max_ms {b}")));
                    }
                }
            }
            Distribution::Normal => {
                need(&mut errs, self.mean_ms, "mean_ms");
                need(&mut errs, self.stddev_ms, "stddev_ms");
            }
            Distribution::Pareto => need(&mut errs, self.scale_ms, "scale_ms"),
        }
        errs
    }

    /// Draw the delay for one call from two uniform draws.
    #[inline]
    pub fn sample_ms(&self, u1: f64, u2: f64) -> f64 {
        let base = match self.distribution {
            Distribution::Fixed => self.added_ms.unwrap_or(0.0),
            Distribution::Uniform => {
                let lo = self.min_ms.unwrap_or(0.0);
                let hi = self.max_ms.unwrap_or(lo);
                lo + (hi - lo) * u1
            }
            Distribution::Normal => {
                // Box–Muller from two independent uniforms.
                let r = (-2.0 * (1.0 - u1).ln()).sqrt();
                let z = r * (2.0 * std::f64::consts::PI * u2).cos();
                self.mean_ms.unwrap_or(0.0) + self.stddev_ms.unwrap_or(0.0) * z
            }
            Distribution::Pareto => {
                let shape = self.shape.unwrap_or(1.5);
                self.scale_ms.unwrap_or(0.0) * (1.0 - u1).powf(-1.0 / shape)
            }
        };
        let jitter = self.jitter_ms.map_or(0.0, |j| j * (2.0 * u2 - 1.0));
        // A heavy tail (a Pareto shape near 0) draws astronomically long or infinite delays:
        // no delay is longer than a day, so time arithmetic never overflows.
        let ms = (base + jitter).clamp(0.0, MAX_DELAY_MS);
        match (self.distribution, self.max_ms) {
            (Distribution::Uniform, _) | (_, None) => ms,
            (_, Some(cap)) => ms.min(cap),
        }
    }

    /// The most one draw can add, mirroring [`Latency::sample_ms`]: a normal or Pareto
    /// delay without `max_ms` has no bound of its own (its tail passes any cap).
    pub fn most_ms(&self) -> AddedDelay {
        let jitter = self.jitter_ms.unwrap_or(0.0).abs();
        let base = match self.distribution {
            Distribution::Fixed => self.added_ms.unwrap_or(0.0),
            Distribution::Uniform => {
                let lo = self.min_ms.unwrap_or(0.0);
                return AddedDelay::Bounded(self.max_ms.unwrap_or(lo).max(lo) + jitter);
            }
            Distribution::Normal | Distribution::Pareto if self.max_ms.is_none() => {
                return AddedDelay::Unbounded(
                    "a normal or Pareto delay without `max_ms` has an unbounded tail",
                )
            }
            Distribution::Normal | Distribution::Pareto => f64::INFINITY,
        };
        let most = (base + jitter).clamp(0.0, MAX_DELAY_MS);
        AddedDelay::Bounded(self.max_ms.map_or(most, |cap| most.min(cap)))
    }

    pub fn apply(&self, c: &Ctx<'_>, s: &mut Shaping<'_>) -> String {
        let ms = self.sample_ms(c.unit(salt::MAGNITUDE), c.unit(salt::MAGNITUDE2));
        s.delay = s.delay + Time((ms * 1000.0) as u64);
        format!("delay {ms:.1}ms")
    }
}

/// The longest delay one draw can add: a day.
pub const MAX_DELAY_MS: f64 = 86_400_000.0;

pub const KIND: KindInfo = KindInfo::of::<Latency>(
    "latency",
    "delay a request or its response (fixed, uniform, normal, pareto; jitter)",
    CALLS,
    Direction::ToClient,
    r#"{"added_ms": 100}"#,
);

impl FaultKind for Latency {
    fn check(&self) -> Vec<Invalid> {
        Latency::check(self)
            .into_iter()
            .map(|(k, m)| Invalid::value(k, m))
            .collect()
    }

    fn acts_on_loose_messages(&self) -> bool {
        true
    }

    fn act(&self, _phase: Phase, c: &mut Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        Some(self.apply(c, s))
    }

    fn simulate(&self, direction: Direction, c: &mut Ctx<'_>, out: &mut SimulatedCall) -> bool {
        let d = simulated::delay(self, c);
        if direction == Direction::ToServer {
            out.request_delay = out.request_delay + d;
        } else {
            out.response_delay = out.response_delay + d;
        }
        true
    }

    fn max_added_delay(&self) -> AddedDelay {
        self.most_ms()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lat(v: serde_json::Value) -> Latency {
        serde_json::from_value(v).expect("valid latency")
    }

    #[test]
    fn fixed_with_jitter_stays_in_range() {
        let l = lat(serde_json::json!({"added_ms": 100, "jitter_ms": 20}));
        assert_eq!(l.sample_ms(0.3, 0.5), 100.0);
        assert_eq!(l.sample_ms(0.3, 0.0), 80.0);
        assert!(l.sample_ms(0.3, 0.999_999) < 120.0);
    }

    #[test]
    fn distributions_have_the_right_moments() {
        let n = 20_000;
        let mut k = crate::rng::SplitMix::new(7);
        let mean = |l: &Latency, k: &mut crate::rng::SplitMix| {
            (0..n).map(|_| l.sample_ms(k.unit(), k.unit())).sum::<f64>() / n as f64
        };
        let normal =
            lat(serde_json::json!({"distribution": "normal", "mean_ms": 200, "stddev_ms": 10}));
        assert!((mean(&normal, &mut k) - 200.0).abs() < 1.0);
        let uniform =
            lat(serde_json::json!({"distribution": "uniform", "min_ms": 10, "max_ms": 30}));
        assert!((mean(&uniform, &mut k) - 20.0).abs() < 0.5);
        // Pareto mean = α x_m / (α − 1) = 3 * 10 / 2 = 15.
        let pareto = lat(serde_json::json!({"distribution": "pareto", "scale_ms": 10, "shape": 3}));
        let m = mean(&pareto, &mut k);
        assert!((m - 15.0).abs() < 0.7, "pareto mean {m}");
        assert!(pareto.sample_ms(0.0, 0.5) >= 10.0);
        let capped = lat(
            serde_json::json!({"distribution": "pareto", "scale_ms": 10, "shape": 1, "max_ms": 50}),
        );
        assert!(capped.sample_ms(0.999_999, 0.5) <= 50.0);
    }

    #[test]
    fn missing_parameters_are_named() {
        let errs = lat(serde_json::json!({"distribution": "normal", "mean_ms": 1})).check();
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].0, "stddev_ms");
        assert!(lat(serde_json::json!({})).check()[0].1.contains("added_ms"));
        assert!(
            !lat(serde_json::json!({"distribution": "uniform", "min_ms": 5, "max_ms": 1}))
                .check()
                .is_empty()
        );
    }

    #[test]
    fn a_heavy_tail_never_draws_more_than_a_day() {
        let l = lat(serde_json::json!({"distribution": "pareto", "scale_ms": 5, "shape": 0.01}));
        for u in [0.5, 0.99, 0.999_999, 1.0] {
            let ms = l.sample_ms(u, 0.5);
            assert!(ms.is_finite() && ms <= MAX_DELAY_MS, "{u}: {ms}");
        }
    }
}
