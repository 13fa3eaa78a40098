//! `pool_exhaustion`: the seed incident's squeeze of a bounded pool. 20 sessions, a client
//! with bounded retries; 5 %, 25 %, 50 % of calls refused as the pool does when it is
//! exhausted (`-32000 connection pool exhausted`, answered in the server's place), and from
//! step 2 a fifth of calls waiting 150 ms for a slot. The simulator models the server as a
//! 10-slot pool with a 200 ms queue timeout. Gates: errors under 1 %, p99 under 800 ms (or
//! 90 % of the timeout, the lower).

use super::{all_globs, base, Ground, Series};
use crate::design::Step;
use serde_json::json;

const SQUEEZE: [f64; 3] = [0.05, 0.25, 0.5];
const SLOW_SLOT_MS: u64 = 150;
const SESSIONS: u32 = 20;

pub fn series(g: &Ground) -> Result<Series, String> {
    let tools = all_globs(g);
    let retries = json!({"max_attempts": 3, "backoff_ms": 10, "multiplier": 1.5, "max_backoff_ms": 200, "jitter": 0.5});
    let mut s = base(
        None,
        json!({"refused": SQUEEZE, "slow_slot_ms": SLOW_SLOT_MS, "sessions": SESSIONS, "pool": {"slots": 10, "queue_timeout_ms": 200}, "retries": retries}),
    );
    s.sessions = SESSIONS;
    s.client = json!({"retries": retries});
    s.pool = Some((10, 200));
    let p99 = (g.timeout_ms * 9 / 10).min(800);
    for (i, squeeze) in SQUEEZE.iter().enumerate() {
        let p = g.p(*squeeze);
        let mut faults = vec![
            json!({"id": "pool-squeeze", "kind": "error", "tools": tools, "phase": "request", "code": -32000, "message": "connection pool exhausted", "probability": p}),
        ];
        let mut strength = format!(
            "{:.0} % of calls refused as `connection pool exhausted`",
            p * 100.0
        );
        if i > 0 {
            let (ms, _) = g.latency(SLOW_SLOT_MS as f64 / g.timeout_ms.max(1) as f64);
            faults.push(json!({"id": "slow-slot", "kind": "latency", "tools": tools, "added_ms": ms, "probability": g.p(0.2)}));
            strength.push_str(&format!(
                ", {:.0} % waiting {ms} ms for a slot",
                g.p(0.2) * 100.0
            ));
        }
        s.steps.push(Step {
            strength,
            faults,
            gates: vec![
                "error_rate < 1% over 3s".into(),
                format!("p99 < {p99}ms over 3s"),
            ],
            question: "do bounded retries absorb a squeezed pool, or do they pile onto it?".into(),
        });
    }
    Ok(s)
}
