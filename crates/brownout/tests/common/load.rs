//! Helpers shared by the load tests (tests/load.rs, tests/load_incident.rs): play a
//! workload with `brownout::load::run` under a watchdog and sort out its events.
#![allow(dead_code)]

use brownout::load::{self, LoadEvent, LoadOptions, LoadSummary, LoadTarget};
use brownout_core::event::Outcome;
use brownout_sim::Workload;
use std::time::Duration;

/// Nothing here should take long; a hang fails the test instead of the suite.
pub const WATCHDOG: Duration = Duration::from_secs(120);

pub fn workload(yaml: &str) -> Workload {
    Workload::from_str_live(yaml, "w.yaml").unwrap_or_else(|e| panic!("{e}"))
}

pub async fn play(
    w: &Workload,
    target: LoadTarget,
    opts: LoadOptions,
) -> (LoadSummary, Vec<LoadEvent>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let summary = tokio::time::timeout(WATCHDOG, load::run(w, target, opts, tx))
        .await
        .expect("the load ended in time")
        .unwrap_or_else(|e| panic!("load failed: {e}"));
    let mut evs = Vec::new();
    while let Ok(e) = rx.try_recv() {
        evs.push(e);
    }
    (summary, evs)
}

pub fn stdio(command: Vec<String>) -> LoadTarget {
    LoadTarget::Stdio { command }
}

pub fn opts(sessions: usize, seed: Option<u64>) -> LoadOptions {
    LoadOptions {
        sessions,
        seed,
        ..LoadOptions::default()
    }
}

pub fn calls(evs: &[LoadEvent]) -> Vec<&brownout_core::slo::CallObservation> {
    evs.iter()
        .filter_map(|e| match e {
            LoadEvent::Call(c) => Some(c),
            LoadEvent::Task(_) => None,
        })
        .collect()
}

pub fn count(evs: &[LoadEvent], tool: &str, outcome: Outcome) -> usize {
    calls(evs)
        .iter()
        .filter(|c| c.tool.as_deref() == Some(tool) && c.outcome == outcome)
        .count()
}
