//! The journal: one JSON document per run, the single record of what an experiment did
//! (its schema is `docs/journal.schema.json`, generated from these types).

use super::gates::GateView;
use super::records::Refusal;
pub use super::records::Slis;
use super::spec::Tolerance;
use brownout_core::slo::GateSummary;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Every stage ran with every gate holding, recovery in time, steady state after met.
    Completed,
    /// It ran to the end but the hypothesis did not hold (steady state after, recovery).
    Deviated,
    /// A gate breached: the faults were removed at once and the run stopped.
    Aborted,
    /// brownout could not run it (target unreachable, a probe errored, …).
    Failed,
    /// SIGINT or SIGTERM.
    Interrupted,
    /// A guardrail refused it: nothing reached the target.
    Refused,
    /// The steady state did not hold before: no fault was injected.
    NotRun,
}

impl Status {
    /// The exit code `brownout run` ends with.
    pub fn exit_code(self) -> i32 {
        match self {
            Status::Completed => 0,
            Status::Deviated | Status::Aborted => 1,
            Status::Refused => 3,
            Status::Failed | Status::NotRun => 4,
            Status::Interrupted => 130,
        }
    }
}

/// One run of an experiment.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Journal {
    /// The journal format's version.
    pub journal_version: u32,
    /// The run's id, also its id in the store (`brownout journal show RUN`).
    pub run_id: String,
    pub brownout_version: String,
    /// The experiment file, as given.
    pub file: String,
    /// The experiment as run (every key, defaults unfilled).
    pub experiment: Value,
    /// The resolved fault plan (seed and faults, before a stage sets `sessions`).
    pub plan: Value,
    pub seed: u64,
    /// Wall-clock start and end, milliseconds since the Unix epoch.
    pub started_unix_ms: u64,
    pub ended_unix_ms: u64,
    pub status: Status,
    pub reason: String,
    pub dry_run: bool,
    /// The guardrail that refused the run, if one did.
    pub refusal: Option<Refusal>,
    /// What load and faults were sent to.
    pub target: TargetRecord,
    pub steady_state_before: Option<SteadyState>,
    pub steady_state_after: Option<SteadyState>,
    pub baseline: Option<Phase>,
    pub stages: Vec<StageRecord>,
    pub breach: Option<Breach>,
    pub rollbacks: Vec<RollbackRecord>,
    pub recovery: Option<RecoveryRecord>,
    /// Each gate over the whole run.
    pub gates: Vec<GateSummary>,
    /// SLIs second by second (times are run-clock milliseconds since the start).
    pub series: Vec<Second>,
    /// MTTD/MTTR over the run, from the `during: true` probes: the first stage's faults to
    /// the first failing sample and alert; the faults' removal (or the target coming back)
    /// to the first passing sample and recovery notice (`null` without such probes).
    pub detection: Option<super::records::Detection>,
    /// Robustness ρ over the whole run (docs/gates.md#robustness).
    pub robustness: Option<f64>,
    /// The simulator's model of the target, fitted to the baseline's calls (the stages'
    /// predictions run on it); `null` without a baseline.
    pub calibration: Option<super::records::Calibration>,
    /// Results the faults changed and what the agent did with them, over the run
    /// (docs/silent.md); `null` when the relay could not say.
    pub silent: Option<brownout_core::stats::Silent>,
    /// Tolerances taken from history (`from_baseline`), with the runs they came from.
    pub baselines: Vec<super::records::BaselineRecord>,
    /// `tools/call` requests of each tool the relay carried over the run — load, probes
    /// and calls brownout answered in the target's place alike, so an upper bound on the
    /// calls that reached the target: a tool it does not list reached the target 0 times.
    /// Behind a remote relay, every call it carried since it started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<std::collections::BTreeMap<String, u64>>,
    /// With several servers (`target.servers`): each server's calls, and the results a fault
    /// changed there and what the agents did with them — on this server or another.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub servers: Option<Vec<super::records::ServerRecord>>,
    /// The GameDay this run was part of (`brownout gameday`; docs/gameday.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gameday_id: Option<String>,
    /// A rung of the ladder this run went above what the store's history allows, with a
    /// person's approval: who approved and what the guardrail said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ladder_skip: Option<LadderSkip>,
    /// With a fleet (`target.fleet`): each relay — the stages whose faults it carried, when
    /// they went on, when it confirmed their removal, or since when it could not be reached
    /// and when its lease ran out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fleet: Option<Vec<super::records::RelayRecord>>,
}

