//! From a scenario's series to experiments: the load (the target's callable tools, each
//! with example arguments; the series' sessions and client), the stages (step *n* climbs the
//! policy's ladder to rung *n* above what the store's history allows its title), the
//! faults and gates, a rationale written from the experiment, then the experiment loaded as
//! `brownout run` would (valid or its errors), checked against the policy and simulated at
//! its widest stage.

use super::scenario::{LOAD_TOOLS, THINK_MS};
use super::{target_label, Env, Ground, Scenario, Series};
use brownout_experiment::experiment::spec::Share;
use serde_json::{json, Value};

/// Simulated tasks per estimate.
const ESTIMATE_TASKS: u64 = 2000;
/// Each stage's duration and the baseline (s).
const STAGE_S: u32 = 10;
const BASELINE_S: u32 = 5;

/// One designed experiment.
#[derive(Debug, Clone)]
pub struct Designed {
    /// Unique in the design: `<scenario>-<step>` with `-` (`pool-exhaustion-2`).
    pub id: String,
    pub scenario: Scenario,
    pub step: usize,
    pub steps: usize,
    pub title: String,
    pub tool: Option<String>,
    pub kinds: Vec<String>,
    pub rationale: String,
    /// The experiment document.
    pub doc: Value,
    pub valid: bool,
    pub errors: Value,
    pub estimate: Value,
    pub policy_check: Value,
    /// The step before it in the series.
    pub requires: Option<String>,
}

impl Designed {
    /// As `design_experiments` returns it: the experiment as JSON text.
    pub fn json(&self) -> Value {
        json!({
            "id": self.id,
            "scenario": self.scenario.name(),
            "step": self.step,
            "steps": self.steps,
            "title": self.title,
            "tool": self.tool.as_deref().map(|t| crate::target::untrusted::text(t, crate::target::untrusted::NAME_CAP)),
            "fault": self.kinds.first(),
            "faults": self.kinds,
            "rationale": self.rationale,
            "experiment": serde_json::to_string_pretty(&self.doc).unwrap_or_default(),
            "valid": self.valid,
            "errors": self.errors,
            "estimate": self.estimate,
            "policy_check": self.policy_check,
            "requires": self.requires,
        })
    }
}

/// The most seeds tried for a blast radius that matches the stages' shares.
const SEED_TRIES: u64 = 10_000;

/// How many of the load's `n` sessions (keyed as the live load labels them) a share of
/// `share` selects under `seed`.
fn selected(seed: u64, n: u32, share: f64) -> u32 {
    (0..n)
        .filter(|i| {
            brownout_core::select::session_selected(seed, &format!("label:load-{i}"), share)
        })
        .count() as u32
}

/// A plan seed under which every share reaches as many of the `n` sessions as it says
/// (rounded, at least one): with few sessions a stable hash can select none at 10 %, and a
/// stage that reaches no session tests nothing. The first that fits, else 0.
pub fn seed_for(shares: &[f64], n: u32) -> u64 {
    let fits = |seed: u64| {
        shares.iter().all(|s| {
            let want = f64::from(n) * s;
            let c = selected(seed, n, *s);
            c >= (want.floor() as u32).max(1) && c <= (want.ceil() as u32).max(1)
        })
    };
    (1..=SEED_TRIES).find(|s| fits(*s)).unwrap_or(0)
}

/// The rung index the store's history allows `title` (0: the bottom rung).
fn allowed_rung(env: &Env, title: &str, target: &serde_json::Value) -> usize {
    let ladder: Vec<&Share> = env.policy.ladder.iter().collect();
    let passed = brownout_experiment::experiment::history::widest_passed(env.store, title, target)
        .ok()
        .flatten();
    match passed {
        None => 0,
        Some((w, _)) => ladder
            .iter()
            .rposition(|r| {
                r.fraction()
                    .is_some_and(|f| brownout_core::approx::le(f, w))
            })
            .map_or(0, |i| i + 1)
            .min(ladder.len().saturating_sub(1)),
    }
}

fn target_yaml(target: &Value) -> Value {
    match (target.get("command"), target.get("url")) {
        (Some(c), _) => json!({"command": c}),
        (_, Some(u)) => json!({"url": u}),
        _ => json!({}),
    }
}

