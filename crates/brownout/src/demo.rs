//! `brownout demo`: first the simulator's two stories ([`crate::demo_sim`], about a second),
//! then a short live session that shows what brownout does, with nothing to
//! install: the built-in fixture server behind the real stdio relay with
//! `examples/demo-plan.yaml`, driven by brownout's own client. Prints, per fault, what was
//! injected and what the client saw, then the SLIs.

use crate::client::{Reply, StdioClient};
use anyhow::Context;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The plan the demo uses when `examples/demo-plan.yaml` is not around (an installed binary).
pub const BUILTIN_PLAN: &str = include_str!("../../../examples/demo-plan.yaml");

const CALL_TIMEOUT: Duration = Duration::from_millis(1200);

/// What the client saw for one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Seen {
    Ok,
    RpcError,
    ToolError,
    SchemaViolation,
    Timeout,
}

impl Seen {
    fn label(self) -> &'static str {
        match self {
            Seen::Ok => "ok",
            Seen::RpcError => "JSON-RPC error",
            Seen::ToolError => "tool error",
            Seen::SchemaViolation => "outputSchema violation",
            Seen::Timeout => "no answer (timeout)",
        }
    }
}

struct Observed {
    id: u64,
    tool: String,
    seen: Seen,
    ms: f64,
}

fn calls() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for i in 0..8 {
        out.push(("echo".into(), json!({"message": format!("hello {i}")})));
        out.push((
            "search_incidents".into(),
            json!({"query": "checkout", "limit": 4}),
        ));
        out.push((
            "get_incident".into(),
            json!({"id": format!("INC-{}", 1000 + i)}),
        ));
        out.push((
            "fetch_logs".into(),
            json!({"service": "checkout", "lines": 40}),
        ));
        out.push(("restart_service".into(), json!({"service": "checkout"})));
    }
    out
}