/// A ladder rung skipped with a person's approval (docs/experiments.md#guardrails).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LadderSkip {
    /// Who approved it, as the approval flow recorded them.
    pub approved_by: String,
    /// What `ladder_from_history` would have refused.
    pub refused: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TargetRecord {
    /// `command` (brownout's relay in front of a server it starts), `url` (its relay in
    /// front of an HTTP server) or `remote` (a relay already running, faults through admin).
    pub kind: String,
    /// Where the load went.
    pub url: Option<String>,
}

/// The steady-state hypothesis at one moment.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SteadyState {
    pub met: bool,
    pub probes: Vec<ProbeRecord>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ProbeRecord {
    pub tool: String,
    pub tolerance: Tolerance,
    pub samples: Vec<Sample>,
    /// Share of calls answered without error, 0–100.
    pub success_pct: f64,
    pub latency: Slis,
    pub met: bool,
    /// Each bound the samples missed.
    pub misses: Vec<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Sample {
    pub ok: bool,
    pub latency_ms: f64,
    pub error: Option<String>,
    /// Why it failed, in the probe taxonomy (`process_exited`, `timeout`, …; docs/probes.md).
    pub reason: Option<String>,
    /// When it ended, run-clock milliseconds (`during: true` samples).
    pub at_ms: Option<f64>,
    /// `alert` or `recovery` when this sample opened or closed an incident.
    pub notice: Option<String>,
}

/// A span of the run (the baseline), with its SLIs.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Phase {
    pub start_ms: f64,
    pub end_ms: f64,
    pub slis: Slis,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StageRecord {
    pub stage: String,
    /// The share of sessions the faults reached, 0–1.
    pub share: f64,
    pub start_ms: f64,
    pub end_ms: f64,
    /// It ran its whole duration with every gate holding.
    pub completed: bool,
    /// This run's injections during the stage, by fault id: each relay's change since the
    /// stage began, summed.
    pub injections: BTreeMap<String, u64>,
    /// Relays whose injections count as of an earlier reading (one that left the fleet, or
    /// did not answer at the stage's end); empty (left out) when every relay was read.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub injections_unread: Vec<super::records::UnreadRecord>,
    pub slis: Slis,
    /// Every gate evaluation during the stage that changed a gate's status.
    pub gate_changes: Vec<GateView>,
    /// The `during: true` probes' samples in this stage, judged by their tolerance.
    pub probes: Vec<ProbeRecord>,
    /// When those samples saw this stage's faults, and recovery within the stage
    /// (`null` without `during: true` probes).
    pub detection: Option<super::records::Detection>,
    /// Robustness ρ over the stage: the gates' smallest normalised margin (> 0 held with
    /// room, < 0 breached; docs/gates.md); `null` before any window had enough samples.
    pub robustness: Option<f64>,
    /// The simulator's estimate of the stage, made before it ran, with its error after
    /// (`null` when none could be made: see the journal's `calibration.note`).
    pub prediction: Option<super::records::Prediction>,
    /// Results this stage's faults changed and what the agent did with them (counted when
    /// classified: a result changed near the stage's end may be classified in the next).
    pub silent: Option<brownout_core::stats::Silent>,
}

/// The gate breach that aborted the run.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Breach {
    pub at_ms: f64,
    pub gate: String,
    pub value: Option<f64>,
    pub limit: f64,
    pub samples: u64,
    pub stage: String,
    /// Every gate at the breach.
    pub window: Vec<GateView>,
    /// When the last fault left the engine (or the remote relay confirmed it).
    pub last_fault_left_ms: f64,
    /// last_fault_left_ms − at_ms.
    pub abort_latency_ms: f64,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RollbackRecord {
    /// `remove faults` or the command line.
    pub action: String,
    pub start_ms: f64,
    pub end_ms: f64,
    pub ok: bool,
    pub detail: String,
}

/// Recovery after the faults left: MTTR is from the last fault leaving to the first
/// evaluation with every gate holding and the last second's error rate within the
/// baseline's tolerance.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RecoveryRecord {
    pub faults_left_ms: f64,
    pub mttr_ms: Option<f64>,
    pub within_ms: Option<f64>,
    pub recovered: bool,
}

