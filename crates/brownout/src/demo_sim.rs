//! The simulated half of `brownout demo`: two stories told by the simulator in about a
//! second, from the example workloads and plans compiled into the binary (so an installed
//! `brownout` tells them without the repository).
//!
//! - the headline: fan-out 8 under 2 % injected errors, without and with resilience, and the
//!   measured blast radius next to the independent-failure prediction 1 − (1 − e)^TCAF;
//! - the cascade: a squeezed pool, unbounded retries and an outbound rate limiter turn a short
//!   error burst into a self-inflicted outage, while capped retries with jitter and a breaker
//!   keep the same squeeze inside a 1 % SLO.

use brownout_core::Plan;
use brownout_sim::metrics::Second;
use brownout_sim::{simulate, Report, SimOptions, Workload};
use serde_json::{json, Value};

const ERRORS_2PCT: (&str, &str) = (
    "examples/sim/errors-2pct.yaml",
    include_str!("../../../examples/sim/errors-2pct.yaml"),
);
const HEADLINE: (&str, &str) = (
    "examples/sim/headline.yaml",
    include_str!("../../../examples/sim/headline.yaml"),
);
const HEADLINE_RESILIENT: (&str, &str) = (
    "examples/sim/headline-resilient.yaml",
    include_str!("../../../examples/sim/headline-resilient.yaml"),
);
const CASCADE_TRIGGER: (&str, &str) = (
    "examples/sim/cascade-trigger.yaml",
    include_str!("../../../examples/sim/cascade-trigger.yaml"),
);
const CASCADE: (&str, &str) = (
    "examples/sim/cascade.yaml",
    include_str!("../../../examples/sim/cascade.yaml"),
);
const CASCADE_RESILIENT: (&str, &str) = (
    "examples/sim/cascade-resilient.yaml",
    include_str!("../../../examples/sim/cascade-resilient.yaml"),
);

/// The SLO the cascade story is judged by: at most 1 % of calls fail.
pub const CASCADE_SLO: f64 = 0.01;
/// The injected per-call error rate of the headline (the plan's probability).
const HEADLINE_ERROR_RATE: f64 = 0.02;

fn run_pair(plan: (&str, &str), workload: (&str, &str)) -> anyhow::Result<Report> {
    let plan = Plan::from_str_named(plan.1, plan.0).map_err(|e| anyhow::anyhow!("{e}"))?;
    let w = Workload::from_str_named(workload.1, workload.0).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(simulate(
        &w,
        plan,
        &SimOptions {
            keep_series: true,
            ..SimOptions::default()
        },
    ))
}

/// The four simulations, their reading, and the text to print.
pub struct SimStories {
    pub json: Value,
    pub text: String,
}

pub fn run() -> anyhow::Result<SimStories> {
    let bare = run_pair(ERRORS_2PCT, HEADLINE)?;
    let resilient = run_pair(ERRORS_2PCT, HEADLINE_RESILIENT)?;
    let storm = run_pair(CASCADE_TRIGGER, CASCADE)?;
    let held = run_pair(CASCADE_TRIGGER, CASCADE_RESILIENT)?;
    let trigger_start = trigger_start_s();
    Ok(SimStories {
        text: headline_text(&bare, &resilient) + &cascade_text(&storm, &held, trigger_start),
        json: json!({
            "headline": {
                "injected_error_rate": HEADLINE_ERROR_RATE,
                "no_resilience": headline_json(&bare),
                "resilience": headline_json(&resilient),
            },
            "cascade": {
                "slo_max_error_rate": CASCADE_SLO,
                "trigger_starts_s": trigger_start,
                "no_resilience": cascade_json(&storm, trigger_start),
                "resilience": cascade_json(&held, trigger_start),
            },
        }),
    })
}

/// 1 − (1 − e)^TCAF: the blast radius if every call failed independently with rate e.
pub fn independent_prediction(e: f64, tcaf: f64) -> f64 {
    1.0 - (1.0 - e).powf(tcaf)
}

fn headline_json(r: &Report) -> Value {
    json!({
        "tcaf": r.tcaf,
        "attempt_amplification": r.attempt_amplification,
        "blast_radius": r.blast_radius,
        "predicted_blast_radius": independent_prediction(HEADLINE_ERROR_RATE, r.tcaf),
        "tcsr": r.tcsr,
        "latency_ms": r.latency_ms,
    })
}

fn headline_text(bare: &Report, resilient: &Report) -> String {
    let mut s = String::from(
        "Simulated (virtual time) — the headline: an agent task fans out into 8 tool calls, 2 % of calls fail\n",
    );
    s.push_str(&format!(
        "  {:<34} {:>6} {:>9} {:>13} {:>22} {:>9}\n",
        "client", "TCAF", "attempts", "blast radius", "predicted 1-(1-e)^TCAF", "p99 ms"
    ));
    for r in [bare, resilient] {
        s.push_str(&format!(
            "  {:<34} {:>6.2} {:>8.3}x {:>12.2}% {:>21.2}% {:>9.1}\n",
            r.name.as_deref().unwrap_or("-"),
            r.tcaf,
            r.attempt_amplification,
            r.blast_radius * 100.0,
            independent_prediction(HEADLINE_ERROR_RATE, r.tcaf) * 100.0,
            r.latency_ms.p99
        ));
    }
    s.push_str("  Without resilience, 2 % per call fails about 1 task in 7; retries with a budget, degradation and a breaker absorb it.\n\n");
    s
}