/// The tools a series' load calls: the tool its faults aim at first (the load must call
/// what the faults act on), then the target's others, at most [`LOAD_TOOLS`].
fn load_of<'a>(g: &Ground<'a>, s: &Series) -> Vec<&'a rmcp::model::Tool> {
    let aimed = s.tool.as_deref();
    let first = g.load.iter().copied().filter(|t| Some(&*t.name) == aimed);
    let rest = g.load.iter().copied().filter(|t| Some(&*t.name) != aimed);
    first.chain(rest).take(LOAD_TOOLS).collect()
}

/// The workload: each of the load's tools in turn, the series' client and pool.
fn workload(g: &Ground, s: &Series) -> Value {
    let tools = load_of(g, s);
    let steps: Vec<Value> = tools
        .iter()
        .map(|t| json!({"calls": [{"tool": t.name, "arguments": super::tools::arguments(t)}]}))
        .collect();
    let mut model = serde_json::Map::new();
    for t in &tools {
        model.insert(
            t.name.to_string(),
            json!({"latency": {"added_ms": g.served_ms(&t.name)}}),
        );
    }
    let mut server = json!({"name": "target", "tools": model});
    if let Some((slots, queue)) = s.pool {
        server["concurrency"] = slots.into();
        server["queue_timeout_ms"] = queue.into();
    }
    let mut client = json!({"timeout_ms": g.timeout_ms});
    if let (Some(c), Some(extra)) = (client.as_object_mut(), s.client.as_object()) {
        c.extend(extra.clone());
    }
    json!({
        "name": "designed agent",
        // One agent per session: a closed loop binds each agent to one session, so every
        // session the stages select carries calls.
        "arrival": {"mode": "closed", "concurrency": s.sessions},
        "think_ms": THINK_MS,
        "steps": steps,
        "servers": [server],
        "client": client,
    })
}

