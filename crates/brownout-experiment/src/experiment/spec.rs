//! The experiment file as written: every key, its schema and its typed values.
//!
//! These types derive `JsonSchema`; `brownout experiment schema` prints the schema built from
//! them and [`super::load`] validates every file against the same schema, so the reference
//! and the checks cannot disagree. Durations are `"500ms"`, `"30s"`, `"2m"`, `"1h"`; shares
//! are `"10%"`.

pub use super::dur::{parse_duration, Dur};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One experiment: a hypothesis about a target, checked under staged faults.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    /// What the experiment claims, in one sentence.
    pub title: String,
    /// Free labels (`env`, `service`, `cluster`, `namespace`, …); the guardrails read them.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// What the experiment runs against.
    pub target: Target,
    /// The steady-state hypothesis: probes checked before the faults and after recovery.
    #[serde(default)]
    pub steady_state: Vec<Probe>,
    /// brownout's own MCP clients, playing a workload against the target.
    pub load: Load,
    /// Load without faults before the first stage: the reference SLIs (default none).
    #[serde(default)]
    pub baseline: Option<Dur>,
    /// The stages, in order; each widens the share of sessions the faults reach.
    #[schemars(length(min = 1))]
    pub method: Vec<Stage>,
    /// The fault plan each stage applies: a list of faults (plan syntax) or a plan file.
    pub faults: Faults,
    /// SLO gates, evaluated live over sliding windows (see docs/gates.md).
    #[serde(default)]
    pub gates: Vec<String>,
    /// Commands run after the faults are removed, whatever the outcome.
    #[serde(default)]
    pub rollbacks: Vec<Rollback>,
    /// How soon the SLIs must be back once the faults are gone.
    #[serde(default)]
    pub recovery: Option<Recovery>,
    /// Seed of the fault plan (`--seed` overrides; default: the plan's own, else 0).
    #[serde(default)]
    pub seed: Option<u64>,
    /// Requirements this experiment is evidence for, `FRAMEWORK:ARTICLE` (e.g. `DORA:Art.25`,
    /// `NIS2:Art.21(2)(c)`); `brownout journal evidence` lists runs per tag.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(regex(
        pattern = r"^[A-Za-z][A-Za-z0-9_-]*:[A-Za-z0-9][A-Za-z0-9.()_/-]*$"
    )))]
    pub compliance: Vec<String>,
}

/// One of: `command` (a stdio server brownout starts behind its own relay), `url` (an HTTP
/// server, brownout's relay in front of it), or `url` with `admin` (a relay already running:
/// load goes to `url`, faults through its admin API).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Target {
    /// A stdio MCP server and its arguments, started once per session behind the relay.
    #[serde(default)]
    #[schemars(length(min = 1))]
    pub command: Option<Vec<String>>,
    /// The MCP endpoint (streamable HTTP) of a server, or of a running relay with `admin`.
    #[serde(default)]
    pub url: Option<String>,
    /// The admin API of the relay at `url` (e.g. `http://127.0.0.1:9900`).
    #[serde(default)]
    pub admin: Option<String>,
    /// The name of an environment variable holding the admin API's bearer token.
    #[serde(default)]
    pub admin_token_env: Option<String>,
    /// Where the runner reads the target's own health for `target_rss` and `target_cpu`
    /// gates when it does not start the target (docs/gates.md#target-health).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<Health>,
    /// Several servers at once, by name (instead of `command`/`url`): each is started behind
    /// one relay in this process, so faults pick servers (`servers: [NAME]`), the load routes
    /// each call to the server that has its tool, and a value a fault changed on one server
    /// is followed into the agent's calls on the others (docs/silent.md).
    #[serde(default)]
    #[schemars(length(min = 1, max = 16))]
    pub servers: Option<BTreeMap<String, Server>>,
    /// A fleet of relays already running (instead of `command`/`url`/`servers`): listed
    /// (`[{url, admin}, …]`) or found by DNS (`{dns, admin_port, mcp_port}`); the load
    /// spreads over them, a stage's `relays` picks which get the faults (docs/experiments.md#a-fleet-of-relays).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<super::fleet_spec::FleetSpec>,
}

/// A target's health as a Prometheus text-format endpoint publishes it.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Health {
    /// The endpoint, e.g. `http://10.0.0.5:9100/metrics`.
    pub prometheus: String,
    /// Resident memory in bytes (summed over the metric's series).
    #[serde(default = "default_rss_metric")]
    pub rss_metric: String,
    /// A counter of CPU seconds (summed over its series); its rate is the CPU share.
    #[serde(default = "default_cpu_metric")]
    pub cpu_metric: String,
}

fn default_rss_metric() -> String {
    "process_resident_memory_bytes".into()
}

fn default_cpu_metric() -> String {
    "process_cpu_seconds_total".into()
}

