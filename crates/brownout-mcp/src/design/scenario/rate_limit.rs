//! `rate_limit`: a real token bucket per session (`rate_limit`, `scope: session`) at 80 %,
//! 50 %, 25 % of the rate one session of the designed load calls at (its one agent, think
//! time and the tools' measured latency), burst half a second of it. Calls over the bucket are
//! refused with `retry_after_ms` and never reach the server. The client retries with
//! backoff. Gates: errors under 2 %, p95 under 90 % of the timeout.

use super::THINK_MS;
use super::{base, bounded_retries, Ground, Series};
use crate::design::Step;
use serde_json::json;

const SHARES: [f64; 3] = [0.8, 0.5, 0.25];

pub fn series(g: &Ground) -> Result<Series, String> {
    let served = g
        .load
        .iter()
        .map(|t| g.served_ms(&t.name))
        .fold(0.0, f64::max);
    let mut s = base(None, json!({}));
    // Calls per second of one session: its one agent, its think time, the tools' latency.
    let per_session = 1000.0 / (THINK_MS as f64 + served.max(1.0));
    let rates: Vec<f64> = SHARES
        .iter()
        .map(|x| ((per_session * x) * 10.0).round().max(1.0) / 10.0)
        .collect();
    s.parameters = json!({"scope": "session", "rate": rates, "load_rate_per_session": (per_session * 10.0).round() / 10.0, "retries": bounded_retries()});
    s.client = json!({"retries": bounded_retries()});
    let p95 = g.timeout_ms * 9 / 10;
    for (rate, share) in rates.iter().zip(SHARES) {
        let burst = (rate / 2.0).ceil().max(1.0) as u64;
        s.steps.push(Step {
            strength: format!("{rate} calls/s per session ({:.0} % of the load's), burst {burst}", share * 100.0),
            faults: vec![json!({"id": "rate-limit", "kind": "rate_limit", "rate": rate, "burst": burst, "scope": "session"})],
            gates: vec!["error_rate < 2% over 5s".into(), format!("p95 < {p95}ms over 5s")],
            question: "does the client slow down to the limit (backoff, retry_after_ms), or do refusals reach the agent?".into(),
        });
    }
    Ok(s)
}
