//! The GameDay's score (0–100) and grade (A–F), computed from the experiments' journals
//! alone — the definition is docs/gameday.md#score, and this is it:
//!
//! - an experiment that did not complete (aborted, deviated, failed, refused, interrupted,
//!   not run) or was skipped earns 0;
//! - a completed one earns `0.5 + 0.5 × q`, where `q` is the mean of the quality factors
//!   its journal measured (1 when it measured none):
//!   - **margin**: robustness ρ clamped to [0, 1] (how far the gates stayed from their limits);
//!   - **recovery**: `1 − MTTR / recovery.within`, clamped to [0, 1] (needs both);
//!   - **detection**: `1 − MTTD / the first stage's length`, clamped to [0, 1] (the probes'
//!     time to detect, when they detected the faults);
//!   - **silent**: `1 − silent_rate`, when the faults altered results (`silent.altered > 0`);
//! - score = 100 × Σ weightᵢ × valueᵢ / Σ weightᵢ, rounded to one decimal;
//! - grade: A ≥ 90, B ≥ 80, C ≥ 70, D ≥ 60, F below.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One quality factor an experiment's journal measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Factor {
    /// `margin`, `recovery`, `detection` or `silent`.
    pub name: String,
    /// 0–1.
    pub value: f64,
    /// What it was computed from, in words.
    pub from: String,
}

/// What one experiment contributed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Contribution {
    /// 0–1: 0 when it did not complete, else 0.5 + 0.5 × the factors' mean.
    pub value: f64,
    pub factors: Vec<Factor>,
    /// Why it earned what it did, in one line.
    pub why: String,
}

/// The factors' share of a completed experiment's value (the rest is for completing).
pub const QUALITY_SHARE: f64 = 0.5;

/// What a journal earns (its `status` and measurements).
pub fn contribution(j: &Value) -> Contribution {
    let status = j["status"].as_str().unwrap_or("unknown");
    if status != "completed" {
        return Contribution {
            value: 0.0,
            factors: Vec::new(),
            why: format!("{status}: earns nothing"),
        };
    }
    let factors = factors(j);
    let q = if factors.is_empty() {
        1.0
    } else {
        factors.iter().map(|f| f.value).sum::<f64>() / factors.len() as f64
    };
    let value = (1.0 - QUALITY_SHARE) + QUALITY_SHARE * q;
    let why = if factors.is_empty() {
        "completed; no quality factor measured: full value".to_string()
    } else {
        format!(
            "completed (0.5) + 0.5 × mean of {} = {:.3}",
            factors
                .iter()
                .map(|f| format!("{} {:.2}", f.name, f.value))
                .collect::<Vec<_>>()
                .join(", "),
            value
        )
    };
    Contribution {
        value,
        factors,
        why,
    }
}

/// The quality factors a completed run's journal measured.
pub fn factors(j: &Value) -> Vec<Factor> {
    let clamp = |x: f64| x.clamp(0.0, 1.0);
    let mut out = Vec::new();
    if let Some(rho) = j["robustness"].as_f64() {
        out.push(Factor {
            name: "margin".into(),
            value: clamp(rho),
            from: format!("robustness ρ {rho:.3}"),
        });
    }
    let rec = &j["recovery"];
    if let (Some(mttr), Some(within)) = (rec["mttr_ms"].as_f64(), rec["within_ms"].as_f64()) {
        if within > 0.0 {
            out.push(Factor {
                name: "recovery".into(),
                value: clamp(1.0 - mttr / within),
                from: format!("MTTR {mttr:.0} ms of {within:.0} ms allowed"),
            });
        }
    }
    let first_stage_ms = j["stages"]
        .get(0)
        .and_then(|s| Some(s["end_ms"].as_f64()? - s["start_ms"].as_f64()?))
        .filter(|d| *d > 0.0);
    if let (Some(ttd), Some(span)) = (j["detection"]["ttd_ms"].as_f64(), first_stage_ms) {
        out.push(Factor {
            name: "detection".into(),
            value: clamp(1.0 - ttd / span),
            from: format!("MTTD {ttd:.0} ms of a {span:.0} ms first stage"),
        });
    }
    let silent = &j["silent"];
    if silent["altered"].as_u64().is_some_and(|a| a > 0) {
        if let Some(rate) = silent["silent_rate"].as_f64() {
            out.push(Factor {
                name: "silent".into(),
                value: clamp(1.0 - rate),
                from: format!(
                    "silent_rate {rate:.3} over {} altered result(s)",
                    silent["altered"]
                ),
            });
        }
    }
    out
}

/// The score from (weight, value) pairs: 0–100, one decimal (0 without weight).
pub fn score(parts: &[(f64, f64)]) -> f64 {
    let total: f64 = parts.iter().map(|(w, _)| w).sum();
    if total <= 0.0 {
        return 0.0;
    }
    let earned: f64 = parts.iter().map(|(w, v)| w * v).sum();
    (1000.0 * earned / total).round() / 10.0
}

/// The grade of a score.
pub fn grade(score: f64) -> &'static str {
    match score {
        s if s >= 90.0 => "A",
        s if s >= 80.0 => "B",
        s if s >= 70.0 => "C",
        s if s >= 60.0 => "D",
        _ => "F",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_a_journal_earns() {
        let bad = contribution(&json!({"status": "aborted", "robustness": 0.9}));
        assert_eq!(bad.value, 0.0);
        let bare = contribution(&json!({"status": "completed"}));
        assert_eq!(bare.value, 1.0);
        let j = json!({
            "status": "completed",
            "robustness": 0.5,
            "recovery": {"mttr_ms": 2500.0, "within_ms": 10000.0},
            "stages": [{"start_ms": 1000.0, "end_ms": 5000.0}],
            "detection": {"ttd_ms": 1000.0},
            "silent": {"altered": 10, "silent_rate": 0.2},
        });
        let c = contribution(&j);
        // margin 0.5, recovery 0.75, detection 0.75, silent 0.8 → q 0.7 → 0.85
        assert_eq!(c.factors.len(), 4);
        assert!((c.value - 0.85).abs() < 1e-9, "{c:?}");
    }

    #[test]
    fn score_and_grade() {
        assert_eq!(score(&[(1.0, 1.0), (1.0, 0.0)]), 50.0);
        assert_eq!(score(&[(3.0, 1.0), (1.0, 0.0)]), 75.0);
        assert_eq!(score(&[]), 0.0);
        assert_eq!(grade(90.0), "A");
        assert_eq!(grade(89.9), "B");
        assert_eq!(grade(59.9), "F");
    }
}