/// Where the cascade's trigger begins, read from the trigger plan's window.
fn trigger_start_s() -> u64 {
    // The example plan says `window: {start: 10s, ...}`; keep the demo honest if it changes.
    CASCADE_TRIGGER
        .1
        .split("start:")
        .nth(1)
        .and_then(|rest| {
            rest.trim_start()
                .split(|c: char| !c.is_ascii_digit())
                .next()
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or(10)
}

fn error_rate(series: &[Second]) -> f64 {
    let (errors, attempts) = series
        .iter()
        .fold((0, 0), |(e, a), s| (e + s.errors, a + s.attempts));
    if attempts == 0 {
        0.0
    } else {
        errors as f64 / attempts as f64
    }
}

fn cascade_json(r: &Report, trigger_start: u64) -> Value {
    let before = &r.series[..(trigger_start as usize).min(r.series.len())];
    let call_error_rate = 1.0 - r.tcsr;
    json!({
        "name": r.name,
        "call_error_rate": call_error_rate,
        "attempt_error_rate_before_trigger": error_rate(before),
        "attempt_error_rate_peak_second": r.series.iter().map(rate).fold(0.0, f64::max),
        "attempt_amplification": r.attempt_amplification,
        "latency_ms": r.latency_ms,
        "slo_held": call_error_rate <= CASCADE_SLO,
        "attempts_per_s": r.series.iter().map(|s| s.attempts).collect::<Vec<_>>(),
        "attempt_error_rate_per_s": r.series.iter().map(rate).collect::<Vec<_>>(),
    })
}

/// A workload's name after its scenario: "pool squeeze, unbounded retries" → "unbounded retries".
fn label(r: &Report) -> &str {
    let name = r.name.as_deref().unwrap_or("-");
    name.split_once(", ").map_or(name, |(_, rest)| rest)
}

fn rate(s: &Second) -> f64 {
    if s.attempts == 0 {
        0.0
    } else {
        s.errors as f64 / s.attempts as f64
    }
}

fn cascade_text(storm: &Report, held: &Report, trigger_start: u64) -> String {
    let mut s = String::from(
        "Simulated — the cascade: pools squeezed to 10 per replica, then 3 s of errors from t=",
    );
    s.push_str(&format!("{trigger_start}s (SLO: ≤ 1 % of calls fail)\n"));
    s.push_str(&format!(
        "  {:<34} {:>14} {:>12} {:>9} {:>8}  {}\n",
        "client", "errors before", "calls failed", "attempts", "p99 ms", "SLO"
    ));
    for r in [storm, held] {
        let before = &r.series[..(trigger_start as usize).min(r.series.len())];
        let failed = 1.0 - r.tcsr;
        s.push_str(&format!(
            "  {:<34} {:>13.2}% {:>11.2}% {:>8.1}x {:>8.0}  {}\n",
            label(r),
            error_rate(before) * 100.0,
            failed * 100.0,
            r.attempt_amplification,
            r.latency_ms.p99,
            if failed <= CASCADE_SLO {
                "held"
            } else {
                "BREACHED"
            }
        ));
    }
    s.push_str("  attempt error rate per second of virtual time (▁ 0 % … █ 100 %):\n");
    for r in [storm, held] {
        s.push_str(&format!(
            "  {:<34} {}\n",
            label(r),
            sparkline(&r.series.iter().map(rate).collect::<Vec<_>>())
        ));
    }
    s.push_str("  Retries pile onto the squeezed pool and the client's own rate limiter rejects them, which it retries too:\n  the outage outlives its trigger. Capped, jittered retries and a breaker let the pool drain.\n\n");
    s
}

/// One character per value in [0, 1]: a text plot that survives any terminal.
pub fn sparkline(values: &[f64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    values
        .iter()
        .map(|v| {
            let i = (v.clamp(0.0, 1.0) * 7.0).round() as usize;
            BARS[i.min(7)]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparkline_spans_the_range() {
        assert_eq!(sparkline(&[0.0, 0.5, 1.0, 2.0, -1.0]), "▁▅██▁");
    }

    #[test]
    fn prediction_is_the_independent_failure_formula() {
        assert!((independent_prediction(0.02, 8.0) - 0.1492).abs() < 1e-4);
        assert_eq!(independent_prediction(0.0, 8.0), 0.0);
    }

    #[test]
    fn the_trigger_start_is_read_from_the_plan() {
        assert_eq!(trigger_start_s(), 10);
    }
}
