//! A steady-state check: a probe run `samples` times, judged by its `tolerance` (`success`
//! over the samples, and latency percentiles) — what the experiment runner's steady-state
//! hypothesis asks of an `mcp` probe, for every probe kind.

use super::rolling::{Percentiles, Rolling};
use super::spec::{ProbeSpec, SampleTolerance};
use super::{run_once, ProbeResult};
use serde::Serialize;

/// The samples of one check and whether they meet the tolerance.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SampleReport {
    pub target: String,
    pub samples: Vec<ProbeResult>,
    /// Passing samples over samples (a fraction).
    pub success: f64,
    pub latency: Option<Percentiles>,
    pub met: bool,
    /// Each bound the samples broke, in a sentence.
    pub misses: Vec<String>,
}

/// Run `spec`'s samples (its `samples`, else `default_samples`) one after the other.
pub async fn check(spec: &ProbeSpec, default_samples: u32) -> SampleReport {
    let (n, tol) = match spec {
        ProbeSpec::Mcp(m) => (m.samples.unwrap_or(default_samples), m.tolerance.clone()),
        _ => (default_samples, SampleTolerance::default()),
    };
    let mut samples = Vec::new();
    for _ in 0..n.max(1) {
        samples.push(run_once(spec).await);
    }
    judge(spec.target(), samples, &tol)
}

/// Judge samples against a tolerance (no `success` bound means every sample must pass).
pub fn judge(target: String, samples: Vec<ProbeResult>, tol: &SampleTolerance) -> SampleReport {
    let passed = samples.iter().filter(|s| s.ok).count();
    let success = if samples.is_empty() {
        0.0
    } else {
        passed as f64 / samples.len() as f64
    };
    let mut rolling = Rolling::new(samples.len().max(1));
    for s in &samples {
        rolling.push(s.total_ms);
    }
    let latency = rolling.percentiles();
    let mut misses = Vec::new();
    match &tol.success {
        Some(t) if !t.check_number(success) => {
            misses.push(format!("success {:.1}% is not `{t}`", success * 100.0));
        }
        None if passed < samples.len() => {
            misses.push(format!(
                "{} of {} samples failed",
                samples.len() - passed,
                samples.len()
            ));
        }
        _ => {}
    }
    for (name, bound, value) in [
        ("p50", &tol.p50, latency.map(|p| p.p50_ms)),
        ("p95", &tol.p95, latency.map(|p| p.p95_ms)),
        ("p99", &tol.p99, latency.map(|p| p.p99_ms)),
    ] {
        if let Some(t) = bound {
            let v = value.unwrap_or(f64::INFINITY);
            if !t.check_number(v) {
                misses.push(format!("{name} {v:.1} ms is not `{t}`"));
            }
        }
    }
    SampleReport {
        target,
        met: misses.is_empty(),
        samples,
        success,
        latency,
        misses,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::spec::ProbeSpec;

    fn sample(ok: bool, ms: f64) -> ProbeResult {
        ProbeResult {
            ok,
            target: "t".into(),
            failure_reason: None,
            failure: None,
            phases: Vec::new(),
            at_ms: 0.0,
            total_ms: ms,
            detail: String::new(),
        }
    }

    /// The experiment runner's steady-state probe, as h-exp writes it, is a ProbeSpec.
    #[test]
    fn the_experiment_runners_probe_shape_reads_as_a_probe_spec() {
        let yaml: serde_json::Value = serde_json::json!({
            "probe": "mcp",
            "call": {"tool": "search_incidents", "arguments": {"query": "db"}},
            "tolerance": {"success": ">= 95%", "p95": "< 500ms"},
            "samples": 20
        });
        let spec: ProbeSpec = serde_json::from_value(yaml).unwrap_or_else(|e| panic!("{e}"));
        let ProbeSpec::Mcp(m) = spec.with_default_url("http://127.0.0.1:1/mcp") else {
            panic!("not mcp")
        };
        assert_eq!(m.samples, Some(20));
        assert_eq!(m.url.as_deref(), Some("http://127.0.0.1:1/mcp"));
        let mut samples: Vec<_> = (0..19).map(|_| sample(true, 10.0)).collect();
        samples.push(sample(false, 10.0));
        assert!(judge("t".into(), samples.clone(), &m.tolerance).met);
        samples.push(sample(true, 900.0));
        samples.push(sample(true, 900.0));
        let r = judge("t".into(), samples, &m.tolerance);
        assert!(!r.met);
        assert!(
            r.misses.iter().any(|m| m.starts_with("p95")),
            "{:?}",
            r.misses
        );
    }

    #[test]
    fn unknown_keys_are_refused() {
        let r = serde_json::from_value::<ProbeSpec>(
            serde_json::json!({"probe": "http", "url": "http://x/", "stauts": 200}),
        );
        assert!(r.is_err_and(|e| e.to_string().contains("stauts")));
    }

    #[test]
    fn without_a_success_bound_every_sample_must_pass() {
        let r = judge(
            "t".into(),
            vec![sample(true, 1.0), sample(false, 1.0)],
            &SampleTolerance::default(),
        );
        assert!(!r.met);
        assert_eq!(r.success, 0.5);
    }
}
