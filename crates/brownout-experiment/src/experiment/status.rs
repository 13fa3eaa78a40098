//! A run's live state in a file (`brownout run --status FILE`), rewritten about once a
//! second while the run goes on: the phase, the time left in it, calls so far, every gate's
//! value against its limit, and (for a relay in this process) the injections so far. A
//! watcher — the MCP server's `get_experiment` — reads it without touching the run.
//!
//! The file is replaced atomically (written beside, then renamed), so a reader never sees
//! half of it.

use super::gates::GateView;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Injections so far by fault id, read without waiting (an in-process relay's counters).
pub type InjectionsNow = Arc<dyn Fn() -> BTreeMap<String, u64> + Send + Sync>;

/// What the status file holds.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct LiveStatus {
    pub run_id: String,
    /// `warm-up`, `baseline`, a stage's name, `rollbacks`, `recovery`, or `ended`.
    pub phase: String,
    /// The stage's number (1-based) when the phase is a stage.
    pub stage: Option<usize>,
    /// The blast radius of that stage (fraction of sessions).
    pub share: Option<f64>,
    pub seconds_left: f64,
    pub calls: u64,
    /// Every gate's state at the last evaluation (`GateState` of brownout-core).
    pub gates: Vec<serde_json::Value>,
    pub injections: BTreeMap<String, u64>,
    pub updated_unix_ms: u64,
}

/// The writer the runner owns.
pub struct StatusFile {
    path: PathBuf,
    run_id: String,
    last: Option<Instant>,
    /// Set when the target is an in-process relay.
    pub injections: Option<InjectionsNow>,
    /// The stage in progress: its number and share.
    pub stage: Option<(usize, f64)>,
}

impl StatusFile {
    pub fn new(path: PathBuf, run_id: String) -> StatusFile {
        StatusFile {
            path,
            run_id,
            last: None,
            injections: None,
            stage: None,
        }
    }

    /// Write the state if a second has passed since the last write (or `force`).
    pub fn update(
        &mut self,
        phase: &str,
        left: Duration,
        calls: u64,
        gates: &[GateView],
        force: bool,
    ) {
        if !force
            && self
                .last
                .is_some_and(|t| t.elapsed() < Duration::from_secs(1))
        {
            return;
        }
        self.last = Some(Instant::now());
        let in_stage = self.stage.filter(|_| {
            !matches!(
                phase,
                "warm-up" | "baseline" | "rollbacks" | "recovery" | "ended"
            )
        });
        let s = LiveStatus {
            run_id: self.run_id.clone(),
            phase: phase.to_string(),
            stage: in_stage.map(|(i, _)| i),
            share: in_stage.map(|(_, s)| s),
            seconds_left: left.as_secs_f64(),
            calls,
            gates: gates
                .iter()
                .filter_map(|g| serde_json::to_value(g).ok())
                .collect(),
            injections: self.injections.as_ref().map(|f| f()).unwrap_or_default(),
            updated_unix_ms: super::clock::unix_ms(),
        };
        let Ok(text) = serde_json::to_vec(&s) else {
            return;
        };
        let tmp = self.path.with_extension("tmp");
        if std::fs::write(&tmp, text).is_ok() {
            let _ = std::fs::rename(&tmp, &self.path);
        }
    }
}

/// Read a status file (`None` when absent or not yet written).
pub fn read(path: &std::path::Path) -> Option<LiveStatus> {
    let text = std::fs::read(path).ok()?;
    serde_json::from_slice(&text).ok()
}