pub async fn run(
    plan: Option<PathBuf>,
    json_out: bool,
    keep_events: Option<PathBuf>,
) -> anyhow::Result<i32> {
    let exe = std::env::current_exe().context("cannot find the brownout binary")?;
    let exe = exe.display().to_string();
    let dir = std::env::temp_dir().join(format!("brownout-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let plan_path = match plan {
        Some(p) => p,
        None if Path::new("examples/demo-plan.yaml").exists() => {
            PathBuf::from("examples/demo-plan.yaml")
        }
        None => {
            let p = dir.join("demo-plan.yaml");
            std::fs::write(&p, BUILTIN_PLAN)?;
            p
        }
    };
    let stories = crate::demo_sim::run()?;
    if !json_out {
        print!("{}", stories.text);
    }
    let events = keep_events
        .clone()
        .unwrap_or_else(|| dir.join("events.jsonl"));
    if !json_out {
        println!("brownout demo — live: the built-in fixture behind the stdio relay");
        match &keep_events {
            Some(e) => println!("plan: {}   events: {}\n", plan_path.display(), e.display()),
            None => println!(
                "plan: {}   (keep the event log with --events FILE)\n",
                plan_path.display()
            ),
        }
    }
    let args: Vec<String> = vec![
        "proxy".into(),
        "stdio".into(),
        "--quiet".into(),
        "--plan".into(),
        plan_path.display().to_string(),
        "--events".into(),
        events.display().to_string(),
        "--".into(),
        exe.clone(),
        "fixture".into(),
    ];
    let client = StdioClient::spawn(&exe, &args, Stdio::inherit()).await?;
    let started = Instant::now();
    if !matches!(
        client.initialize(Duration::from_secs(10)).await,
        Reply::Result(_)
    ) {
        anyhow::bail!("the fixture did not answer initialize through the relay");
    }
    let Reply::Result(list) = client
        .request("tools/list", json!({}), Duration::from_secs(10))
        .await
    else {
        anyhow::bail!("tools/list failed through the relay");
    };
    let tools = list
        .get("tools")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let schemas: HashMap<String, jsonschema::Validator> = tools
        .iter()
        .filter_map(|t| {
            Some((
                t.get("name")?.as_str()?.to_string(),
                jsonschema::validator_for(t.get("outputSchema")?).ok()?,
            ))
        })
        .collect();
    let listed: Vec<String> = tools
        .iter()
        .filter_map(|t| t.get("name")?.as_str().map(String::from))
        .collect();

    // Calls go in waves of 8 concurrent calls, as an agent's fan-out would.
    let mut work = calls();
    for name in &listed {
        if !work.iter().any(|(t, _)| t == name) {
            work.push((name.clone(), json!({})));
        }
    }
    let mut observed = Vec::new();
    for wave in work.chunks(8) {
        let futs = wave.iter().map(|(tool, args)| {
            let client = &client;
            let schemas = &schemas;
            async move {
                let t0 = Instant::now();
                let (id, r) = client
                    .request_with_id(
                        "tools/call",
                        json!({"name": tool, "arguments": args}),
                        CALL_TIMEOUT,
                    )
                    .await;
                let seen = match r {
                    Reply::Result(res) => {
                        if res.get("isError").and_then(Value::as_bool) == Some(true) {
                            Seen::ToolError
                        } else if let (Some(v), Some(sc)) =
                            (schemas.get(tool.as_str()), res.get("structuredContent"))
                        {
                            if v.is_valid(sc) {
                                Seen::Ok
                            } else {
                                Seen::SchemaViolation
                            }
                        } else if schemas.contains_key(tool.as_str()) {
                            Seen::SchemaViolation
                        } else {
                            Seen::Ok
                        }
                    }
                    Reply::Error { .. } => Seen::RpcError,
                    Reply::Timeout | Reply::Closed => Seen::Timeout,
                };
                Observed {
                    id,
                    tool: tool.clone(),
                    seen,
                    ms: t0.elapsed().as_secs_f64() * 1000.0,
                }
            }
        });
        observed.extend(futures::future::join_all(futs).await);
    }
    let stray = client.stray_count();
    let notes = client.notification_count();
    let _ = client.close(Duration::from_secs(5)).await;
    let elapsed = started.elapsed();
    let code = report(
        &plan_path,
        &events,
        &observed,
        &listed,
        (stray, notes),
        elapsed,
        json_out.then_some(stories.json),
    );
    let _ = std::fs::remove_dir_all(&dir);
    code
}

fn report(
    plan: &Path,
    events: &Path,
    observed: &[Observed],
    listed: &[String],
    (stray, notes): (usize, usize),
    elapsed: Duration,
    simulated: Option<Value>,
) -> anyhow::Result<i32> {
    // Which faults change results is their kind's to say (FaultKind::alters_result).
    let plan = std::fs::read_to_string(plan)
        .ok()
        .and_then(|t| brownout_core::Plan::from_str_named(&t, "plan").ok());
    let alters_result = |id: &str| {
        plan.as_ref().is_some_and(|p| {
            p.faults
                .iter()
                .any(|f| f.id == id && f.effect.alters_result())
        })
    };
    let text = std::fs::read_to_string(events).unwrap_or_default();
    let mut per_fault: BTreeMap<String, (String, u64, String)> = BTreeMap::new();
    let mut faults_of_call: HashMap<u64, Vec<String>> = HashMap::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if v["type"] == "fault" {
            let e = per_fault
                .entry(v["fault"].as_str().unwrap_or_default().to_string())
                .or_insert_with(|| {
                    (
                        v["kind"].as_str().unwrap_or_default().to_string(),
                        0,
                        v["action"].as_str().unwrap_or_default().to_string(),
                    )
                });
            e.1 += 1;
        }
        if v["type"] == "call" {
            if let (Some(id), Some(faults)) = (v["id"].as_u64(), v["faults"].as_array()) {
                let ids = faults.iter().filter_map(|f| f.as_str().map(String::from));
                faults_of_call.entry(id).or_default().extend(ids);
            }
        }
    }
    // What the client saw on the calls each fault touched.
    let mut seen_by_fault: BTreeMap<String, BTreeMap<Seen, u64>> = BTreeMap::new();
    for o in observed {
        for f in faults_of_call.get(&o.id).into_iter().flatten() {
            *seen_by_fault
                .entry(f.clone())
                .or_default()
                .entry(o.seen)
                .or_default() += 1;
        }
    }
    let saw = |id: &str| -> String {
        match seen_by_fault.get(id) {
            None => "-".into(),
            Some(m) => m
                .iter()
                .map(|(s, n)| format!("{} ×{n}", s.label()))
                .collect::<Vec<_>>()
                .join(", "),
        }
    };
    let mut per_tool: BTreeMap<&str, BTreeMap<Seen, u64>> = BTreeMap::new();
    for o in observed {
        *per_tool
            .entry(o.tool.as_str())
            .or_default()
            .entry(o.seen)
            .or_default() += 1;
    }
    let n = observed.len() as f64;
    let responded = observed
        .iter()
        .filter(|o| !matches!(o.seen, Seen::RpcError | Seen::Timeout))
        .count() as f64;
    let correct = observed.iter().filter(|o| o.seen == Seen::Ok).count() as f64;
    let availability = responded / n.max(1.0);
    let correctness = if responded > 0.0 {
        correct / responded
    } else {
        0.0
    };
    let mut lat: Vec<f64> = observed
        .iter()
        .filter(|o| o.seen != Seen::Timeout)
        .map(|o| o.ms)
        .collect();
    lat.sort_by(f64::total_cmp);
    let pct = |p: f64| {
        if lat.is_empty() {
            0.0
        } else {
            lat[((lat.len() - 1) as f64 * p).round() as usize]
        }
    };
    if let Some(simulated) = simulated {
        let v = json!({
            "simulated": simulated,
            "calls": observed.len(),
            "tools_listed": listed,
            "faults": per_fault.iter().map(|(id, (kind, n, example))| json!({"id": id, "kind": kind, "injections": n, "example": example, "client_saw": seen_by_fault.get(id).map(|m| m.iter().map(|(s, n)| (s.label().to_string(), *n)).collect::<BTreeMap<_, _>>()).unwrap_or_default()})).collect::<Vec<_>>(),
            "client_saw": per_tool.iter().map(|(t, m)| (t.to_string(), m.iter().map(|(s, n)| (s.label().to_string(), *n)).collect::<BTreeMap<_, _>>())).collect::<BTreeMap<_, _>>(),
            "stray_lines": stray,
            "notifications": notes,
            "availability": availability,
            "correctness": correctness,
            "eta": availability * correctness,
            "latency_ms": {"p50": pct(0.5), "p95": pct(0.95), "p99": pct(0.99)},
            "elapsed_s": elapsed.as_secs_f64(),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(0);
    }
    println!(
        "{:<18} {:<15} {:>8}  {:<40} example",
        "fault", "kind", "injected", "what the client saw on those calls"
    );
    for (id, (kind, n, example)) in &per_fault {
        let example: String = example.chars().take(70).collect();
        println!("{id:<18} {kind:<15} {n:>8}  {:<40} {example}", saw(id));
    }
    let silent: u64 = seen_by_fault
        .iter()
        .filter(|(id, _)| alters_result(id))
        .map(|(_, m)| m.get(&Seen::Ok).copied().unwrap_or(0))
        .sum();
    if silent > 0 {
        println!("\n{silent} call(s) had their payload changed and still looked fine to the client: silent failures an agent would act on.");
    }
    println!("\nwhat the client saw, per tool:");
    for (tool, m) in &per_tool {
        let parts: Vec<String> = m
            .iter()
            .map(|(s, n)| format!("{} {n}", s.label()))
            .collect();
        println!("  {tool:<18} {}", parts.join(", "));
    }
    println!("  tools/list advertised: {}", listed.join(", "));
    if stray > 0 {
        println!(
            "  {stray} line(s) the client could not match to a request (malformed or mismatched)"
        );
    }
    println!(
        "\nSLIs over {} calls: availability {:.2}  correctness {:.2}  ETA {:.2}  latency p50 {:.0}ms p95 {:.0}ms p99 {:.0}ms   ({:.1}s)",
        observed.len(), availability, correctness, availability * correctness, pct(0.5), pct(0.95), pct(0.99), elapsed.as_secs_f64()
    );
    println!("Replay exactly: the plan's seed fixes every decision. Try: brownout plan check examples/*.yaml");
    Ok(0)
}
