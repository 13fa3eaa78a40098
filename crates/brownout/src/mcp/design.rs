//! `design_experiments`: English and evidence in, valid experiment files out. From the
//! target's tools (described live), its history in the store and an optional goal in words,
//! one experiment per tool the load may call for real, with the fault that tool's shape
//! calls for. A tool that may write (writes.rs: destructive, not annotated read-only, or a
//! write verb in its name) gets no experiment — its load would send it real calls — and is
//! listed in `not_designed` with the reason, unless the operator's policy names it in
//! `load_tools`; then:
//!
//! - a write tool the policy lets the load call: `error` with `phase: request`;
//! - a tool that advertises an `outputSchema`: `schema_drift` (retype a field it declares);
//! - a list-like tool (list/search/find/query, or an array in its output): `partial_result`;
//! - any other: `latency` toward the client's timeout (0.6 of it, jitter 0.2) — the longest
//!   timeout past runs of this target set (history.rs), else 5 s.
//!
//! Each has a numeric gate, a staged blast radius (the policy's ladder, as far as the
//! store's history allows this title: the bottom rung for a new one), an inline workload
//! whose arguments come from the tool's input schema, and the simulator's estimate of its
//! outcome at its widest stage. Nothing is run and nothing is written.
//!
//! Tool names are data: a fault names its tool as an escaped glob that matches it alone
//! (a tool named `*` is not every tool), and brownout's own sentences (titles, rationales,
//! notes, progress) quote them escaped and cut (untrusted.rs). Each rationale is written
//! from the experiment it explains: what the load calls, what the fault does to which
//! share of calls and sessions, what reaches the target, and the gate.

use super::read::Out;
use super::untrusted::quote;
use super::writes::{callable, may_write, words};
use super::Ctx;
use crate::experiment::spec::Share;
use brownout_core::select::escape;
use serde_json::{json, Map, Value};

/// The gate a design adds to a fault that changes results.
const SILENT_GATE: &str = "silent_rate < 1% over 10s";

/// The client timeout assumed when history has none (ms).
const DEFAULT_TIMEOUT_MS: u64 = 5000;
/// Simulated tasks per estimate.
const ESTIMATE_TASKS: u64 = 2000;

pub async fn design(ctx: &Ctx, args: &Value, progress: &super::progress::Progress) -> Out {
    progress.report(0.0, None, "describing the target");
    let d = super::describe::describe_target(ctx, args).await?;
    let ctx = ctx.clone();
    let args = args.clone();
    let progress = progress.clone();
    tokio::task::spawn_blocking(move || propose(&ctx, &args, &d.json, &d.tools, &progress))
        .await
        .map_err(|e| e.to_string())?
}

/// The shape of a tool, as far as its name, annotations and schemas tell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    Write,
    Drift,
    List,
    Slow,
}

const LIST_WORDS: &[&str] = &["list", "search", "find", "query", "browse", "lookup"];
/// Tools that need the client to do something (sampling, elicitation): not load material.
const INTERACTIVE: &[&str] = &["sampl", "elicit", "llm", "prompt", "roots"];

pub fn shape(t: &rmcp::model::Tool) -> Shape {
    let w = words(&t.name);
    if may_write(t).is_some() {
        return Shape::Write;
    }
    if t.output_schema.is_some() {
        return Shape::Drift;
    }
    if w.iter().any(|x| LIST_WORDS.contains(&x.as_str())) {
        return Shape::List;
    }
    Shape::Slow
}

