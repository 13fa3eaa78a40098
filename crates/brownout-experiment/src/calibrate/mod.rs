//! `brownout calibrate`: measure a live server under a workload, fit the simulator's server
//! model to it ([`fit`]), write the workload back with that `servers:` section, and say how
//! close the simulation of the result comes to what was measured (docs/simulator.md,
//! "Calibrating from a live server").
//!
//! The experiment runner calibrates the same way from its baseline window
//! (`experiment/predict.rs`).

pub mod fit;

use crate::load::cli::{load_workload, target, LoadArgs};
use crate::load::{LoadEvent, LoadOptions};
use brownout_core::slo::CallObservation;
use brownout_sim::{simulate, SimOptions, Workload};
use clap::Args;
use serde_json::json;
use std::path::PathBuf;
use tokio_util::sync::CancellationToken;

/// Calibrate the simulator from a live server: play a workload against it (as `brownout
/// load` does), fit each tool's latency distribution and error rate and the server's
/// effective concurrency, and write the workload back with a `servers:` section that
/// reproduces what was measured — then say how close the simulation comes.
///
/// Examples:
///   brownout calibrate examples/workloads/fixture-agent.yaml --duration 10s --sessions 8 \
///       -o calibrated.yaml -- brownout fixture
///   brownout calibrate w.yaml --url http://127.0.0.1:8931/mcp --duration 30s -o calibrated.yaml
///   brownout sim --workload calibrated.yaml --plan plan.yaml     # then predict under faults
///
/// Exit codes: 0 done; 2 bad input; 4 the target could not be reached or answered nothing.
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct CalibrateArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    /// Write the calibrated workload here (default: print it).
    #[arg(short = 'o', long = "out")]
    pub out: Option<PathBuf>,
}

/// Measured next to simulated, per tool and overall.
pub fn compare(
    f: &fit::Fit,
    calibrated: &Workload,
    tasks: u64,
) -> (serde_json::Value, Option<f64>) {
    let opts = SimOptions {
        tasks: Some(tasks.max(1)),
        ..SimOptions::default()
    };
    let r = simulate(calibrated, brownout_core::Plan::empty(), &opts);
    let sim_s = r.duration_s;
    let sim_tput = if sim_s > 0.0 {
        r.calls as f64 / sim_s
    } else {
        0.0
    };
    let measured_p95 = f
        .tools
        .iter()
        .map(|t| t.p95_ms * t.calls as f64)
        .sum::<f64>()
        / f.tools.iter().map(|t| t.calls as f64).sum::<f64>().max(1.0);
    let err = (measured_p95 > 0.0).then(|| (r.latency_ms.p95 - measured_p95) / measured_p95);
    (
        json!({
            "measured": {
                "throughput_per_s": f.throughput_per_s,
                "p50_ms": f.tools.iter().map(|t| t.p50_ms).fold(0.0, f64::max),
                "p95_ms": measured_p95,
            },
            "simulated": {
                "throughput_per_s": sim_tput,
                "p50_ms": r.latency_ms.p50,
                "p95_ms": r.latency_ms.p95,
                "error_rate": 1.0 - r.availability,
            },
        }),
        err,
    )
}

/// `brownout calibrate`: the exit code.
pub fn run(a: CalibrateArgs) -> anyhow::Result<i32> {
    let workload = match load_workload(&a.load.workload) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("brownout calibrate: {e:#}");
            return Ok(2);
        }
    };
    let text = brownout_relay::input::read_document(&a.load.workload)?;
    let tgt = match target(&a.load) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("brownout calibrate: {e:#}");
            return Ok(2);
        }
    };
    let duration = a
        .load
        .duration
        .unwrap_or(std::time::Duration::from_secs(10));
    if !a.load.json {
        eprintln!(
            "brownout calibrate: measuring for {:.0}s with {} session(s)…",
            duration.as_secs_f64(),
            a.load.sessions.max(1)
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (calls, tasks) = rt.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let opts = LoadOptions {
            sessions: a.load.sessions.max(1),
            duration: Some(duration),
            seed: a.load.seed,
            cancel: CancellationToken::new(),
            trace: None,
        };
        let summary = crate::load::run(&workload, tgt, opts, tx).await;
        let mut calls: Vec<CallObservation> = Vec::new();
        while let Ok(ev) = rx.try_recv() {
            if let LoadEvent::Call(c) = ev {
                calls.push(c);
            }
        }
        (calls, summary.map(|s| s.tasks))
    });
    let tasks = match tasks {
        Ok(t) => t,
        Err(e) => {
            eprintln!("brownout calibrate: {e}");
            return Ok(4);
        }
    };
    if calls.is_empty() {
        eprintln!("brownout calibrate: no call completed: nothing to fit");
        return Ok(4);
    }
    let f = fit::fit(&calls);
    let out_text = fit::with_servers(&text, &fit::servers_yaml(&f, "calibrated"));
    let calibrated = Workload::from_str_live(&out_text, "calibrated workload")
        .map_err(|e| anyhow::anyhow!("the calibrated workload does not load (a bug): {e}"))?;
    let (cmp, p95_err) = compare(&f, &calibrated, tasks);
    match &a.out {
        Some(p) => std::fs::write(p, &out_text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?,
        None if !a.load.json => print!("{out_text}"),
        None => {}
    }
    if a.load.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "fit": f,
                "comparison": cmp,
                "p95_error": p95_err,
                "workload": out_text,
            }))?
        );
    } else {
        for t in &f.tools {
            eprintln!(
                "tool {}: {} calls, errors {}, p50 {}, p95 {} → {}",
                t.tool,
                t.calls,
                brownout_core::human::pct(t.error_rate),
                brownout_core::human::ms(t.p50_ms),
                brownout_core::human::ms(t.p95_ms),
                t.model
            );
        }
        eprintln!(
            "server: concurrency {} (most in flight); measured {:.0} calls/s, p95 {:.1} ms; simulated {:.0} calls/s, p95 {:.1} ms",
            f.concurrency,
            cmp["measured"]["throughput_per_s"].as_f64().unwrap_or(0.0),
            cmp["measured"]["p95_ms"].as_f64().unwrap_or(0.0),
            cmp["simulated"]["throughput_per_s"].as_f64().unwrap_or(0.0),
            cmp["simulated"]["p95_ms"].as_f64().unwrap_or(0.0),
        );
        if let Some(p) = &a.out {
            eprintln!("written: {}", p.display());
        }
    }
    Ok(0)
}
