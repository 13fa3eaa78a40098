//! The read-only tools over the engine, the simulator and the store: fault kinds, plan and
//! experiment validation (with the policy's verdict), simulation, the boundary search, the
//! policy, runs, SQL, trends. Each takes the call's arguments as JSON and returns the
//! structured result, or a message for the agent (a tool error).

use super::Ctx;
use crate::verdicts::{errors_json, verdict_json};
use brownout_core::faults::KINDS;
use brownout_core::plan::source::Format;
use brownout_core::Plan;
use serde_json::{json, Value};
use std::path::Path;

/// A tool's outcome: the structured content, or a message for the agent.
pub type Out = Result<Value, String>;

pub fn str_arg<'a>(args: &'a Value, key: &str) -> Result<&'a str, String> {
    args[key]
        .as_str()
        .ok_or_else(|| format!("`{key}` is required (a string)"))
}

/// A document argument (plan, experiment, workload), refused before any parsing when it is
/// longer than [`super::MAX_TEXT`].
pub fn text_arg<'a>(args: &'a Value, key: &str) -> Result<&'a str, String> {
    let t = str_arg(args, key)?;
    too_long(key, t)?;
    Ok(t)
}

fn too_long(key: &str, t: &str) -> Result<(), String> {
    if t.len() > super::MAX_TEXT {
        return Err(format!(
            "`{key}` is {} bytes: at most {} bytes ({} KiB) through MCP",
            t.len(),
            super::MAX_TEXT,
            super::MAX_TEXT / 1024
        ));
    }
    Ok(())
}

/// The file name errors are reported under, carrying the format.
fn named(base: &str, args: &Value) -> String {
    format!("{base}.{}", args["format"].as_str().unwrap_or("yaml"))
}

pub fn list_fault_kinds() -> Out {
    let kinds: Vec<Value> = KINDS
        .iter()
        .map(
            |k| json!({"kind": k.name, "summary": k.summary, "default_methods": k.default_methods}),
        )
        .collect();
    Ok(json!({ "kinds": kinds }))
}

pub fn validate_plan(args: &Value) -> Out {
    let text = text_arg(args, "plan")?;
    let file = named("plan", args);
    Ok(
        match Plan::from_str_named(text, &file).map_err(brownout_experiment::marks::explain) {
            Ok(p) => json!({
                "ok": true,
                "seed": p.seed,
                "faults": p.faults.iter().map(|f| json!({"id": f.id, "kind": f.effect.kind()})).collect::<Vec<_>>(),
            }),
            Err(e) => json!({"ok": false, "errors": errors_json(&e)}),
        },
    )
}

pub fn validate_experiment(ctx: &Ctx, args: &Value) -> Out {
    let text = text_arg(args, "experiment")?;
    let file = named("experiment", args);
    if let Err(r) = super::guard::paths_confined(text, &file, &ctx.cfg.workdir) {
        return Ok(json!({"ok": false, "errors": [{"key": r.rule, "message": r.detail}]}));
    }
    Ok(
        match brownout_experiment::experiment::load::load_text(text, &file, &ctx.cfg.workdir) {
            Ok(x) => {
                let verdict = ctx.policy_verdict(&x);
                json!({
                    "ok": true,
                    "title": x.spec.title,
                    "stages": x.spec.method.len(),
                    "faults": x.plan.faults.len(),
                    "gates": x.gates.iter().map(ToString::to_string).collect::<Vec<_>>(),
                    "policy_check": verdict_json(verdict),
                })
            }
            Err(e) => json!({"ok": false, "errors": errors_json(&e)}),
        },
    )
}

fn gates(args: &Value) -> Result<Vec<brownout_core::slo::Gate>, String> {
    args["gates"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| {
            let t = g.as_str().ok_or("each gate is a string")?;
            brownout_experiment::sim_args::parse_gate(t)
        })
        .collect()
}

