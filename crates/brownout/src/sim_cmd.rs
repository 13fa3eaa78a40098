//! `brownout sim`: run a workload under a plan in the simulator and print what it measured,
//! with SLO gates (`--gate`) judged in virtual time. Exit codes: 0 done (every gate held),
//! 1 a gate breached, 2 bad input.

use anyhow::Context;
use brownout_core::slo::{Gate, GateStatus, GateSummary};
use brownout_sim::{simulate, Report, SimOptions};
use std::path::{Path, PathBuf};

pub struct SimArgs {
    pub plan: Option<PathBuf>,
    pub workload: PathBuf,
    pub tasks: Option<u64>,
    pub seed: Option<u64>,
    pub json: bool,
    pub series: Option<PathBuf>,
    pub gates: Vec<Gate>,
    /// Model this many long-lived sessions, as `brownout load --sessions N` plays them.
    pub sessions: Option<u64>,
}

/// Exit code when a gate breached.
pub const EXIT_BREACHED: i32 = 1;

pub use brownout_experiment::sim_args::{load_workload, parse_gate};

pub fn run(a: SimArgs) -> anyhow::Result<i32> {
    let plan = match &a.plan {
        Some(p) => crate::plan_cmd::load(p)?,
        None => brownout_core::Plan::empty(),
    };
    let w = load_workload(&a.workload)?;
    let opts = SimOptions {
        tasks: a.tasks,
        seed: a.seed,
        keep_series: a.series.is_some(),
        gates: a.gates.clone(),
        stop_at_breach: false,
        sessions: a.sessions,
        budget: Default::default(),
    };
    let started = std::time::Instant::now();
    let report = simulate(&w, plan, &opts);
    let wall = started.elapsed();
    if let Some(path) = &a.series {
        write_series(path, &report)?;
    }
    if a.json {
        let mut v = serde_json::to_value(&report)?;
        if let Some(m) = v.as_object_mut() {
            m.remove("series");
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", table(&report));
        print!("{}", gates_table(&a.gates, &report.gates));
        eprintln!(
            "({} attempts simulated in {:.2}s of wall time)",
            report.attempts,
            wall.as_secs_f64()
        );
    }
    Ok(if report.gates.iter().any(|g| g.breached) {
        EXIT_BREACHED
    } else {
        0
    })
}

/// One line per gate: breached or not, when, and the worst value the windows saw.
pub fn gates_table(gates: &[Gate], summaries: &[GateSummary]) -> String {
    let mut s = String::new();
    for g in summaries {
        let show = |v: Option<f64>| match gates.get(g.index) {
            Some(gate) => gate.show(v),
            None => v.map_or("—".into(), |v| v.to_string()),
        };
        let verdict = match (g.first_breach_ms, g.status) {
            (Some(t), _) => format!(
                "BREACHED at {:.3}s ({}; {} breach{})",
                t / 1000.0,
                show(g.breach_value),
                g.breaches,
                if g.breaches == 1 { "" } else { "es" }
            ),
            (None, GateStatus::Insufficient) if g.worst.is_none() => {
                "held (never had enough samples to judge)".into()
            }
            (None, _) => "held".into(),
        };
        s.push_str(&format!(
            "gate {}  {verdict}  worst {}  ρ {}\n",
            g.gate,
            show(g.worst),
            g.robustness.map_or("—".into(), |r| format!("{r:+.3}"))
        ));
    }
    if let Some(r) = summaries
        .iter()
        .filter_map(|g| g.robustness)
        .reduce(f64::min)
    {
        s.push_str(&format!(
            "robustness ρ {r:+.3} ({})\n",
            if r > 0.0 {
                "every gate held, with room"
            } else {
                "a gate's window broke its limit"
            }
        ));
    }
    s
}

fn write_series(path: &Path, r: &Report) -> anyhow::Result<()> {
    let mut out = String::from("t_s,offered,attempts,errors,max_queue,open_breakers\n");
    for s in &r.series {
        out.push_str(&format!(
            "{},{},{},{},{},{}\n",
            s.t_s, s.offered, s.attempts, s.errors, s.max_queue, s.open_breakers
        ));
    }
    std::fs::write(path, out).with_context(|| format!("cannot write {}", path.display()))
}

/// A readable summary of one run.
pub fn table(r: &Report) -> String {
    let mut s = String::new();
    if let Some(n) = &r.name {
        s.push_str(&format!("{n}\n"));
    }
    s.push_str(&format!(
        "tasks {}  calls {}  attempts {}  ({:.1} s of virtual time)\n",
        r.tasks, r.calls, r.attempts, r.duration_s
    ));
    s.push_str(&format!(
        "TCAF {:.2}  attempt amplification {:.3}  TCSR {:.4}  availability {:.4}  correctness {:.4}  ETA {:.4}\n",
        r.tcaf, r.attempt_amplification, r.tcsr, r.availability, r.correctness, r.eta
    ));
    s.push_str(&format!(
        "blast radius {:.4}  deadline adherence {:.4}  failures: {} surfaced, {} silent, {} calls skipped\n",
        r.blast_radius, r.deadline_adherence, r.surfaced_failures, r.silent_failures, r.skipped_calls
    ));
    s.push_str(&format!(
        "latency ms  p50 {:.1}  p95 {:.1}  p99 {:.1}  max {:.1}   attempt error rate {:.2}%\n",
        r.latency_ms.p50,
        r.latency_ms.p95,
        r.latency_ms.p99,
        r.latency_ms.max,
        r.attempt_error_rate * 100.0
    ));
    if r.silent.altered > 0 || r.silent.rereads > 0 || r.silent.missing_values > 0 {
        s.push_str(&format!(
            "agent policy {}: {}; {} extra reads, {} tasks missing a chained value\n",
            r.silent.policy, r.silent.headline, r.silent.rereads, r.silent.missing_values
        ));
    }
    if !r.injections.is_empty() {
        let parts: Vec<String> = r
            .injections
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        s.push_str(&format!("injections: {}\n", parts.join(", ")));
    }
    s
}