/// The experiments of a series, at most `room`; `progress` hears each one's id.
pub fn series(
    env: &Env,
    g: &Ground,
    scenario: Scenario,
    s: &Series,
    room: usize,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<Designed>, String> {
    let title = format!("{} on {}", scenario.title(), target_label(g.target));
    let ladder: Vec<String> = env.policy.ladder.iter().map(|r| r.0.clone()).collect();
    let base = allowed_rung(env, &title, g.target);
    let n = s.steps.len();
    let workload = workload(g, s);
    // Which tools the load calls, and why each may be called for real.
    let loaded = load_of(g, s);
    let calls: Vec<String> = loaded
        .iter()
        .map(|t| match crate::target::writes::may_write(t) {
            None => crate::target::untrusted::quote(&t.name, 60),
            Some(w) => format!(
                "{} (it may write ({w}), but the operator's policy names it in `load_tools`)",
                crate::target::untrusted::quote(&t.name, 60)
            ),
        })
        .collect();
    let all_read_only = loaded
        .iter()
        .all(|t| crate::target::writes::may_write(t).is_none());
    // One seed for the series: every rung its widest step climbs reaches its share.
    let widest: Vec<f64> = ladder
        .iter()
        .take((base + n.saturating_sub(1)).min(ladder.len().saturating_sub(1)) + 1)
        .filter_map(|r| Share(r.clone()).fraction())
        .collect();
    let seed = seed_for(&widest, s.sessions);
    let mut out: Vec<Designed> = Vec::new();
    for (i, step) in s.steps.iter().enumerate().take(room) {
        let id = format!("{}-{}", scenario.name().replace('_', "-"), i + 1);
        let top = (base + i).min(ladder.len().saturating_sub(1));
        let rungs: Vec<&String> = ladder.iter().take(top + 1).collect();
        let method: Vec<Value> = rungs
            .iter()
            .enumerate()
            .map(|(k, r)| json!({"stage": format!("rung-{}", k + 1), "duration": format!("{STAGE_S}s"), "sessions": r}))
            .collect();
        let doc = json!({
            "title": title,
            "labels": {"designed-by": env.designed_by, "scenario": scenario.name(), "step": format!("{} of {n}", i + 1)},
            "target": target_yaml(g.target),
            "load": {"workload": workload, "sessions": s.sessions},
            "baseline": format!("{BASELINE_S}s"),
            "method": method,
            "faults": step.faults,
            "gates": step.gates,
            "recovery": {"within": format!("{}s", s.recovery_s)},
            "seed": seed,
        });
        let reach: Vec<String> = rungs
            .iter()
            .filter_map(|r| Share((*r).clone()).fraction().map(|f| (r, f)))
            .map(|(r, f)| format!("{r}: {} of {}", selected(seed, s.sessions, f), s.sessions))
            .collect();
        let rationale = format!(
            "Scenario {} (step {} of {n}): {}. Load: {} sessions, an agent each in a closed loop calling {}{}. Baseline {BASELINE_S} s without faults, then in the stages' share of sessions ({}, {STAGE_S} s each; seed {seed}: {}): {}. {}: `{}`; recovery within {} s. Question: {}",
            scenario.name(),
            i + 1,
            scenario.summary(),
            s.sessions,
            calls.join(", "),
            if all_read_only {
                " (annotated read-only, no write verb in their names)"
            } else {
                ""
            },
            rungs.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(" → "),
            reach.join(", "),
            step.strength,
            if step.gates.len() == 1 { "Gate" } else { "Gates" },
            step.gates.join("` and `"),
            s.recovery_s,
            step.question,
        );
        let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
        let (valid, errors, estimate, policy_check) =
            match brownout_experiment::experiment::load::load_text(
                &text,
                "designed.json",
                env.workdir,
            ) {
                Ok(x) => (
                    true,
                    Value::Null,
                    estimate(&x, step_measured(g, &loaded)),
                    crate::verdicts::verdict_json((env.verdict)(&x)),
                ),
                Err(e) => (
                    false,
                    json!(crate::verdicts::errors_json(&e)),
                    Value::Null,
                    Value::Null,
                ),
            };
        let kinds = step
            .faults
            .iter()
            .filter_map(|f| f["kind"].as_str().map(String::from))
            .collect();
        progress(&id);
        out.push(Designed {
            requires: out.last().map(|d| d.id.clone()),
            id,
            scenario,
            step: i + 1,
            steps: n,
            title: title.clone(),
            tool: s.tool.clone(),
            kinds,
            rationale,
            doc,
            valid,
            errors,
            estimate,
            policy_check,
        });
    }
    Ok(out)
}

fn step_measured(g: &Ground, loaded: &[&rmcp::model::Tool]) -> bool {
    loaded.iter().any(|t| g.p50_ms.contains_key(&*t.name))
}

/// The simulator's estimate at the widest stage: the gates' verdict, error rate, p95, ρ.
pub fn estimate(x: &brownout_experiment::experiment::Loaded, measured: bool) -> Value {
    let share = x
        .spec
        .method
        .last()
        .and_then(|s| s.sessions.fraction())
        .unwrap_or(1.0);
    let Ok((_, plan)) = x.stage_plan(share) else {
        return Value::Null;
    };
    let opts = brownout_sim::SimOptions {
        tasks: Some(ESTIMATE_TASKS),
        seed: Some(x.plan.seed),
        keep_series: false,
        gates: x.gates.clone(),
        stop_at_breach: false,
        sessions: Some(u64::from(x.spec.load.sessions.unwrap_or(16))),
        budget: Default::default(),
    };
    let r = brownout_sim::simulate(&x.workload, plan, &opts);
    let breached = r.gates.iter().any(|g| g.breached);
    let gates: Vec<Value> = r
        .gates
        .iter()
        .map(
            |g| json!({"gate": g.gate, "breached": g.breached, "limit": g.limit, "worst": g.worst}),
        )
        .collect();
    json!({
        "at_share": share,
        "verdict": if breached { "breaches a gate" } else { "every gate holds" },
        "gates": gates,
        "visible_error_rate": 1.0 - r.availability,
        "tool_call_success_rate": r.tcsr,
        "p95_ms": r.latency_ms.p95,
        "robustness": r.robustness,
        "silent_failures": r.silent_failures,
        "note": if measured {
            "simulated with the tools' latency measured by past runs' probes; calibrate (brownout calibrate) for a closer estimate"
        } else {
            "simulated with an assumed 5 ms per call (no past run measured these tools): calibrate (brownout calibrate) for a closer estimate"
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_makes_every_rung_reach_its_share_of_sessions() {
        let shares = [0.1, 0.25, 0.5];
        for n in [8, 20] {
            let seed = seed_for(&shares, n);
            assert!(seed > 0, "a seed fits {n} sessions");
            let counts: Vec<u32> = shares.iter().map(|s| selected(seed, n, *s)).collect();
            let want: Vec<u32> = shares
                .iter()
                .map(|s| ((f64::from(n) * s).round() as u32).max(1))
                .collect();
            for (c, w) in counts.iter().zip(&want) {
                assert!(
                    c.abs_diff(*w) <= 1 && *c >= 1,
                    "{n}: {counts:?} vs {want:?}"
                );
            }
        }
    }
}