/// Simulate, within [`super::work_bounds`]: stopped early by the events, memory or time
/// bound, or by `cancel` (the request cancelled); the answer then names the bound.
pub fn simulate(args: &Value, cancel: &std::sync::Arc<std::sync::atomic::AtomicBool>) -> Out {
    let plan = match args["plan"].as_str().filter(|s| !s.trim().is_empty()) {
        Some(t) => {
            too_long("plan", t)?;
            Plan::from_str_format(t, "plan.yaml", Format::Yaml)
                .map_err(|e| format!("the plan: {e}"))?
        }
        None => Plan::empty(),
    };
    let w = brownout_sim::Workload::from_str_named(text_arg(args, "workload")?, "workload.yaml")
        .map_err(|e| format!("the workload: {e}"))?;
    let gates = gates(args)?;
    sim_limits(&w, args["tasks"].as_u64())?;
    let opts = brownout_sim::SimOptions {
        tasks: args["tasks"].as_u64(),
        seed: args["seed"].as_u64(),
        keep_series: false,
        gates,
        stop_at_breach: false,
        sessions: args["sessions"].as_u64(),
        budget: super::work_bounds::sim_budget(cancel),
    };
    let report = brownout_sim::simulate(&w, plan, &opts);
    let breached = report.gates.iter().any(|g| g.breached);
    let stopped_by = report.stopped_by.clone();
    let mut v = serde_json::to_value(&report).map_err(|e| e.to_string())?;
    if let Some(m) = v.as_object_mut() {
        m.remove("series");
    }
    // The report leaves out `gates` when there are none.
    let gates = v.get("gates").cloned().unwrap_or_else(|| json!([]));
    let mut out = json!({"report": v, "breached": breached, "gates": gates});
    if let Some(why) = stopped_by {
        // For the operator too: a simulation cut short (or abandoned by its caller).
        eprintln!("brownout mcp: simulate stopped early: {why}");
        out["complete"] = json!(false);
        out["stopped_by"] = json!(why);
        out["note"] = json!("the simulation reached a bound of brownout mcp and stopped early: the report covers the run up to there (fewer tasks or a smaller workload fit)");
    }
    Ok(out)
}

pub fn find_boundary(ctx: &Ctx, args: &Value, progress: &super::progress::Progress) -> Out {
    let dir = tempfile::Builder::new()
        .prefix("brownout-boundary-")
        .tempdir_in(ctx.cfg.scratch())
        .map_err(|e| e.to_string())?;
    let put = |name: &str, key: &str| -> Result<Option<std::path::PathBuf>, String> {
        match args[key].as_str() {
            Some(t) => {
                let p = dir.path().join(name);
                std::fs::write(&p, t).map_err(|e| e.to_string())?;
                Ok(Some(p))
            }
            None => Ok(None),
        }
    };
    if let Some(t) = args["experiment"].as_str() {
        super::guard::paths_confined(t, "experiment.yaml", &ctx.cfg.workdir)
            .map_err(|r| r.to_string())?;
    }
    if let Some(t) = args["workload"].as_str() {
        let w = brownout_sim::Workload::from_str_named(t, "workload.yaml")
            .map_err(|e| format!("the workload: {e}"))?;
        sim_limits(&w, None)?;
    }
    let experiment = put("experiment.yaml", "experiment")?;
    let plan = put("plan.yaml", "plan")?;
    let workload = put("workload.yaml", "workload")?;
    if experiment.is_some() == plan.is_some() {
        return Err(
            "give `experiment` (with marks), or `plan` (with marks) with `workload` and `gates`"
                .into(),
        );
    }
    // An experiment's relative paths are read from the working directory: copy nothing,
    // resolve there (the search reads beside the file first, then the current directory).
    let a = brownout_experiment::search::SearchArgs {
        experiment,
        plan,
        workload,
        gates: gates(args)?,
        seeds: args["seeds"].as_u64().unwrap_or(8).clamp(1, 64),
        max_evals: Some(args["max_evals"].as_u64().unwrap_or(500).clamp(10, 5000)),
        time: Some(std::time::Duration::from_secs(
            args["time_budget_s"].as_u64().unwrap_or(60).clamp(1, 60),
        )),
        json: true,
        ..Default::default()
    };
    let p = brownout_experiment::search::Problem::load(&a)?;
    if p.experiment {
        // The experiment's own workload, bounded as any simulation through MCP.
        let x = brownout_experiment::experiment::load::load_text(
            &p.written(&p.lows()),
            &p.file,
            &ctx.cfg.workdir,
        )
        .map_err(|e| e.to_string())?;
        sim_limits(&x.workload, None)?;
    }
    let evals = std::sync::atomic::AtomicU64::new(0);
    let max = a.max_evals(1) as f64;
    let report = |line: &str| {
        let n = evals.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        progress.report(n as f64, Some(max), line);
    };
    let found = brownout_experiment::search::search(&p, &a, &report);
    let result = brownout_experiment::search::output::to_json(&p, &a, &found);
    let written = found
        .barely
        .as_ref()
        .map(|b| p.written(&b.values))
        .unwrap_or_default();
    // "No result" (the budget ran out) is an answer, not an error: said in words, with
    // the search's document as it stands.
    let (_, outcome, summary) = brownout_experiment::search::output::outcome(&a, &found);
    Ok(json!({"outcome": outcome, "summary": summary, "result": result, "written": written}))
}