/// One of several servers of a target: `command` (stdio) or `url` (streamable HTTP).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Server {
    /// A stdio MCP server and its arguments, started once per session behind the relay.
    #[serde(default)]
    #[schemars(length(min = 1))]
    pub command: Option<Vec<String>>,
    /// The MCP endpoint (streamable HTTP) of a server.
    #[serde(default)]
    pub url: Option<String>,
}

/// A steady-state probe: `samples` calls of one tool, judged by a tolerance.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    /// The probe type; `mcp` (a tool call through a fresh MCP session) is the one there is.
    pub probe: ProbeKind,
    /// The call each sample makes.
    pub call: ProbeCall,
    /// What the samples must show.
    #[serde(default)]
    pub tolerance: Tolerance,
    /// How many calls (default 20).
    #[serde(default)]
    #[schemars(range(min = 1, max = 10000))]
    pub samples: Option<u32>,
    /// Also sample while the baseline and the stages run (every `interval`), through a
    /// session kept open; a stage whose samples miss the tolerance is not promoted (the run
    /// ends `deviated`). The journal records when these samples detected the faults and
    /// saw recovery (MTTD/MTTR).
    #[serde(default)]
    pub during: bool,
    /// `during: true`: time between samples (default `1s`), jittered ±10 % from the seed.
    #[serde(default)]
    pub interval: Option<Dur>,
    /// `during: true`: samples failing in a row that fire an alert (default 2).
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub alert_after: Option<u32>,
    /// `during: true`: a limit on the rolling P95 of the last `window` samples that fires
    /// an alert when broken, e.g. `"< 500ms"`.
    #[serde(default)]
    pub alert_p95: Option<String>,
    /// `during: true`: samples in the rolling window (default 10).
    #[serde(default)]
    #[schemars(range(min = 1, max = 10000))]
    pub window: Option<u32>,
    /// `during: true`: POST each alert and recovery notice here (the body `brownout probe
    /// --webhook` sends; the URL is never printed or journaled).
    #[serde(default, skip_serializing)]
    pub webhook: Option<String>,
    /// One sample's time budget (default `10s`).
    #[serde(default)]
    pub timeout: Option<Dur>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProbeKind {
    Mcp,
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProbeCall {
    /// The tool to call.
    pub tool: String,
    /// With `target.servers`: the server to call (default: the one whose tools include
    /// `tool`).
    #[serde(default)]
    pub server: Option<String>,
    /// Its arguments (default `{}`).
    #[serde(default)]
    pub arguments: serde_json::Map<String, serde_json::Value>,
}

/// Bounds on a probe's samples: `success` as `">= 99%"`, latency percentiles as `"< 500ms"`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Tolerance {
    /// Share of calls answered without error, e.g. `">= 99%"` (default `">= 100%"`).
    #[serde(default)]
    #[schemars(regex(pattern = r"^\s*(>=|>|<=|<)\s*[0-9]+(\.[0-9]+)?\s*%\s*$"))]
    pub success: Option<String>,
    /// Median latency bound, e.g. `"< 200ms"`.
    #[serde(default)]
    #[schemars(regex(pattern = r"^\s*(<=|<)\s*[0-9]+(\.[0-9]+)?\s*(ms|s)\s*$"))]
    pub p50: Option<String>,
    /// 95th percentile latency bound, e.g. `"< 500ms"`.
    #[serde(default)]
    #[schemars(regex(pattern = r"^\s*(<=|<)\s*[0-9]+(\.[0-9]+)?\s*(ms|s)\s*$"))]
    pub p95: Option<String>,
    /// 99th percentile latency bound, e.g. `"< 1s"`.
    #[serde(default)]
    #[schemars(regex(pattern = r"^\s*(<=|<)\s*[0-9]+(\.[0-9]+)?\s*(ms|s)\s*$"))]
    pub p99: Option<String>,
    /// Take one bound from the store's history instead of guessing it: this statistic of
    /// the probe's steady state before the faults, over the last `runs` completed runs of
    /// the same experiment (see docs/experiments.md, "Tolerances from history").
    #[serde(default)]
    pub from_baseline: Option<BaselineStat>,
    /// With `from_baseline`: the bound is the history's mean plus (latency) or minus
    /// (success) this many standard deviations (default 3).
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 100.0))]
    pub sigma: Option<f64>,
    /// With `from_baseline`, instead of `sigma`: the bound is this percentile of the
    /// history's values (`100`: the worst seen), e.g. `99`.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 100.0))]
    pub percentile: Option<f64>,
    /// With `from_baseline`: how many of the latest completed runs to learn from (default 10).
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub runs: Option<u32>,
    /// With `from_baseline`: the fewest runs a bound is taken from (default 3); with fewer,
    /// the statistic's own bound in this tolerance applies, if it has one.
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub min_runs: Option<u32>,
}

/// A statistic a tolerance can take from history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BaselineStat {
    P50,
    P95,
    P99,
    Success,
}

