//! `brownout design`: the command line over experiment design. Describes the target live
//! (initialize and tools/list only), maps the goal to scenarios, prints the series, and
//! with `-o DIR` writes one experiment file per step and `gameday.yaml` into DIR.

use super::{Env, Request, Scenario};
use brownout_experiment::experiment::policy::Policy;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// Design experiments for a target from a goal in words: scenarios (slow_dependency,
/// error_burst, rate_limit, pool_exhaustion, retry_storm, process_kill, schema_drift,
/// silent_corruption, registry_stale, dependency_outage), each an escalating series of
/// experiments with gates that see its faults, validated, simulated and checked against the
/// policy, and a GameDay file that strings them together. Nothing is run. The vocabulary
/// that maps words to scenarios and every template's parameters: docs/design.md.
///
/// TARGET is a streamable HTTP URL, or a stdio server's command line after `--`.
///
/// Exit codes: 0 designed (every experiment valid); 1 a designed experiment is invalid;
/// 2 bad usage or input, or the target could not be described.
///
/// Examples:
///   brownout design --goal "pool exhaustion with retry storm" -o gameday/ -- brownout fixture
///   brownout design --scenario rate_limit --scenario process_kill -- brownout fixture
///   brownout design --goal "tools return subtly wrong data" http://127.0.0.1:3001/mcp
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct DesignArgs {
    /// What to learn, in words (matched to scenarios by a fixed vocabulary).
    #[arg(long)]
    pub goal: Option<String>,
    /// A scenario by name (repeatable); with none, the goal's words choose.
    #[arg(long = "scenario", value_name = "NAME", value_parser = parse_scenario)]
    pub scenarios: Vec<Scenario>,
    /// Write one experiment file per step and gameday.yaml here (created if missing).
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The guardrail policy the designs are checked against (default: the built-in one).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// The journal store whose history grounds the design (default as `brownout journal`).
    #[arg(long, value_name = "PATH")]
    pub store: Option<PathBuf>,
    /// At most this many experiments.
    #[arg(long, default_value_t = 30)]
    pub max: usize,
    /// How long the target may take to answer initialize and tools/list (ms).
    #[arg(long, default_value_t = 15_000)]
    pub timeout_ms: u64,
    /// Print the design as JSON.
    #[arg(long)]
    pub json: bool,
    /// The target: a URL, or a command line (after `--`).
    #[arg(required = true, num_args = 1.., trailing_var_arg = true, value_name = "TARGET")]
    pub target: Vec<String>,
}

fn parse_scenario(s: &str) -> Result<Scenario, String> {
    Scenario::from_name(s).ok_or_else(|| {
        format!(
            "`{s}` is not a scenario; known: {}",
            Scenario::names().join(", ")
        )
    })
}

/// Run `brownout design`; the exit code.
pub fn run(a: DesignArgs) -> anyhow::Result<i32> {
    let policy = match &a.policy {
        None => Policy::default(),
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| anyhow::anyhow!("{}: cannot read the policy: {e}", p.display()))?;
            Policy::from_str_named(&text, &p.display().to_string())
                .map_err(|e| anyhow::anyhow!("{e}"))?
        }
    };
    let target = match a.target.as_slice() {
        [u] if u.starts_with("http://") || u.starts_with("https://") => {
            serde_json::json!({"url": u})
        }
        cmd => serde_json::json!({"command": cmd}),
    };
    let workdir = std::env::current_dir()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let timeout = Duration::from_millis(a.timeout_ms.clamp(100, 600_000));
    let described = rt
        .block_on(crate::target::connect::connect(&target, timeout, &workdir))
        .map_err(|e| anyhow::anyhow!("cannot describe the target: {e}"))?;
    let keep = brownout_store::keep::KeepArgs {
        store: a.store.clone(),
        ..Default::default()
    };
    let verdict = |x: &brownout_experiment::experiment::Loaded| {
        brownout_experiment::experiment::policy::check(x, &policy)
            .and_then(|()| brownout_experiment::experiment::history::enforce(x, &policy, &keep))
    };
    let env = Env {
        policy: &policy,
        store: a.store.as_deref(),
        workdir: &workdir,
        designed_by: "brownout-design",
        verdict: &verdict,
    };
    let req = Request {
        goal: a.goal.clone().unwrap_or_default(),
        scenarios: a.scenarios.clone(),
        max: a.max,
    };
    let quiet = |_: f64, _: Option<f64>, _: String| {};
    let (out, made) = super::design_with(&env, &req, &target, &described.tools, &quiet)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(dir) = &a.out {
        super::write::dir(dir, &req.goal, &target, &made)?;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        super::write::summary(&out, a.out.as_deref());
    }
    Ok(i32::from(made.iter().any(|d| !d.valid)))
}