/// One second of the run.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Second {
    /// The span's start, run-clock milliseconds.
    pub t_ms: f64,
    /// The span's length in milliseconds: 1000 for runs of a minute or more, finer for
    /// shorter runs (a 3-second run in 100 ms spans), so a chart resolves what happened.
    pub width_ms: f64,
    /// The phase: `baseline`, a stage's name, `recovery`.
    pub phase: String,
    pub slis: Slis,
}

/// The journal's JSON Schema.
pub fn schema() -> Value {
    let g = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let s = g.into_root_schema_for::<Journal>();
    s.as_value().clone()
}

/// Latencies and errors of a phase or a second, summarised. Latencies go into a histogram
/// (3 significant digits, microseconds up to an hour): memory stays a few kilobytes however
/// many calls a stage sees, and reading the error rate (done on every call) costs nothing.
#[derive(Debug, Clone)]
pub struct Acc {
    latencies_us: hdrhistogram::Histogram<u64>,
    calls: u64,
    pub errors: u64,
}

/// The longest latency the histogram holds apart (an hour); longer ones count as an hour.
const MAX_LATENCY_US: u64 = 3_600_000_000;

impl Default for Acc {
    fn default() -> Acc {
        Acc {
            latencies_us: hdrhistogram::Histogram::new_with_bounds(1, MAX_LATENCY_US, 3)
                .expect("constant bounds that hdrhistogram accepts"),
            calls: 0,
            errors: 0,
        }
    }
}

impl Acc {
    pub fn add(&mut self, ok: bool, latency_ms: f64) {
        let us = (latency_ms.max(0.0) * 1000.0).round() as u64;
        self.latencies_us
            .saturating_record(us.clamp(1, MAX_LATENCY_US));
        self.calls += 1;
        self.errors += u64::from(!ok);
    }

    /// Errors over calls (`None` without calls).
    pub fn error_rate(&self) -> Option<f64> {
        (self.calls > 0).then(|| self.errors as f64 / self.calls as f64)
    }

    pub fn slis(&self) -> Slis {
        let calls = self.calls;
        let pct =
            |p: f64| (calls > 0).then(|| self.latencies_us.value_at_quantile(p) as f64 / 1000.0);
        Slis {
            calls,
            errors: self.errors,
            error_rate: if calls == 0 {
                0.0
            } else {
                self.errors as f64 / calls as f64
            },
            p50_ms: pct(0.50),
            p95_ms: pct(0.95),
            p99_ms: pct(0.99),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Acc;

    #[test]
    fn a_phase_summary_counts_exactly_and_reads_percentiles_within_a_tenth_of_a_percent() {
        let mut a = Acc::default();
        assert_eq!(a.error_rate(), None);
        assert_eq!(a.slis().p99_ms, None);
        for i in 1..=10_000u32 {
            a.add(i % 100 != 0, f64::from(i) / 10.0); // 0.1 ms … 1000 ms, 1 % errors
        }
        let s = a.slis();
        assert_eq!((s.calls, s.errors), (10_000, 100));
        assert_eq!(a.error_rate(), Some(0.01));
        for (got, want) in [(s.p50_ms, 500.0), (s.p95_ms, 950.0), (s.p99_ms, 990.0)] {
            let got = got.expect("a percentile");
            assert!((got - want).abs() <= want * 0.001, "{got} vs {want}");
        }
    }
}
