//! The records other parts of a run write into its journal (journal.rs): a probe's bound
//! from history, detection and recovery, a fleet relay's life, the model calibrated on the
//! baseline and its prediction of each stage, each server's calls, a guardrail's refusal,
//! and the SLIs they are told in. Plain data, below the journal and below the modules that
//! fill them in (each re-exports its own: `policy::Refusal`, `predict::Prediction`, …).

use schemars::JsonSchema;
use serde::Serialize;
use std::collections::BTreeMap;

/// Where a probe's bound came from.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct BaselineRecord {
    /// The probe's position in `steady_state` (0-based).
    pub probe: usize,
    pub tool: String,
    /// `p50`, `p95`, `p99` or `success`.
    pub stat: String,
    /// How the bound was derived, e.g. `mean + 3σ` or `p99 of history`.
    pub rule: String,
    /// The runs learnt from, newest first.
    pub runs: Vec<String>,
    /// The statistic in each of those runs (milliseconds, or percent for `success`).
    pub values: Vec<f64>,
    /// The bound applied, as a tolerance (`<= 123.4ms`, `>= 97.5%`); `null` when history
    /// was too short and the tolerance had no bound of its own for the statistic.
    pub bound: Option<String>,
    /// Why the history did not give the bound, when it did not.
    pub note: Option<String>,
}

/// Detection and recovery, over an experiment or one stage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct Detection {
    /// When the faults were applied.
    pub faults_applied_ms: f64,
    /// When they were removed (`null`: still applied at the end of the span).
    pub faults_removed_ms: Option<f64>,
    /// Samples taken from the faults' application on, and how many were bad.
    pub samples: u64,
    pub failures: u64,
    /// The first bad sample at or after the faults were applied: one that failed, or one
    /// taken while an alert was open (a slow P95: each sample answered, only too slowly).
    pub first_failure_ms: Option<f64>,
    /// Time to detect: first_failure_ms − faults_applied_ms.
    pub ttd_ms: Option<f64>,
    /// The first alert (N failures in a row, or the rolling P95 broken).
    pub first_alert_ms: Option<f64>,
    /// Time to alert: first_alert_ms − faults_applied_ms.
    pub tta_ms: Option<f64>,
    /// What recovery is measured from: the faults' removal when the failures lasted until
    /// then, else the start of the last failing run of samples (the target came back while
    /// the faults were still applied, e.g. a restarted server).
    pub recovery_from_ms: Option<f64>,
    /// The first passing sample after the last failing one.
    pub first_pass_ms: Option<f64>,
    /// Time to recover: first_pass_ms − recovery_from_ms.
    pub ttr_ms: Option<f64>,
    /// The recovery notice that closed the last incident.
    pub recovery_notice_ms: Option<f64>,
    /// Time to the recovery notice: recovery_notice_ms − recovery_from_ms.
    pub ttrn_ms: Option<f64>,
    /// Failure reasons seen, with how many samples had each (`latency`: answered, inside an
    /// open P95 incident).
    pub reasons: BTreeMap<String, u64>,
}

/// One relay of the fleet, as the journal keeps it (times in run-clock milliseconds).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RelayRecord {
    /// The relay's admin API (its identity).
    pub admin: String,
    /// Its MCP endpoint.
    pub url: String,
    /// When the runner first saw it (the start, or when DNS first listed it).
    pub joined_ms: f64,
    /// When DNS stopped listing it (`null`: listed to the end).
    pub left_ms: Option<f64>,
    /// The stages whose faults it carried (chosen by the seed).
    pub stages: Vec<String>,
    /// When its faults first went on (the first stage it carried).
    pub faults_on_ms: Option<f64>,
    /// When it confirmed every fault of this run removed (`null`: never confirmed, or it
    /// never had any).
    pub removed_ms: Option<f64>,
    /// It could not be reached to remove its faults: its last sign of life (the last lease
    /// it renewed).
    pub unreachable_since_ms: Option<f64>,
    /// When its faults' lease ran out (they lapse by themselves there), if it was not
    /// reached.
    pub lease_lapsed_ms: Option<f64>,
    /// What went wrong with it, if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Each spell in which its faults could not be put on or renewed (a slow or cut-off
    /// relay), even when it came back before the end.
    pub outages: Vec<OutageRecord>,
    /// Each fault whose lease ran out on it while the run held it, and when it was put back.
    pub lapses: Vec<LapseRecord>,
}

