//! Guardrails: the operator's policy and the pure check that refuses an experiment before
//! anything reaches its target.
//!
//! The built-in policy refuses production labels (`env`/`environment` ∈ {production, prod},
//! `cluster: prod*`, `namespace: prod-*`), experiments without a numeric gate, blast radii off
//! the 10 % → 25 % → 50 % → 100 % ladder (the first stage on the bottom rung, no rung
//! skipped), more than 30 minutes in all, and process faults. `--policy FILE` replaces it.

use super::gates;
use super::load::Loaded;
pub use super::records::Refusal;
use super::spec::{Dur, Share};
use brownout_core::faults::AddedDelay;
use brownout_core::plan::{load_document, PlanErrors};
use brownout_core::select::Globs;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// A guardrail policy (a file the operator owns; every key optional, defaults as below).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Policy {
    /// Labels that mark production: an experiment whose label matches is refused.
    pub production_labels: Vec<LabelRule>,
    /// The allowed blast radii, bottom rung first.
    pub ladder: Vec<Share>,
    /// The longest experiment: baseline plus every stage (default 30m).
    pub max_duration: Dur,
    /// The highest `probability` a fault may have (default 1, no cap).
    #[schemars(range(min = 0, max = 1))]
    pub max_probability: f64,
    /// The most delay one fault of any kind may add to a call (default 10s): each kind
    /// declares what it can add (`latency`, `cold_start`, a `timeout` hold, `reorder`, a
    /// `process` pause; `slow_stream` and `bandwidth` on [`Policy::capped_answer`]); a delay
    /// with no bound of its own (a normal or Pareto latency without `max_ms`) is refused.
    pub max_added_latency: Dur,
    /// The answer `max_added_latency` measures paced and throttled kinds on: `slow_stream`
    /// adds its gap before each of `events` events, `bandwidth` sends `kib` KiB at its rate
    /// (default 10 events, 64 KiB).
    pub capped_answer: AnswerSize,
    /// The longest `timeout` a rollback command may have (default 10m): rollbacks always
    /// run to their end or their timeout, so the timeout bounds how long a stop can take.
    pub max_rollback_timeout: Dur,
    /// Whether `process` faults (killing, pausing servers) are allowed (default false).
    pub allow_process_faults: bool,
    /// Refuse an experiment whose faults change results (`corrupt`, `schema_drift`,
    /// `partial_result`, a stale registry) when no gate sees what the agent does with them
    /// (`silent_rate`, `safe_rate`, `propagated`; `correctness` for drift). Default false:
    /// `experiment check` and `brownout run` warn instead.
    pub require_silent_gate: bool,
    /// Enforce the ladder against the store's history too: a stage may go at most one rung
    /// above the highest rung a stage of this experiment (same title) has passed in a
    /// stored run; with no history, only the bottom rung (default false).
    pub ladder_from_history: bool,
    /// Experiments started through `brownout mcp` that may run at once (default 1).
    pub max_concurrent: u32,
    /// Command lines an MCP client may have brownout start — an experiment's target command
    /// and rollbacks, `describe_target`'s command: each entry's words are globs matched one
    /// per argument (a `*` never spans two arguments); a last word `**` allows any further
    /// arguments (default: `brownout fixture **`). `brownout run` is the operator's own and
    /// is not limited.
    pub mcp_commands: Vec<String>,
    /// URLs an MCP client may have brownout reach — targets, admin APIs: globs (default:
    /// loopback only).
    pub mcp_urls: Vec<String>,
    /// Tools an experiment started through `brownout mcp` may call for real (its load and
    /// its probes) although they may write — annotated destructive, not annotated
    /// read-only, or a write verb in the name: exact names, no globs (default none: such
    /// an experiment calls only read-only tools without a write verb).
    pub load_tools: Vec<String>,
    /// Environment variables an experiment started through `brownout mcp` may name as
    /// `target.admin_token_env` (sent as a bearer token to its admin URL); default none.
    pub mcp_admin_token_envs: Vec<String>,
}

/// The size of an answer, for judging delays that grow with it.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct AnswerSize {
    pub events: u32,
    pub kib: u32,
}

impl Default for AnswerSize {
    fn default() -> AnswerSize {
        AnswerSize {
            events: 10,
            kib: 64,
        }
    }
}

