//! `error_burst`: JSON-RPC errors in bursts (`correlation: {mode: burst}`) — 2 %, 5 %,
//! 15 % of calls in runs of about 3, 8, 16 — answered in the server's place (`phase:
//! request`) on every tool the load calls, against a client with three attempts. Gate:
//! errors under 1 %: a burst longer than the retries shows.

use super::{all_globs, base, bounded_retries, Ground, Series};
use crate::design::Step;
use serde_json::json;

const RATES: [f64; 3] = [0.02, 0.05, 0.15];
const RUNS: [u32; 3] = [3, 8, 16];

pub fn series(g: &Ground) -> Result<Series, String> {
    let tools = all_globs(g);
    let mut s = base(
        None,
        json!({"probability": RATES, "mean_burst_calls": RUNS, "retries": bounded_retries()}),
    );
    s.client = json!({"retries": bounded_retries()});
    for (rate, run) in RATES.iter().zip(RUNS) {
        let p = g.p(*rate);
        s.steps.push(Step {
            strength: format!("{:.0} % of calls refused, in bursts of about {run}", p * 100.0),
            faults: vec![json!({"id": "error-burst", "kind": "error", "tools": tools, "phase": "request", "probability": p, "correlation": {"mode": "burst", "mean_burst_calls": run}})],
            gates: vec!["error_rate < 1% over 5s".into()],
            question: "do three attempts ride out a burst, or does a long burst reach the agent?".into(),
        });
    }
    Ok(s)
}