/// A spell in which a relay's faults could not be put on or renewed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OutageRecord {
    /// Its last confirmed lease before the spell (or the first failed attempt).
    pub since_ms: f64,
    /// When its faults lapsed by themselves, unless it was back before.
    pub lapse_by_ms: f64,
    /// When it answered again (`null`: not before the end).
    pub back_ms: Option<f64>,
    /// What failed.
    pub detail: String,
}

/// A fault whose lease ran out on a relay mid-run, put back by the renewer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LapseRecord {
    pub fault: String,
    /// When its lease ran out.
    pub lapsed_ms: f64,
    /// When the relay took it again (`null`: not put back before the faults were removed).
    pub back_ms: Option<f64>,
}

/// What the runner learnt from the baseline.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct Calibration {
    /// Calls of the baseline the model was fitted to.
    pub calls: u64,
    /// Tasks per second during the baseline (the simulated stages run as many per second).
    pub tasks_per_s: f64,
    /// The server's effective concurrency (the most calls in flight).
    pub concurrency: u32,
    /// Per tool: the fitted latency model and error rate.
    pub tools: serde_json::Value,
    /// Why there are no predictions, when there are none.
    pub note: Option<String>,
}

/// One server of a run, in its journal: its calls and the silent failures it started.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct ServerRecord {
    pub name: String,
    /// Where its calls went (brownout's relay in front of it).
    pub url: String,
    /// `tools/call` requests the relay carried to it, and how many did not end `ok`.
    pub calls: u64,
    pub errors: u64,
    /// Results of its tools a fault changed, and what became of them (acted on — here or on
    /// another server —, noticed, unobserved).
    pub silent: brownout_core::stats::Silent,
}

/// Why the guardrails refuse an experiment: the rule and the offending value.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema, thiserror::Error)]
#[error("refused by guardrail `{rule}`: {detail}")]
pub struct Refusal {
    pub rule: String,
    pub detail: String,
}

/// SLIs over some calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct Slis {
    pub calls: u64,
    pub errors: u64,
    /// errors / calls (0 when there were none).
    pub error_rate: f64,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

/// A stage as the simulator predicted it.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct Prediction {
    /// The SLIs predicted over the stage.
    pub slis: Slis,
    /// Each gate: breached or not in the simulation, and its worst window.
    pub gates: Vec<PredictedGate>,
    /// `holds` (every gate held) or `breaches`.
    pub verdict: String,
    /// ρ in the simulation.
    pub robustness: Option<f64>,
    /// After the stage: actual − predicted (error rate as a fraction, latencies in ms),
    /// and whether the verdict was right (`null` until the stage ran).
    pub error: Option<PredictionError>,
}

#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct PredictedGate {
    pub gate: String,
    pub breached: bool,
    pub worst: Option<f64>,
}

#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct PredictionError {
    pub error_rate: f64,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// The predicted verdict matched the stage's.
    pub verdict_right: bool,
    /// The predicted error rate was near the actual one ([`rates_agree`]).
    pub error_rate_right: bool,
}

/// A relay whose injections a stage counts as of an earlier reading: it left the fleet, or
/// did not answer its `/status` at the stage's end.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct UnreadRecord {
    /// The relay's admin API.
    pub relay: String,
    /// When it was last read (`null`: never, so it counts none).
    pub read_ms: Option<f64>,
    /// Why it was not read.
    pub detail: String,
}
