//! Workloads: what the simulated agents do, what the servers are like, how clients behave.
//!
//! A workload file is YAML, JSON or TOML, checked like a plan: every unknown key or bad value
//! is reported with `file:line:column`. See `docs/simulator.md` for every key.

use crate::chain::{refs, Chain};
use brownout_core::faults::latency::Latency;
use brownout_core::plan::source::{parse, Format};
use brownout_core::plan::{display_path, load_document, PlanError, PlanErrors};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// A name for reports.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// Seed of the simulation's own randomness (service times, base errors, jitter, arrivals).
    #[serde(default)]
    pub seed: Option<u64>,
    /// How many tasks to run (default 1000; `--tasks` overrides).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub tasks: Option<u64>,
    /// How tasks arrive: open loop at a rate, or closed loop at a fixed concurrency.
    #[serde(default)]
    pub arrival: Option<Arrival>,
    /// Pause between a task's steps, in milliseconds.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub think_ms: Option<f64>,
    /// A task not finished within this many milliseconds has failed.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub task_deadline_ms: Option<f64>,
    /// The steps of every task, in order; each step's calls run in parallel.
    #[schemars(length(min = 1))]
    pub steps: Vec<Step>,
    /// The servers and their tools: models for the simulator, required by `brownout sim`
    /// and ignored by live load (`brownout load`), which calls real servers.
    #[serde(default)]
    pub servers: Vec<Server>,
    /// The agents' MCP client: timeouts and resilience patterns.
    #[serde(default)]
    pub client: Client,
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(tag = "mode", rename_all = "snake_case", deny_unknown_fields)]
pub enum Arrival {
    /// New tasks arrive at `rate_per_s` as a Poisson process (exponential gaps drawn from the
    /// workload seed), whatever the system does.
    Open {
        #[schemars(range(min = 0.000001))]
        rate_per_s: f64,
    },
    /// `concurrency` agents each run one task after another.
    Closed {
        #[schemars(range(min = 1))]
        concurrency: u32,
    },
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Tool calls made in parallel.
    #[schemars(length(min = 1))]
    pub calls: Vec<CallSpec>,
    /// The step fails its calls still running after this many milliseconds.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub deadline_ms: Option<f64>,
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallSpec {
    /// The tool to call; some server must provide it.
    pub tool: String,
    /// A failed critical call fails the task; a non-critical one can be tolerated when the
    /// client degrades gracefully (default true).
    #[serde(default)]
    pub critical: Option<bool>,
    /// Make this call N times in parallel (default 1).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub repeat: Option<u32>,
    /// The call's `arguments`, sent by live load (`brownout load`). A value
    /// `{from: TOOL, path: POINTER}` is taken from the result of the latest call of TOOL in
    /// an earlier step (see `docs/load.md`); the simulator reads only those references.
    #[serde(default)]
    pub arguments: Option<serde_json::Map<String, serde_json::Value>>,
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Server {
    pub name: String,
    /// Identical replicas, served round robin (default 1).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub replicas: Option<u32>,
    /// Calls one replica works on at once: its connection pool (default: unlimited).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub concurrency: Option<u32>,
    /// A call that waited this long for a pool slot is failed by the server (default: waits forever).
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub queue_timeout_ms: Option<f64>,
    /// The tools this server provides.
    pub tools: BTreeMap<String, ToolModel>,
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolModel {
    /// Service time: the same keys as the `latency` fault (fixed, uniform, normal, pareto).
    pub latency: Latency,
    /// The tool's own failure rate, before any fault (default 0).
    #[serde(default)]
    #[schemars(range(min = 0, max = 1))]
    pub error_rate: Option<f64>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Client {
    /// Per-attempt timeout in milliseconds (default 30000).
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub timeout_ms: Option<f64>,
    #[serde(default)]
    pub retries: Option<Retries>,
    #[serde(default)]
    pub breaker: Option<Breaker>,
    #[serde(default)]
    pub rate_limiter: Option<RateLimiter>,
    /// Tolerate failures of non-critical calls (graceful degradation).
    #[serde(default)]
    pub degrade: bool,
    /// Do not start a call (or a retry) that cannot finish in the time its step or task has left.
    #[serde(default)]
    pub deadline_aware: bool,
    /// What the agent does with results later steps take values from (`policy: trust |
    /// validate | verify`, default `trust`).
    #[serde(default)]
    pub agent: crate::chain::Agent,
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Retries {
    /// Attempts per call, the first included (default 3).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub max_attempts: Option<u32>,
    /// Retry until success or the deadline: the retry-storm setting. A call still stops
    /// after 1,000 attempts, so a run without deadlines ends.
    #[serde(default)]
    pub unbounded: bool,
    /// First backoff in milliseconds (default 0: retry at once).
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub backoff_ms: Option<f64>,
    /// Backoff growth per retry (default 2).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub multiplier: Option<f64>,
    /// Longest backoff in milliseconds (default 10000).
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub max_backoff_ms: Option<f64>,
    /// Jitter as a fraction of the backoff: the wait is drawn from [b·(1−j), b] (default 0).
    #[serde(default)]
    #[schemars(range(min = 0, max = 1))]
    pub jitter: Option<f64>,
    /// A retry budget: retries may be at most this fraction of calls made so far.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub budget_ratio: Option<f64>,
    /// The least time between a failure and its retry, in milliseconds, however short the
    /// backoff (default 1): a client always spends some time before it retries, and a
    /// zero gap would let a rejected retry loop forever at one instant of virtual time.
    #[serde(default)]
    #[schemars(range(min = 0.001))]
    pub min_gap_ms: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BreakerMode {
    ErrorRate,
    Eta,
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Breaker {
    /// `error_rate` opens when the failed fraction of the window exceeds `threshold`;
    /// `eta` opens when the window's effective tool availability falls below `threshold`.
    pub mode: BreakerMode,
    #[schemars(range(min = 0, max = 1))]
    pub threshold: f64,
    /// Attempts per tool in the sliding window (default 20).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub window: Option<u32>,
    /// Attempts needed in the window before the breaker may open (default 10).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub min_calls: Option<u32>,
    /// How long it stays open before half-opening, in milliseconds (default 5000).
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub open_ms: Option<f64>,
    /// Probe calls let through while half-open; all must succeed to close (default 1).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub half_open_probes: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LimiterMode {
    #[default]
    Reject,
    Queue,
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RateLimiter {
    /// Attempts per second the client lets out.
    #[schemars(range(min = 0.000001))]
    pub rate_per_s: f64,
    /// Bucket size (default: one second's worth).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub burst: Option<f64>,
    /// Over the limit: `reject` (the attempt fails at once) or `queue` (it waits for a token).
    #[serde(default)]
    pub mode: LimiterMode,
}

impl Workload {
    /// Load a workload file's text for the simulator; `file` names it in errors and picks
    /// the format. The simulator needs `servers`: a workload without them is an error here.
    pub fn from_str_named(text: &str, file: &str) -> Result<Workload, PlanErrors> {
        let w: Workload = load_document(text, file)?;
        w.check(text, file, true)?;
        Ok(w)
    }

    /// Load a workload file's text for live load (`brownout load`): `servers` may be left
    /// out (live load calls real servers); when present, they are checked as for the
    /// simulator, so the same file also runs in `brownout sim`.
    pub fn from_str_live(text: &str, file: &str) -> Result<Workload, PlanErrors> {
        let w: Workload = load_document(text, file)?;
        w.check(text, file, false)?;
        Ok(w)
    }

    /// Checks the schema cannot express: every called tool exists, latencies are complete.
    fn check(&self, text: &str, file: &str, simulating: bool) -> Result<(), PlanErrors> {
        let mut errors = Vec::new();
        let root = parse(text, Format::from_path(file)).ok();
        let err = |pointer: String, message: String| PlanError {
            pos: root
                .as_ref()
                .map(|r| r.locate(&pointer, false))
                .unwrap_or_default(),
            key: display_path(&pointer),
            message,
        };
        if simulating && self.servers.is_empty() {
            errors.push(err(
                "/servers".into(),
                "missing: the simulator needs a model of each server (`servers: [{name, tools: {TOOL: {latency: {added_ms: 20}}}}]`); live load (`brownout load`) runs without them".into(),
            ));
        }
        for (i, step) in self.steps.iter().enumerate() {
            for (j, c) in step.calls.iter().enumerate() {
                if !self.servers.is_empty()
                    && !self.servers.iter().any(|s| s.tools.contains_key(&c.tool))
                {
                    errors.push(err(
                        format!("/steps/{i}/calls/{j}/tool"),
                        format!("no server provides tool `{}`", c.tool),
                    ));
                }
            }
        }
        self.check_refs(&mut |p, m| errors.push(err(p, m)));
        for (i, s) in self.servers.iter().enumerate() {
            for (name, t) in &s.tools {
                for (k, m) in t.latency.check() {
                    errors.push(err(format!("/servers/{i}/tools/{name}/latency/{k}"), m));
                }
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(PlanErrors {
                file: file.to_string(),
                errors,
            })
        }
    }

    /// Every `{from, path}` argument names a tool an earlier step calls, with a JSON pointer.
    fn check_refs(&self, report: &mut dyn FnMut(String, String)) {
        let mut earlier: Vec<&str> = Vec::new();
        for (i, step) in self.steps.iter().enumerate() {
            for (j, c) in step.calls.iter().enumerate() {
                for (arg, v) in c.arguments.iter().flatten() {
                    if !crate::chain::is_ref(v) {
                        continue;
                    }
                    let at = format!("/steps/{i}/calls/{j}/arguments/{}", escape(arg));
                    check_ref(v, &at, &earlier, &self.steps[i..], report);
                }
            }
            earlier.extend(step.calls.iter().map(|c| c.tool.as_str()));
        }
    }

    /// Logical calls per task.
    pub fn calls_per_task(&self) -> u64 {
        self.steps
            .iter()
            .flat_map(|s| &s.calls)
            .map(|c| u64::from(c.repeat.unwrap_or(1)))
            .sum()
    }
}

/// A key as a JSON pointer segment.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// One `{from, path}` argument at pointer `at`; `earlier` are the tools earlier steps call,
/// `rest` this step and the later ones (to say so when `from` names a tool called too late).
fn check_ref(
    v: &serde_json::Value,
    at: &str,
    earlier: &[&str],
    rest: &[Step],
    report: &mut dyn FnMut(String, String),
) {
    let Some(o) = v.as_object() else { return };
    for k in o.keys().filter(|k| !matches!(k.as_str(), "from" | "path")) {
        let hint = brownout_core::plan::suggest(k, ["from", "path"])
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        report(
            format!("{at}/{}", escape(k)),
            format!("unknown key `{k}` in a chained argument: it takes `from: TOOL` and `path: /POINTER`{hint}"),
        );
    }
    match o.get("from").map(|f| f.as_str()) {
        Some(Some(tool)) if earlier.contains(&tool) => {}
        Some(Some(tool)) => {
            let later = rest.iter().flat_map(|s| &s.calls).any(|c| c.tool == tool);
            let hint = if later {
                " (it is called in this step or a later one: a value can only come from a step that ran before)".to_string()
            } else {
                match brownout_core::plan::suggest(tool, earlier.iter().copied()) {
                    Some(s) => format!(" (did you mean `{s}`?)"),
                    None if earlier.is_empty() => {
                        " (the first step cannot take values: no step runs before it)".to_string()
                    }
                    None => format!(" (earlier steps call: {})", earlier.join(", ")),
                }
            };
            report(
                format!("{at}/from"),
                format!("`from: {tool}` names no tool called in an earlier step{hint}"),
            );
        }
        _ => report(
            format!("{at}/from"),
            "`from` takes the name of a tool an earlier step calls".into(),
        ),
    }
    match o.get("path") {
        Some(serde_json::Value::String(p)) => {
            if let Some(m) = crate::chain::pointer_error(p) {
                report(format!("{at}/path"), m);
            }
        }
        Some(_) => report(
            format!("{at}/path"),
            "`path` takes a JSON pointer into the result, e.g. `/service`".into(),
        ),
        None => report(
            at.to_string(),
            "missing `path`: a chained argument is `{from: TOOL, path: /POINTER}` (`\"\"` for the whole result)".into(),
        ),
    }
}

/// Who consumes what in a workload's steps ([`Chain`] is the simulator's and live load's
/// shared view of chained arguments).
impl Chain {
    /// Work out who consumes what. A reference reads the latest call of its tool in an
    /// earlier step (the last one a step lists, when it calls the tool more than once).
    pub fn of(steps: &[Step]) -> Chain {
        let mut consumed: Vec<Vec<Vec<String>>> = steps
            .iter()
            .map(|s| {
                s.calls
                    .iter()
                    .flat_map(|c| std::iter::repeat_n(Vec::new(), c.repeat.unwrap_or(1) as usize))
                    .collect()
            })
            .collect();
        let mut takes = Vec::with_capacity(steps.len());
        for (k, step) in steps.iter().enumerate() {
            let mut tools: Vec<String> = Vec::new();
            for r in step.calls.iter().flat_map(|c| refs(c.arguments.as_ref())) {
                if let Some((i, j)) = source(steps, k, &r.tool) {
                    let paths = &mut consumed[i][j];
                    if !paths.contains(&r.path) {
                        paths.push(r.path.clone());
                    }
                }
                if !tools.contains(&r.tool) {
                    tools.push(r.tool);
                }
            }
            takes.push(tools);
        }
        Chain { consumed, takes }
    }
}

/// The call (step, expanded index) whose result a reference to `tool` in step `k` reads.
fn source(steps: &[Step], k: usize, tool: &str) -> Option<(usize, usize)> {
    (0..k).rev().find_map(|i| {
        let mut last = None;
        let mut j = 0;
        for c in &steps[i].calls {
            for _ in 0..c.repeat.unwrap_or(1) {
                if c.tool == tool {
                    last = Some((i, j));
                }
                j += 1;
            }
        }
        last
    })
}