/// A label that marks production: its key and the values (globs, any case) that do.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LabelRule {
    pub key: String,
    pub values: Vec<String>,
}

impl Default for Policy {
    fn default() -> Policy {
        let rule = |key: &str, values: &[&str]| LabelRule {
            key: key.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
        };
        Policy {
            production_labels: vec![
                rule("env", &["production", "prod"]),
                rule("environment", &["production", "prod"]),
                rule("cluster", &["prod*"]),
                rule("namespace", &["prod-*"]),
            ],
            ladder: ["10%", "25%", "50%", "100%"]
                .iter()
                .map(|s| Share(s.to_string()))
                .collect(),
            max_duration: Dur("30m".into()),
            max_probability: 1.0,
            max_added_latency: Dur("10s".into()),
            capped_answer: AnswerSize::default(),
            max_rollback_timeout: Dur("10m".into()),
            allow_process_faults: false,
            require_silent_gate: false,
            ladder_from_history: false,
            max_concurrent: 1,
            mcp_commands: vec!["brownout fixture **".into()],
            mcp_urls: [
                "http://127.0.0.1:*",
                "http://localhost:*",
                "http://[[]::1[]]:*",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            load_tools: Vec::new(),
            mcp_admin_token_envs: Vec::new(),
        }
    }
}

impl Policy {
    /// Load a policy file (the same `FILE:LINE:COL` errors as experiments).
    pub fn from_str_named(text: &str, file: &str) -> Result<Policy, PlanErrors> {
        load_document(text, file)
    }
}

fn refuse(rule: &str, detail: String) -> Result<(), Refusal> {
    Err(Refusal {
        rule: rule.into(),
        detail,
    })
}

/// Check an experiment against a policy: the first rule it breaks, in the order of the
/// policy's keys.
pub fn check(x: &Loaded, p: &Policy) -> Result<(), Refusal> {
    check_labels(&x.spec.labels, p)?;
    if !x.gates.iter().any(gates::is_numeric) {
        return refuse(
            "numeric_gate",
            "the experiment has no numeric gate; add one, e.g. `gates: [\"error_rate < 1% over 10s\"]`".into(),
        );
    }
    let shares: Vec<f64> = x
        .spec
        .method
        .iter()
        .map(|s| s.sessions.fraction().unwrap_or(f64::NAN))
        .collect();
    check_ladder(&shares, p)?;
    if p.require_silent_gate {
        if let Some(why) = gates::silent_blind_spot(&x.plan, &x.gates) {
            return refuse("require_silent_gate", why);
        }
    }
    let total = x.spec.baseline.as_ref().map(Dur::get).unwrap_or_default()
        + x.spec
            .method
            .iter()
            .map(|s| s.duration.get())
            .sum::<Duration>();
    if total > p.max_duration.get() {
        return refuse(
            "max_duration",
            format!(
                "baseline and stages last {}, over the cap of {}",
                human(total),
                p.max_duration.0
            ),
        );
    }
    for (i, r) in x.spec.rollbacks.iter().enumerate() {
        let t = r.timeout.as_ref().map_or(Duration::from_secs(30), Dur::get);
        if t > p.max_rollback_timeout.get() {
            return refuse(
                "max_rollback_timeout",
                format!(
                    "rollbacks[{i}] (`{}`) may run {}, over the cap of {}",
                    r.command.join(" "),
                    brownout_core::human::duration(t),
                    p.max_rollback_timeout.0
                ),
            );
        }
    }
    check_faults(&x.plan_doc, &x.plan, p)?;
    check_delays(&x.plan, p)
}

/// Every fault of the compiled plan against `max_added_latency`, by what its kind declares
/// it can add ([`FaultKind::max_added_delay`](brownout_core::faults::FaultKind)).
pub fn check_delays(plan: &brownout_core::Plan, p: &Policy) -> Result<(), Refusal> {
    let cap = p.max_added_latency.get().as_secs_f64() * 1000.0;
    let answer = &p.capped_answer;
    for f in &plan.faults {
        let declared = f.effect.max_added_delay();
        let name = format!("faults[{}] (`{}`, {})", f.index, f.id, f.effect.kind());
        let Some(most) = declared.on_answer(f64::from(answer.events), f64::from(answer.kib)) else {
            let why = match declared {
                AddedDelay::Unbounded(why) => why,
                _ => "no bound",
            };
            return refuse(
                "max_added_latency",
                format!(
                    "{name} adds a delay with no bound: {why}; bound it (at most {})",
                    p.max_added_latency.0
                ),
            );
        };
        if most > cap {
            let on = match declared {
                AddedDelay::PerEvent(ms) => format!(
                    " ({} between events, on an answer of {} events)",
                    brownout_core::human::ms(ms),
                    answer.events
                ),
                AddedDelay::PerKib(ms) => format!(
                    " ({} per KiB, on an answer of {} KiB)",
                    brownout_core::human::ms(ms),
                    answer.kib
                ),
                _ => String::new(),
            };
            return refuse(
                "max_added_latency",
                format!(
                    "{name} adds up to {}{on}, over the cap of {}",
                    brownout_core::human::ms(most),
                    p.max_added_latency.0
                ),
            );
        }
    }
    Ok(())
}

pub fn check_labels(
    labels: &std::collections::BTreeMap<String, String>,
    p: &Policy,
) -> Result<(), Refusal> {
    for rule in &p.production_labels {
        let Some(v) = labels.get(&rule.key) else {
            continue;
        };
        let patterns: Vec<String> = rule.values.iter().map(|s| s.to_lowercase()).collect();
        let matches = Globs::new(&patterns)
            .map(|g| g.is_match(&v.to_lowercase()))
            .unwrap_or(true);
        if matches {
            return refuse(
                "production_labels",
                format!(
                    "label `{}: {v}` marks production (matches {})",
                    rule.key,
                    rule.values.join(" | ")
                ),
            );
        }
    }
    Ok(())
}

/// The stages' shares climb the ladder one rung at a time from the bottom.
pub fn check_ladder(shares: &[f64], p: &Policy) -> Result<(), Refusal> {
    let ladder: Vec<f64> = p.ladder.iter().filter_map(Share::fraction).collect();
    let rung = |s: f64| ladder.iter().position(|r| brownout_core::approx::eq(*r, s));
    let pct = |s: f64| format!("{}%", (s * 1000.0).round() / 10.0);
    let rungs = ladder
        .iter()
        .map(|r| pct(*r))
        .collect::<Vec<_>>()
        .join(" → ");
    let mut prev: Option<usize> = None;
    for (i, s) in shares.iter().enumerate() {
        let Some(r) = rung(*s) else {
            return refuse(
                "ladder",
                format!(
                    "stage {} reaches {}, not a rung of the ladder {rungs}",
                    i + 1,
                    pct(*s)
                ),
            );
        };
        let ok = match prev {
            None => r == 0,
            Some(q) => r == q || r == q + 1,
        };
        if !ok {
            let detail = match prev {
                None => format!(
                    "the first stage reaches {}; it must start at the bottom rung, {}",
                    pct(*s),
                    pct(ladder[0])
                ),
                Some(q) => format!(
                    "stage {} goes from {} to {}, skipping or going back a rung of {rungs}",
                    i + 1,
                    pct(ladder[q]),
                    pct(*s)
                ),
            };
            return refuse("ladder", detail);
        }
        prev = Some(r);
    }
    Ok(())
}

fn check_faults(doc: &Value, plan: &brownout_core::Plan, p: &Policy) -> Result<(), Refusal> {
    let faults = doc["faults"].as_array().cloned().unwrap_or_default();
    for (i, f) in faults.iter().enumerate() {
        // What a kind does is the kind's to say (FaultKind::signals_process).
        let signals = plan
            .faults
            .iter()
            .any(|c| c.index == i && c.effect.signals_process());
        if signals && !p.allow_process_faults {
            return refuse(
                "allow_process_faults",
                format!("faults[{i}] is a `process` fault; the policy does not allow them"),
            );
        }
        let prob = f["probability"].as_f64().unwrap_or(1.0);
        if prob > p.max_probability {
            return refuse(
                "max_probability",
                format!(
                    "faults[{i}] has probability {prob}, over the cap of {}",
                    p.max_probability
                ),
            );
        }
    }
    Ok(())
}

fn human(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 60.0 {
        format!("{:.1}m", s / 60.0)
    } else {
        format!("{s:.1}s")
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
