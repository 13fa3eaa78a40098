//! What the store knows of a target, for `design_experiments`: the past runs whose
//! experiment named the same target (the same command line or URL), the client timeout their
//! workloads set, and each tool's latency as their steady-state probes measured it.

use brownout_store::store::{ListFilter, Store};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// How many of the newest runs are read.
const RUNS: u64 = 200;

/// A target's history.
#[derive(Debug, Default)]
pub struct TargetHistory {
    /// Past runs of this target.
    pub runs: Vec<String>,
    /// The longest client timeout their workloads set, and the run it came from.
    pub timeout_ms: Option<(u64, String)>,
    /// Each tool's median probe latency (ms) before faults, over those runs.
    pub p50_ms: BTreeMap<String, f64>,
}

/// Whether a journal's experiment names `target` (`{command: […]}` or `{url: …}`).
fn same_target(j: &Value, target: &Value) -> bool {
    let t = &j["experiment"]["target"];
    match (target.get("command"), target.get("url")) {
        (Some(c), _) => t.get("command") == Some(c),
        (_, Some(u)) => t.get("url") == Some(u),
        _ => false,
    }
}

/// Read the store (absent or unreadable: no history).
pub fn of(store: Option<&Path>, target: &Value) -> TargetHistory {
    let mut h = TargetHistory::default();
    let Ok(s) = brownout_store::store::open(store) else {
        return h;
    };
    let filter = ListFilter {
        limit: Some(RUNS),
        ..ListFilter::default()
    };
    let mut lat: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for run in s.list(&filter).unwrap_or_default() {
        let Ok((id, j)) = s.journal(&run.run_id) else {
            continue;
        };
        if !same_target(&j, target) {
            continue;
        }
        if let Some(ms) = j
            .pointer("/experiment/load/workload/client/timeout_ms")
            .and_then(Value::as_f64)
        {
            let ms = ms as u64;
            if h.timeout_ms.as_ref().is_none_or(|(t, _)| ms > *t) {
                h.timeout_ms = Some((ms, id.clone()));
            }
        }
        for p in j
            .pointer("/steady_state_before/probes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let (Some(tool), Some(ms)) = (p["tool"].as_str(), p["latency"]["p50_ms"].as_f64()) {
                lat.entry(tool.to_string()).or_default().push(ms);
            }
        }
        h.runs.push(id);
    }
    for (tool, mut v) in lat {
        v.sort_by(f64::total_cmp);
        h.p50_ms.insert(tool, v[v.len() / 2]);
    }
    h
}
