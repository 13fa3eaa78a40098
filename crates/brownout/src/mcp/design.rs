//! `design_experiments`: English and evidence in, valid experiment files out. From the
//! target's tools (described live), its history in the store and an optional goal in words,
//! one experiment per tool, with the fault that tool's shape calls for:
//!
//! - a write tool (annotated destructive, or not read-only with a write verb in its name):
//!   `error` with `phase: request`, so the server never performs the write;
//! - a tool that advertises an `outputSchema`: `schema_drift` (retype a field it declares);
//! - a list-like tool (list/search/find/query, or an array in its output): `partial_result`;
//! - any other: `latency` toward the client's timeout (0.6 of it, jitter 0.2) — the longest
//!   timeout past runs of this target set (history.rs), else 5 s.
//!
//! Each has a numeric gate, a staged blast radius (the policy's ladder, as far as the
//! store's history allows this title: the bottom rung for a new one), an inline workload
//! whose arguments come from the tool's input schema, and the simulator's estimate of its
//! outcome at its widest stage. Nothing is run and nothing is written.

use super::read::Out;
use super::Ctx;
use crate::experiment::spec::Share;
use serde_json::{json, Map, Value};

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

const WRITE_VERBS: &[&str] = &[
    "create", "update", "delete", "remove", "restart", "write", "set", "send", "post", "put",
    "add", "modify", "kill", "stop", "start", "deploy", "run", "exec", "patch", "insert",
];
const LIST_WORDS: &[&str] = &["list", "search", "find", "query", "browse", "lookup"];
/// Tools that need the client to do something (sampling, elicitation): not load material.
const INTERACTIVE: &[&str] = &["sampl", "elicit", "llm", "prompt", "roots"];

fn words(name: &str) -> Vec<String> {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .flat_map(split_camel)
        .map(|w| w.to_ascii_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

fn split_camel(s: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    for c in s.chars() {
        if c.is_ascii_uppercase() && out.last().is_some_and(|w| !w.is_empty()) {
            out.push(String::new());
        }
        if let Some(w) = out.last_mut() {
            w.push(c);
        }
    }
    out
}

pub fn shape(t: &rmcp::model::Tool) -> Shape {
    let w = words(&t.name);
    let a = t.annotations.as_ref();
    let destructive = a.and_then(|a| a.destructive_hint) == Some(true);
    let read_only = a.and_then(|a| a.read_only_hint) == Some(true);
    if destructive || (!read_only && w.iter().any(|x| WRITE_VERBS.contains(&x.as_str()))) {
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
fn stages(ctx: &Ctx, title: &str) -> Vec<String> {
    let ladder: Vec<&Share> = ctx.cfg.policy.ladder.iter().collect();
    let passed = crate::experiment::history::widest_passed(ctx.cfg.store.as_deref(), title)
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
    ];
    let mut candidates: Vec<&rmcp::model::Tool> = tools
        .iter()
        .filter(|t| {
            !words(&t.name)
                .iter()
                .any(|w| INTERACTIVE.iter().any(|i| w.starts_with(i)))
        })
        .collect();
    // The goal's words first: a tool named in the goal, then tools whose shape it asks for.
    let score = |t: &rmcp::model::Tool| -> i32 {
        let mut s = 0;
        if !goal.is_empty() && goal.contains(&t.name.to_lowercase()) {
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
    let skipped = tools.len() - candidates.len();
    if skipped > 0 {
        notes.push(format!("{skipped} tool(s) that need the client's own help (sampling, elicitation) were left out"));
    }
    let mut out = Vec::new();
    let n = candidates.len().min(max);
    for (i, t) in candidates.into_iter().take(max).enumerate() {
        progress.report(
            (i + 1) as f64,
            Some(n as f64),
            format!("designed and simulated an experiment for `{}`", t.name),
        );
        out.push(one(ctx, args, t, timeout_ms, &history)?);
    }
    Ok(json!({"experiments": out, "target": described, "notes": notes}))
}

fn one(
    ctx: &Ctx,
    args: &Value,
    t: &rmcp::model::Tool,
    timeout_ms: u64,
    history: &super::history::TargetHistory,
) -> Result<Value, String> {
    let name = t.name.to_string();
    let sh = shape(t);
    let arguments = example(&Value::Object((*t.input_schema).clone()), 0);
    // Within the policy's cap on a fault's probability.
    let p = |x: f64| x.min(ctx.cfg.policy.max_probability);
    let (kind, fault, gate, rationale) = match (sh, drift_path(t)) {
        (Shape::Write, _) => (
            "error",
            json!({"kind": "error", "tools": [name], "phase": "request", "probability": p(0.2)}),
            "error_rate < 5% over 5s".to_string(),
            format!("`{name}` writes: a failed write must surface and be retried or escalated, never duplicated; the error is short-circuited (phase: request) so the target never performs it"),
        ),
        (Shape::Drift, Some(path)) => (
            "schema_drift",
            json!({"kind": "schema_drift", "tools": [name], "mutation": "retype", "path": path, "probability": p(0.3)}),
            "error_rate < 2% over 5s".to_string(),
            format!("`{name}` advertises an outputSchema: a retyped `{path}` must be caught by validation, not acted on silently"),
        ),
        (Shape::List, _) | (Shape::Drift, None) => (
            "partial_result",
            json!({"kind": "partial_result", "tools": [name], "mode": "truncate_text", "keep": 0.5, "probability": p(0.3)}),
            "error_rate < 2% over 5s".to_string(),
            format!("`{name}` returns lists: a truncated answer must not be taken for the whole"),
        ),
        (Shape::Slow, _) => {
            // Toward the timeout, within the policy's cap on added latency (jitter included).
            let cap_ms = ctx.cfg.policy.max_added_latency.get().as_millis() as u64;
            let jitter = (timeout_ms / 5).min(cap_ms / 5);
            let added = (timeout_ms * 6 / 10).min(cap_ms.saturating_sub(jitter));
            (
                "latency",
                json!({"kind": "latency", "tools": [name], "added_ms": added, "jitter_ms": jitter, "probability": p(0.5)}),
                format!("p95 < {}ms over 5s", timeout_ms * 9 / 10),
                format!("`{name}` slowed toward the client's {timeout_ms} ms timeout: does the p95 stay under 90 % of it, or do timeouts and retries pile up?"),
            )
        }
    };
    let title = format!("{name} under {kind} ({})", target_label(&args["target"]));
    let stages: Vec<Value> = stages(ctx, &title)
        .into_iter()
        .enumerate()
        .map(|(i, s)| json!({"stage": format!("rung-{}", i + 1), "duration": "10s", "sessions": s}))
        .collect();
    // The simulator's model of the tool: its measured latency where history has it.
    let served_ms = history.p50_ms.get(&name).copied().unwrap_or(5.0);
    let workload = json!({
        "name": format!("agent calling {name}"),
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
        "load": {"workload": workload, "sessions": 8},
        "baseline": "5s",
        "method": stages,
        "faults": [fault],
        "gates": [gate],
        "recovery": {"within": "15s"},
    });
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
        "title": title, "tool": name, "fault": kind, "rationale": rationale,
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