pub fn get_policy(ctx: &Ctx) -> Out {
    let c = &ctx.cfg;
    Ok(json!({
        "policy": serde_json::to_value(&c.policy).map_err(|e| e.to_string())?,
        "policy_file": c.policy_file.as_ref().map(|p| p.display().to_string()),
        "allow_run": c.allow_run,
        "lease_seconds": c.lease.as_secs_f64(),
        "max_concurrent": c.policy.max_concurrent,
        "approval": if !c.client_form_approves {
            "a person approves every live run: a one-time code printed on the operator's terminal (never sent to this client), passed back as `approval_code` with the same experiment text and seed; it approves the experiment as resolved then (every file it names, by content) and is void if a file changes"
        } else {
            "a person approves every live run: an elicitation form where the client supports it, else a one-time code printed on the operator's terminal, passed back as `approval_code` with the same experiment text and seed; either approves the experiment as resolved then (every file it names, by content) and is void if a file changes"
        },
        "rules": [
            "read-only unless the operator started the server with --allow-run",
            "the policy is the operator's file, read once at start; no tool changes it",
            "production labels are refused",
            "a numeric gate is required",
            "the blast-radius ladder is enforced against the store's history (one rung above the widest passed)",
            "caps on duration, probability, added latency; process faults only if the policy allows them",
            "at most max_concurrent experiments at once",
            "every run holds a lease the client renews, and stops when the MCP session ends",
            "every mutating call is audited",
        ],
    }))
}

fn store(ctx: &Ctx) -> Result<brownout_store::store::AnyStore, String> {
    brownout_store::store::open(ctx.cfg.store.as_deref()).map_err(|e| e.to_string())
}

pub fn list_runs(ctx: &Ctx, args: &Value) -> Out {
    use brownout_store::store::Store;
    let label = match args["label"].as_str() {
        Some(l) => Some(
            l.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .ok_or("`label` is key=value")?,
        ),
        None => None,
    };
    let filter = brownout_store::store::ListFilter {
        experiment: args["experiment"].as_str().map(String::from),
        status: args["status"].as_str().map(String::from),
        label,
        since_unix_ms: None,
        limit: Some(args["limit"].as_u64().unwrap_or(50).min(500)),
    };
    let runs = store(ctx)?.list(&filter).map_err(|e| e.to_string())?;
    Ok(json!({ "runs": runs }))
}

