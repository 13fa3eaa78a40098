//! `retry_storm`: the seed's cascade from the client's side. The load's client retries
//! without bound (backoff 10 ms ×1.5 up to 200 ms) behind an outbound limiter that rejects
//! (400/s, burst 100), each task within the client's timeout; 10 %, 30 %, 60 % of calls are
//! refused in the server's place. Gates: amplification (attempts per call) under 1.5 and
//! errors under 2 %: the storm shows as attempts before it shows as errors.

use super::{all_globs, base, Ground, Series};
use crate::design::Step;
use serde_json::json;

const REFUSED: [f64; 3] = [0.1, 0.3, 0.6];
const SESSIONS: u32 = 20;

pub fn series(g: &Ground) -> Result<Series, String> {
    let tools = all_globs(g);
    let retries = json!({"unbounded": true, "backoff_ms": 10, "multiplier": 1.5, "max_backoff_ms": 200, "jitter": 0.5});
    let limiter = json!({"rate_per_s": 400, "burst": 100, "mode": "reject"});
    let mut s = base(
        None,
        json!({"refused": REFUSED, "retries": retries, "rate_limiter": limiter, "sessions": SESSIONS}),
    );
    s.sessions = SESSIONS;
    s.client = json!({"retries": retries, "rate_limiter": limiter});
    for r in REFUSED {
        let p = g.p(r);
        s.steps.push(Step {
            strength: format!("{:.0} % of calls refused, retried without bound", p * 100.0),
            faults: vec![json!({"id": "overloaded", "kind": "error", "tools": tools, "phase": "request", "code": -32000, "message": "upstream overloaded", "probability": p})],
            gates: vec!["amplification < 1.5 over 5s".into(), "error_rate < 2% over 5s".into()],
            question: "do unbounded retries multiply the load on a failing server (attempts per call), and does the limiter's rejection feed the storm?".into(),
        });
    }
    Ok(s)
}
