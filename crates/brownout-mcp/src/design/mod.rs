//! Experiment design that understands the goal (docs/design.md): a goal in words is mapped
//! to **scenarios** by a fixed vocabulary ([`vocabulary`]), or named directly; each
//! scenario is a documented template ([`scenario`], one file each) that, grounded in the
//! target's tools ([`tools`]) and the store's history of it, yields an escalating series of
//! experiments — staged blast radius and rising strength — with gates that see what its
//! faults do. Every experiment is validated, simulated and checked against the policy
//! ([`build`]), and a GameDay file strings them together ([`gameday`]). Both
//! `brownout design` ([`cli`]) and the MCP tool `design_experiments` use this module.
//!
//! The load of a designed experiment never calls a tool that may write (the operator's
//! policy's `load_tools` excepted, as everywhere): faults aim at the tools the load calls.

pub mod build;
pub mod cli;
pub mod gameday;
pub mod scenario;
pub mod tools;
pub mod vocabulary;
pub mod write;

pub use scenario::Scenario;

use brownout_experiment::experiment::policy::{Policy, Refusal};
use brownout_experiment::experiment::Loaded;
use rmcp::model::Tool;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// Where a design is made: the policy it must pass, the store it reads, the directory
/// relative files are read from, who designs (a label), and the policy's verdict on an
/// experiment (the MCP server adds its own rules to the policy's).
pub struct Env<'a> {
    pub policy: &'a Policy,
    pub store: Option<&'a Path>,
    pub workdir: &'a Path,
    pub designed_by: &'a str,
    pub verdict: &'a (dyn Fn(&Loaded) -> Result<(), Refusal> + Sync),
}

/// What is asked: a goal in words, scenarios named directly, at most `max` experiments.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub goal: String,
    pub scenarios: Vec<Scenario>,
    pub max: usize,
}

/// The most experiments one design returns.
pub const MAX_EXPERIMENTS: usize = 40;
/// The client timeout assumed when history has none (ms).
pub const DEFAULT_TIMEOUT_MS: u64 = 5000;
/// The scenarios proposed when the goal names none: the seed's escalating series (one
/// dependency slowed, a rate limit, a pool squeeze, a kill).
pub const DEFAULT_SERIES: &[Scenario] = &[
    Scenario::SlowDependency,
    Scenario::RateLimit,
    Scenario::PoolExhaustion,
    Scenario::ProcessKill,
];

/// What a scenario template is grounded in: the target, the tools the load may call (best
/// first), the goal, the client timeout, the policy's caps and each tool's measured latency.
pub struct Ground<'a> {
    pub target: &'a Value,
    pub load: Vec<&'a Tool>,
    pub goal: &'a str,
    pub timeout_ms: u64,
    pub policy: &'a Policy,
    pub p50_ms: &'a BTreeMap<String, f64>,
}

impl Ground<'_> {
    /// A probability within the policy's cap.
    pub fn p(&self, x: f64) -> f64 {
        x.min(self.policy.max_probability)
    }

    /// An added latency and its jitter (ms) toward `share` of the client timeout, within the
    /// policy's cap on added latency (jitter included).
    pub fn latency(&self, share: f64) -> (u64, u64) {
        let cap_ms = self.policy.max_added_latency.get().as_millis() as u64;
        let jitter = (self.timeout_ms / 10).min(cap_ms / 10);
        let want = (self.timeout_ms as f64 * share) as u64;
        (want.min(cap_ms.saturating_sub(jitter)).max(1), jitter)
    }

    /// A tool's latency as past runs measured it (ms), else 5.
    pub fn served_ms(&self, tool: &str) -> f64 {
        self.p50_ms.get(tool).copied().unwrap_or(5.0)
    }

    /// Whether the target is a command brownout starts (a stdio server it can kill).
    pub fn is_command(&self) -> bool {
        self.target.get("command").is_some()
    }
}

/// One rung of a scenario's series: its faults, gates and what it asks.
#[derive(Debug, Clone)]
pub struct Step {
    /// The strength in words (`600 ms on every call of `search``).
    pub strength: String,
    pub faults: Vec<Value>,
    pub gates: Vec<String>,
    pub question: String,
}

/// What a scenario template yields for a target.
#[derive(Debug, Clone)]
pub struct Series {
    /// The tool the faults aim at, where one.
    pub tool: Option<String>,
    /// The template's parameters as chosen (documented in docs/design.md).
    pub parameters: Value,
    /// Sessions the load holds.
    pub sessions: u32,
    /// The workload's client (timeout, retries, limiter), beyond `timeout_ms`.
    pub client: Value,
    /// The simulator's model of the server's pool: (slots, queue timeout ms).
    pub pool: Option<(u32, u64)>,
    pub steps: Vec<Step>,
    /// Recovery budget (s).
    pub recovery_s: u32,
}

/// A design for `tools` of `target`: the scenarios asked for, their series, the GameDay.
pub fn design(
    env: &Env,
    req: &Request,
    target: &Value,
    tools: &[Tool],
    progress: &(dyn Fn(f64, Option<f64>, String) + Sync),
) -> Result<Value, String> {
    design_with(env, req, target, tools, progress).map(|(v, _)| v)
}