pub fn get_run(ctx: &Ctx, args: &Value) -> Out {
    use brownout_store::store::Store;
    let id = str_arg(args, "run_id")?;
    let (run_id, j) = store(ctx)?.journal(id).map_err(|e| e.to_string())?;
    let form = args["form"].as_str().unwrap_or("summary");
    let mut v = json!({"run_id": run_id, "form": form});
    match form {
        "journal" => v["journal"] = j,
        "markdown" => v["markdown"] = brownout_store::report::markdown::render(&j).into(),
        _ => v["summary"] = super::compact::summary(&j),
    }
    Ok(v)
}

pub fn query_runs(ctx: &Ctx, args: &Value) -> Out {
    let sql = str_arg(args, "sql")?;
    // Created and migrated if it does not exist yet, so a first query sees the tables.
    let s = store(ctx)?;
    let limits = brownout_store::store::readonly::Limits {
        max_rows: 1000,
        timeout: std::time::Duration::from_secs(5),
        max_bytes: 8 << 20,
    };
    let r = s.query(sql, limits).map_err(|e| e.to_string())?;
    serde_json::to_value(r).map_err(|e| e.to_string())
}

pub fn trend(ctx: &Ctx, args: &Value) -> Out {
    let s = store(ctx)?;
    let last = args["last"].as_u64().unwrap_or(20).clamp(2, 1000);
    let names: Vec<String> = match args["experiment"].as_str() {
        Some(e) => vec![e.to_string()],
        None => experiments(&s)?,
    };
    let mut out = serde_json::Map::new();
    for n in names.iter().take(50) {
        let t = brownout_store::store::trend::trend(&s, n, last, Default::default())
            .map_err(|e| e.to_string())?;
        out.insert(
            n.clone(),
            serde_json::to_value(t).map_err(|e| e.to_string())?,
        );
    }
    Ok(json!({ "trend": out }))
}

/// Every experiment's name in the store.
pub fn experiments(s: &brownout_store::store::AnyStore) -> Result<Vec<String>, String> {
    brownout_store::store::backend::experiments(s).map_err(|e| e.to_string())
}

/// Whether a path is inside a directory (after resolving both).
pub fn inside(path: &Path, dir: &Path) -> bool {
    match (path.canonicalize(), dir.canonicalize()) {
        (Ok(p), Ok(d)) => p.starts_with(d),
        _ => false,
    }
}

/// The most a simulation asked through MCP may do: tasks, steps, calls per step, agents.
const MAX_TASKS: u64 = 200_000;
const MAX_STEPS: usize = 100;
const MAX_CALLS_PER_STEP: u64 = 100;
const MAX_AGENTS: u32 = 10_000;

/// A workload within what one MCP call may simulate (a peer's input is bounded).
pub fn sim_limits(w: &brownout_sim::Workload, tasks: Option<u64>) -> Result<(), String> {
    let t = tasks.or(w.tasks).unwrap_or(0);
    if t > MAX_TASKS {
        return Err(format!(
            "{t} tasks: through MCP a simulation runs at most {MAX_TASKS}"
        ));
    }
    if w.steps.len() > MAX_STEPS {
        return Err(format!("{} steps: at most {MAX_STEPS}", w.steps.len()));
    }
    for (i, s) in w.steps.iter().enumerate() {
        let calls: u64 = s
            .calls
            .iter()
            .map(|c| u64::from(c.repeat.unwrap_or(1).max(1)))
            .sum();
        if calls > MAX_CALLS_PER_STEP {
            return Err(format!(
                "step {} makes {calls} calls: at most {MAX_CALLS_PER_STEP}",
                i + 1
            ));
        }
    }
    if let Some(brownout_sim::workload::Arrival::Closed { concurrency }) = &w.arrival {
        if *concurrency > MAX_AGENTS {
            return Err(format!("{concurrency} agents: at most {MAX_AGENTS}"));
        }
    }
    Ok(())
}
