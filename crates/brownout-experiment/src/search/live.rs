//! `brownout search --live EXPERIMENT`: the simulator's boundary confirmed on the real
//! target in a handful of guarded runs. Each run is a whole `brownout run` (this binary, as
//! a child process: the same policy, gates, rollbacks and journal store as any run) of the
//! experiment written with one value. It starts below the simulator's boundary (60 % of the
//! way from the range's low end, by default), climbs in steps while the gates hold, and once
//! one breaches bisects between the highest value that held and the lowest that breached —
//! re-running a bracket end once when a later run contradicts it (live runs are noisy).

use super::{Problem, SearchArgs};
use serde::Serialize;
use std::path::Path;
use std::process::Command;

/// One live run.
#[derive(Debug, Clone, Serialize)]
pub struct LiveRun {
    pub value: f64,
    /// `completed`, `deviated`, `aborted`, …: the journal's status.
    pub status: String,
    /// A gate breached (the run was aborted by it).
    pub breached: bool,
    pub run_id: Option<String>,
    pub robustness: Option<f64>,
}

/// The live result.
#[derive(Debug, Clone, Serialize)]
pub struct Live {
    pub runs: Vec<LiveRun>,
    /// The highest value that held and the lowest that breached.
    pub hold: Option<f64>,
    pub brk: Option<f64>,
    /// The live boundary: the bracket's middle.
    pub boundary: Option<f64>,
    /// The simulator's boundary and live − simulated.
    pub simulated: f64,
    pub residual: Option<f64>,
    /// Why the live search stopped early, if it did.
    pub stopped: Option<String>,
}

fn run_once(p: &Problem, a: &SearchArgs, value: f64, n: usize) -> Result<LiveRun, String> {
    // Written beside the experiment, so its relative paths (workload, plan) resolve.
    let dir = Path::new(&p.file).parent().unwrap_or(Path::new("."));
    let file = dir.join(format!(
        ".brownout-search-live-{}-{n}.yaml",
        std::process::id()
    ));
    let journal = std::env::temp_dir().join(format!(
        "brownout-search-live-{}-{n}.json",
        std::process::id()
    ));
    std::fs::write(&file, p.written(&[value])).map_err(|e| format!("{}: {e}", file.display()))?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut cmd = Command::new(exe);
    cmd.arg("run").arg(&file).arg("--journal").arg(&journal);
    if let Some(pol) = &a.policy {
        cmd.arg("--policy").arg(pol);
    }
    if let Some(store) = &a.store {
        // In the environment, not the arguments: a store URL may hold a password, and
        // a process's arguments are visible to every user of the host.
        cmd.env("BROWNOUT_STORE", store);
    }
    let out = cmd.output();
    let _ = std::fs::remove_file(&file);
    let out = out.map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(&journal).map_err(|_| {
        format!(
            "the run at {value} wrote no journal: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })?;
    let _ = std::fs::remove_file(&journal);
    let j: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let status = j["status"].as_str().unwrap_or("").to_string();
    Ok(LiveRun {
        value,
        breached: !j["breach"].is_null(),
        run_id: j["run_id"].as_str().map(str::to_string),
        robustness: j["robustness"].as_f64(),
        status,
    })
}

/// Confirm `simulated` (the simulator's boundary, in the mark's units) live.
pub fn confirm(
    p: &Problem,
    a: &SearchArgs,
    simulated: f64,
    progress: &(dyn Fn(&str) + Sync),
) -> Live {
    let m = &p.marks[0];
    let budget = a.live_runs.max(2) as usize;
    let mut live = Live {
        runs: Vec::new(),
        hold: None,
        brk: None,
        boundary: None,
        simulated,
        residual: None,
        stopped: None,
    };
    let start = m.lo + a.live_start * (simulated - m.lo);
    let step = ((simulated - m.lo) * (1.0 - a.live_start)).max((m.hi - m.lo) / 64.0);
    let mut x = start;
    while live.runs.len() < budget {
        progress(&format!(
            "live run {} at {} = {x:.5}",
            live.runs.len() + 1,
            m.key
        ));
        let r = match run_once(p, a, x, live.runs.len()) {
            Ok(r) => r,
            Err(e) => {
                live.stopped = Some(e);
                break;
            }
        };
        progress(&format!(
            "  {} ({})",
            r.status,
            if r.breached {
                "a gate breached"
            } else {
                "the gates held"
            }
        ));
        if !matches!(r.status.as_str(), "completed" | "deviated" | "aborted") {
            live.stopped = Some(format!(
                "the run at {x} ended `{}`: not a verdict on the gates",
                r.status
            ));
            live.runs.push(r);
            break;
        }
        if r.breached {
            // A breach below a value that held contradicts it: that hold is doubtful.
            if live.hold.is_some_and(|h| h >= x) {
                live.hold = None;
            }
            live.brk = Some(live.brk.map_or(x, |b: f64| b.min(x)));
        } else {
            if live.brk.is_some_and(|b| b <= x) {
                live.brk = None;
            }
            live.hold = Some(live.hold.map_or(x, |h: f64| h.max(x)));
        }
        live.runs.push(r);
        x = match (live.hold, live.brk) {
            (Some(h), Some(b)) => (h + b) / 2.0,
            (Some(h), None) => (h + step).min(m.hi),
            (None, Some(b)) => (b - step).max(m.lo),
            (None, None) => start,
        };
        if live.hold.is_some_and(|h| h >= m.hi) {
            live.stopped = Some("the gates held at the top of the range".into());
            break;
        }
    }
    if let (Some(h), Some(b)) = (live.hold, live.brk) {
        let mid = (h + b) / 2.0;
        live.boundary = Some(mid);
        live.residual = Some(mid - simulated);
    }
    live
}