/// [`design`], with the designed experiments themselves (for writing them out).
pub fn design_with(
    env: &Env,
    req: &Request,
    target: &Value,
    tools: &[Tool],
    progress: &(dyn Fn(f64, Option<f64>, String) + Sync),
) -> Result<(Value, Vec<build::Designed>), String> {
    let history = crate::target::history::of(env.store, target);
    let (timeout_ms, timeout_from) = match &history.timeout_ms {
        Some((ms, run)) => (*ms, format!("the client timeout run {run} set")),
        None => (
            DEFAULT_TIMEOUT_MS,
            "assumed (no past run of this target set one)".to_string(),
        ),
    };
    let matched = vocabulary::matches(&req.goal);
    let (chosen, why): (Vec<Scenario>, &str) = if !req.scenarios.is_empty() {
        (req.scenarios.clone(), "named in `scenarios`")
    } else if !matched.is_empty() {
        (
            matched.iter().map(|m| m.scenario).collect(),
            "matched by the goal's words (`matched`)",
        )
    } else {
        (
            DEFAULT_SERIES.to_vec(),
            "no scenario named and no word of the goal in the vocabulary: the default escalating series (docs/design.md#vocabulary)",
        )
    };
    let mut notes = vec![
        format!(
            "scenarios {why}: {}",
            chosen.iter().map(|s| s.name()).collect::<Vec<_>>().join(", ")
        ),
        format!(
            "history: {} past run(s) of this target in the store; {} tool(s) with measured latency",
            history.runs.len(),
            history.p50_ms.len()
        ),
        format!("client timeout {timeout_ms} ms, {timeout_from}"),
        "each scenario's steps share one title, so the ladder climbs with them: a step is allowed once the one before it passed (`requires`)".to_string(),
    ];
    let ground = Ground {
        target,
        load: tools::load_tools(tools, env.policy, &req.goal),
        goal: &req.goal,
        timeout_ms,
        policy: env.policy,
        p50_ms: &history.p50_ms,
    };
    let not_designed = not_designed(tools, env.policy);
    if !not_designed.is_empty() {
        notes.push(format!(
            "{} tool(s) that may write are never called by a designed load (see `not_designed`)",
            not_designed.len()
        ));
    }
    let max = req.max.clamp(1, MAX_EXPERIMENTS);
    let total: usize = chosen.len() * 3;
    let mut scenarios = Vec::new();
    let mut experiments: Vec<build::Designed> = Vec::new();
    for s in &chosen {
        let series = match s.series(&ground) {
            Ok(x) => x,
            Err(why) => {
                scenarios.push(json!({"scenario": s.name(), "summary": s.summary(), "skipped": why, "steps": []}));
                continue;
            }
        };
        let room = max.saturating_sub(experiments.len());
        if room == 0 {
            notes.push(format!(
                "stopped at {max} experiment(s) (`max`): {} and later scenarios left out",
                s.name()
            ));
            break;
        }
        let made = build::series(env, &ground, *s, &series, room, &mut |d| {
            progress(
                (experiments.len() + 1) as f64,
                Some(total.min(max) as f64),
                format!("designed and simulated {}", d),
            )
        })?;
        if made.len() < series.steps.len() {
            notes.push(format!(
                "{}: {} of its {} steps designed (`max`: {max})",
                s.name(),
                made.len(),
                series.steps.len()
            ));
        }
        scenarios.push(json!({
            "scenario": s.name(),
            "summary": s.summary(),
            "tool": series.tool.as_deref().map(|t| crate::target::untrusted::text(t, crate::target::untrusted::NAME_CAP)),
            "parameters": untrusted_tool(&series.parameters),
            "steps": made.iter().map(|d| d.id.clone()).collect::<Vec<_>>(),
        }));
        experiments.extend(made);
    }
    let gameday_text = gameday::render(&gameday::inline(&req.goal, target, &experiments))?;
    let out = json!({
        "goal": req.goal,
        "matched": matched.iter().map(|m| json!({"scenario": m.scenario.name(), "words": m.words})).collect::<Vec<_>>(),
        "scenarios": scenarios,
        "experiments": experiments.iter().map(build::Designed::json).collect::<Vec<_>>(),
        "gameday": gameday_text,
        "not_designed": not_designed,
        "notes": notes,
        "designed": experiments.len(),
    });
    Ok((out, experiments))
}

/// A template's parameters with the tool's name (the target's text) escaped and cut.
fn untrusted_tool(p: &Value) -> Value {
    let mut p = p.clone();
    if let Some(t) = p.get("tool").and_then(Value::as_str).map(String::from) {
        p["tool"] = crate::target::untrusted::text(&t, crate::target::untrusted::NAME_CAP).into();
    }
    p
}

/// The tools no designed load calls, and why.
fn not_designed(tools: &[Tool], policy: &Policy) -> Vec<Value> {
    tools
        .iter()
        .filter(|t| !crate::target::writes::callable(t, policy))
        .map(|t| {
            json!({
                "tool": crate::target::untrusted::text(&t.name, crate::target::untrusted::NAME_CAP),
                "why": format!(
                    "it may write ({}): a designed load never sends it a real call; name it in the policy's `load_tools` if calling it is safe",
                    crate::target::writes::may_write(t).unwrap_or_default()
                ),
            })
        })
        .collect()
}

/// A target's label for titles: its command line or URL.
pub fn target_label(target: &Value) -> String {
    match (target["command"].as_array(), target["url"].as_str()) {
        (Some(c), _) => c
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" "),
        (_, Some(u)) => u.to_string(),
        _ => "target".into(),
    }
}