impl BaselineStat {
    pub fn name(self) -> &'static str {
        match self {
            BaselineStat::P50 => "p50",
            BaselineStat::P95 => "p95",
            BaselineStat::P99 => "p99",
            BaselineStat::Success => "success",
        }
    }
}

/// The live load.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Load {
    /// A workload file (the simulator's format with `arguments`; see docs/simulator.md), or
    /// the workload itself, inline.
    pub workload: WorkloadRef,
    /// MCP sessions at once (default 16).
    #[serde(default)]
    #[schemars(range(min = 1, max = 10000))]
    pub sessions: Option<u32>,
}

/// Where an experiment's workload is: a file, or written inline.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum WorkloadRef {
    /// A path, relative to the experiment file (else the current directory).
    Path(String),
    /// The workload itself (as a workload file would hold it).
    Inline(serde_json::Map<String, serde_json::Value>),
}

/// One stage of the method.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Stage {
    /// The stage's name, for progress and the journal.
    pub stage: String,
    /// How long the stage runs with every gate holding before the next one starts.
    pub duration: Dur,
    /// The share of sessions the faults reach (the plan's stable `sessions` selection).
    pub sessions: Share,
    /// With `target.fleet`: the share of the fleet's relays that get the faults (default
    /// 100 %), chosen by the seed and the same at every run (docs/experiments.md#a-fleet-of-relays).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relays: Option<Share>,
}

/// The faults: a list in plan syntax (each stage sets their `sessions`), or a plan file.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Faults {
    /// Faults in plan syntax (see docs/plans.md), without `sessions`.
    Inline(Vec<serde_json::Value>),
    /// A plan file, relative to the experiment file.
    File(String),
}

/// A rollback: a command run after the faults are removed.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Rollback {
    /// The program and its arguments (run from the experiment file's directory).
    #[schemars(length(min = 1))]
    pub command: Vec<String>,
    /// Longest it may run before it is killed (default 30s).
    #[serde(default)]
    pub timeout: Option<Dur>,
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Recovery {
    /// The longest time to recover once the last fault left (exceeded: `deviated`).
    pub within: Dur,
    /// How far above the baseline's error rate the last second's may be and count as
    /// recovered (default `"1%"`).
    #[serde(default)]
    pub tolerance: Option<Share>,
}

/// A share of sessions: `"10%"` (0–100 %).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct Share(
    #[schemars(regex(pattern = r"^\s*[0-9]+(\.[0-9]+)?\s*%\s*$"))]
    #[schemars(extend("examples" = ["10%", "25%"]))]
    pub String,
);

impl Share {
    /// The share as a fraction 0..=1 (`None` when unreadable).
    pub fn fraction(&self) -> Option<f64> {
        let n: f64 = self.0.trim().trim_end_matches('%').trim().parse().ok()?;
        Some(n / 100.0)
    }
}

/// A comparison from a tolerance: `">= 99%"` → (`>=`, 99.0); `"< 500ms"` → (`<`, 500.0 ms).
pub fn parse_bound(s: &str) -> Option<(&'static str, f64)> {
    let t = s.trim();
    let (op, rest) = [">=", "<=", ">", "<"]
        .into_iter()
        .find_map(|op| t.strip_prefix(op).map(|r| (op, r.trim())))?;
    let value = if let Some(p) = rest.strip_suffix('%') {
        p.trim().parse().ok()?
    } else {
        parse_duration(rest)?.as_secs_f64() * 1000.0
    };
    Some((op, value))
}

/// Whether `value` satisfies `op bound`.
pub fn holds(op: &str, value: f64, bound: f64) -> bool {
    match op {
        ">=" => value >= bound,
        ">" => value > bound,
        "<=" => value <= bound,
        _ => value < bound,
    }
}

/// The target in one line, for `--dry-run` and messages.
pub fn describe_target(t: &Target) -> String {
    if let Some(f) = &t.fleet {
        return super::fleet_spec::describe(f);
    }
    if let Some(servers) = &t.servers {
        let names: Vec<&str> = servers.keys().map(String::as_str).collect();
        return format!(
            "{} servers ({}) behind one brownout relay",
            names.len(),
            names.join(", ")
        );
    }
    match (&t.command, &t.url, &t.admin) {
        (Some(c), _, _) => format!(
            "`{}` behind brownout's relay (one process per session)",
            c.join(" ")
        ),
        (None, Some(u), Some(a)) => format!("the relay at {u}, faults through its admin API {a}"),
        (None, Some(u), None) => format!("{u} behind brownout's relay"),
        _ => "none".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn durations_shares_and_bounds_read() {
        assert_eq!(parse_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("2 weeks"), None);
        assert_eq!(Share("25%".into()).fraction(), Some(0.25));
        assert_eq!(parse_bound(">= 99%"), Some((">=", 99.0)));
        assert_eq!(parse_bound("< 1s"), Some(("<", 1000.0)));
        assert!(holds("<", 499.0, 500.0) && !holds(">=", 98.0, 99.0));
    }
}