/// Example arguments that satisfy an input schema's required properties.
pub fn example(schema: &Value, depth: u32) -> Value {
    if depth > 4 {
        return Value::Null;
    }
    if let Some(e) = schema["enum"].as_array().and_then(|e| e.first()) {
        return e.clone();
    }
    if let Some(d) = schema.get("default") {
        return d.clone();
    }
    let ty = match &schema["type"] {
        Value::String(s) => s.as_str(),
        Value::Array(a) => a
            .iter()
            .find_map(|t| t.as_str().filter(|t| *t != "null"))
            .unwrap_or("string"),
        _ if schema["properties"].is_object() => "object",
        _ => "string",
    };
    match ty {
        "object" => {
            let mut m = Map::new();
            let required: Vec<&str> = schema["required"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if let Some(props) = schema["properties"].as_object() {
                for (k, v) in props.iter().filter(|(k, _)| required.contains(&k.as_str())) {
                    m.insert(k.clone(), example(v, depth + 1));
                }
            }
            Value::Object(m)
        }
        "integer" => json!(schema["minimum"].as_i64().unwrap_or(1).max(1)),
        "number" => json!(schema["minimum"].as_f64().unwrap_or(1.0).max(1.0)),
        "boolean" => json!(false),
        "array" => json!([]),
        _ => json!(if schema["minLength"].as_u64().unwrap_or(0) > 8 {
            "brownout-probe-value"
        } else {
            "brownout"
        }),
    }
}

/// The first top-level field an output schema declares (for a retype).
fn drift_path(t: &rmcp::model::Tool) -> Option<String> {
    let s = t.output_schema.as_ref()?;
    let props = s.get("properties")?.as_object()?;
    props
        .keys()
        .next()
        .map(|k| format!("/{}", k.replace('~', "~0").replace('/', "~1")))
}

fn target_yaml(target: &Value) -> Value {
    match (target.get("command"), target.get("url")) {
        (Some(c), _) => json!({"command": c}),
        (_, Some(u)) => json!({"url": u}),
        _ => json!({}),
    }
}

/// The rungs a new stage list may climb, from the policy's ladder and the store's history.
fn stages(ctx: &Ctx, title: &str, target: &Value) -> Vec<String> {
    let ladder: Vec<&Share> = ctx.cfg.policy.ladder.iter().collect();
    let passed = crate::experiment::history::widest_passed(ctx.cfg.store.as_deref(), title, target)
        .ok()
        .flatten();
    let allowed = match passed {
        None => 0,
        Some((w, _)) => ladder
            .iter()
            .rposition(|r| r.fraction().is_some_and(|f| f <= w + 1e-9))
            .map_or(0, |i| i + 1)
            .min(ladder.len().saturating_sub(1)),
    };
    ladder
        .iter()
        .take(allowed + 1)
        .map(|s| s.0.clone())
        .collect()
}

fn propose(
    ctx: &Ctx,
    args: &Value,
    described: &Value,
    tools: &[rmcp::model::Tool],
    progress: &super::progress::Progress,
) -> Out {
    let goal = args["goal"].as_str().unwrap_or("").to_lowercase();
    let max = args["max"].as_u64().unwrap_or(8).clamp(1, 12) as usize;
    let history = super::history::of(ctx.cfg.store.as_deref(), &args["target"]);
    let (timeout_ms, timeout_from) = match &history.timeout_ms {
        Some((ms, run)) => (*ms, format!("the client timeout run {run} set")),
        None => (
            DEFAULT_TIMEOUT_MS,
            "assumed (no past run of this target set one)".to_string(),
        ),
    };
    let mut notes = vec![
        format!(
            "history: {} past run(s) of this target in the store; {} tool(s) with measured latency",
            history.runs.len(),
            history.p50_ms.len()
        ),
        format!(
            "client timeout {timeout_ms} ms, {timeout_from} (latency faults go to 0.6 of it); tools/list took {} ms",
            described["tools_list_ms"]
        ),
        super::untrusted::NOTICE.to_string(),
    ];
    let interactive = |t: &&rmcp::model::Tool| {
        words(&t.name)
            .iter()
            .any(|w| INTERACTIVE.iter().any(|i| w.starts_with(i)))
    };
    // A tool that may write is never called for real: no experiment whose load calls it.
    let not_designed: Vec<Value> = tools
        .iter()
        .filter(|t| !callable(t, &ctx.cfg.policy))
        .map(|t| {
            json!({
                "tool": super::untrusted::text(&t.name, super::untrusted::NAME_CAP),
                "why": format!(
                    "it may write ({}): a designed experiment never sends it a real call, so none loads it; name it in the policy's `load_tools` if calling it is safe",
                    may_write(t).unwrap_or_default()
                ),
            })
        })
        .collect();
    let mut candidates: Vec<&rmcp::model::Tool> = tools
        .iter()
        .filter(|t| callable(t, &ctx.cfg.policy))
        .filter(|t| !interactive(t))
        .collect();
    // The goal's words first: a tool named in the goal, then tools whose shape it asks for.
    let score = |t: &rmcp::model::Tool| -> i32 {
        let mut s = 0;
        let name = t.name.to_lowercase();
        if !goal.is_empty() && !name.is_empty() && goal.contains(&name) {
            s += 10;
        }
        let sh = shape(t);
        for (word, want) in [
            ("slow", Shape::Slow),
            ("latency", Shape::Slow),
            ("timeout", Shape::Slow),
            ("drift", Shape::Drift),
            ("schema", Shape::Drift),
            ("partial", Shape::List),
            ("truncat", Shape::List),
            ("write", Shape::Write),
            ("error", Shape::Write),
        ] {
            if goal.contains(word) && sh == want {
                s += 3;
            }
        }
        s
    };
    candidates.sort_by_key(|t| (-score(t), t.name.to_string()));
    let skipped = tools.iter().filter(|t| interactive(t)).count();
    if skipped > 0 {
        notes.push(format!("{skipped} tool(s) that need the client's own help (sampling, elicitation) were left out"));
    }
    if !not_designed.is_empty() {
        notes.push(format!(
            "{} tool(s) that may write got no experiment (see `not_designed`): no designed experiment sends a real call to a tool that may write",
            not_designed.len()
        ));
    }
    let mut out = Vec::new();
    let n = candidates.len().min(max);
    for (i, t) in candidates.into_iter().take(max).enumerate() {
        progress.report(
            (i + 1) as f64,
            Some(n as f64),
            format!(
                "designed and simulated an experiment for the tool {}",
                quote(&t.name, 60)
            ),
        );
        out.push(one(ctx, args, t, timeout_ms, &history)?);
    }
    Ok(
        json!({"experiments": out, "not_designed": not_designed, "target": described, "notes": notes}),
    )
}

fn one(
    ctx: &Ctx,
    args: &Value,
    t: &rmcp::model::Tool,
    timeout_ms: u64,
    history: &super::history::TargetHistory,
) -> Result<Value, String> {
    let name = t.name.to_string();
    let q = quote(&name, 60);
    // A glob that matches this tool alone, whatever characters its name holds.
    let glob = escape(&name);
    let sh = shape(t);
    let arguments = example(&Value::Object((*t.input_schema).clone()), 0);
    // Within the policy's cap on a fault's probability.
    let p = |x: f64| x.min(ctx.cfg.policy.max_probability);
    let (kind, fault, gate, does, question) = match (sh, drift_path(t)) {
        (Shape::Write, _) => (
            "error",
            json!({"kind": "error", "tools": [glob], "phase": "request", "probability": p(0.2)}),
            "error_rate < 5% over 5s".to_string(),
            format!("brownout answers {:.0} % of its calls with a JSON-RPC error in the target's place (phase: request: those never reach the target; the other calls do, and may write — the policy's `load_tools` allows it)", p(0.2) * 100.0),
            "does a failed call surface, and is it retried or escalated, never duplicated?".to_string(),
        ),
        (Shape::Drift, Some(path)) => (
            "schema_drift",
            json!({"kind": "schema_drift", "tools": [glob], "mutation": "retype", "path": path, "probability": p(0.3)}),
            "error_rate < 2% over 5s".to_string(),
            format!("the target answers every call; in {:.0} % of the answers brownout retypes the field {} its outputSchema declares", p(0.3) * 100.0, quote(&path, 60)),
            "is the retyped field caught by validation rather than acted on silently?".to_string(),
        ),
        (Shape::List, _) | (Shape::Drift, None) => (
            "partial_result",
            json!({"kind": "partial_result", "tools": [glob], "mode": "truncate_text", "keep": 0.5, "probability": p(0.3)}),
            "error_rate < 2% over 5s".to_string(),
            format!("the target answers every call; in {:.0} % of the answers brownout keeps only the first half of the text", p(0.3) * 100.0),
            "is a truncated answer taken for the whole?".to_string(),
        ),
        (Shape::Slow, _) => {
            // Toward the timeout, within the policy's cap on added latency (jitter included).
            let cap_ms = ctx.cfg.policy.max_added_latency.get().as_millis() as u64;
            let jitter = (timeout_ms / 5).min(cap_ms / 5);
            let added = (timeout_ms * 6 / 10).min(cap_ms.saturating_sub(jitter));
            (
                "latency",
                json!({"kind": "latency", "tools": [glob], "added_ms": added, "jitter_ms": jitter, "probability": p(0.5)}),
                format!("p95 < {}ms over 5s", timeout_ms * 9 / 10),
                format!("the target answers every call; brownout delays {:.0} % of them by {added} ms ± {jitter} ms", p(0.5) * 100.0),
                format!("does the p95 stay under 90 % of the client's {timeout_ms} ms timeout, or do timeouts and retries pile up?"),
            )
        }
    };
    // A fault that changes results needs a gate that sees what the agent does with them
    // (docs/silent.md): errors alone pass green with every changed result acted on.
    let mut gates = vec![gate.clone()];
    if matches!(kind, "schema_drift" | "partial_result") {
        gates.push(SILENT_GATE.to_string());
    }
    let gate = gates.join("` and `");
    let title = format!("{q} under {kind} ({})", target_label(&args["target"]));
    let shares = stages(ctx, &title, &args["target"]);
    let stages_json: Vec<Value> = shares
        .iter()
        .enumerate()
        .map(|(i, s)| json!({"stage": format!("rung-{}", i + 1), "duration": "10s", "sessions": s}))
        .collect();
    // The simulator's model of the tool: its measured latency where history has it.
    let served_ms = history.p50_ms.get(&name).copied().unwrap_or(5.0);
    let sessions = 8;
    let workload = json!({
        "name": format!("agent calling {q}"),
        "arrival": {"mode": "closed", "concurrency": 4},
        "think_ms": 20,
        "steps": [{"calls": [{"tool": name, "arguments": arguments}]}],
        "servers": [{"name": "target", "tools": {name.clone(): {"latency": {"added_ms": served_ms}}}}],
        "client": {"timeout_ms": timeout_ms},
    });
    let exp = json!({
        "title": title,
        "labels": {"designed-by": "brownout-mcp"},
        "target": target_yaml(&args["target"]),
        "load": {"workload": workload, "sessions": sessions},
        "baseline": "5s",
        "method": stages_json,
        "faults": [fault],
        "gates": gates,
        "recovery": {"within": "15s"},
    });
    let why_callable = match may_write(t) {
        None => "annotated read-only, no write verb in its name".to_string(),
        Some(w) => {
            format!("it may write ({w}), but the operator's policy names it in `load_tools`")
        }
    };
    let rationale = format!(
        "Load: {sessions} sessions, 4 agents in a closed loop, each call the tool {q} ({why_callable}), nothing else. Baseline: 5 s without faults. Then in the stages' share of sessions ({}, 10 s each): {does}. Gate: {gate}; recovery within 15 s. Question: {question}",
        shares.join(" → ")
    );
    let text = serde_json::to_string_pretty(&exp).map_err(|e| e.to_string())?;
    let (valid, estimate, errors, policy) =
        match crate::experiment::load::load_text(&text, "designed.json", &ctx.cfg.workdir) {
            Ok(x) => (
                true,
                estimate(&x, history.p50_ms.contains_key(&name)),
                Value::Null,
                super::read::verdict_json(ctx.policy_verdict(&x)),
            ),
            Err(e) => (
                false,
                Value::Null,
                json!(super::read::errors_json(&e)),
                Value::Null,
            ),
        };
    Ok(json!({
        "title": title,
        "tool": super::untrusted::text(&name, super::untrusted::NAME_CAP),
        "fault": kind, "rationale": rationale,
        "experiment": text, "valid": valid, "errors": errors,
        "estimate": estimate, "policy_check": policy,
    }))
}

fn target_label(target: &Value) -> String {
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

/// The simulator's estimate at the widest stage: the gates' verdict, error rate, p95, ρ.
pub fn estimate(x: &crate::experiment::Loaded, measured: bool) -> Value {
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
            "simulated with the tool's latency measured by past runs' probes; calibrate (brownout calibrate) for a closer estimate"
        } else {
            "simulated with an assumed 5 ms per call (no past run measured this tool): calibrate it (brownout calibrate) for a closer estimate"
        },
    })
}
