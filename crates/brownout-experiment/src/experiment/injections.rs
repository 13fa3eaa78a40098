//! A stage's injections: this run's faults only (on a relay others also use: the ids this
//! run posted, which carry its run id), per relay, as the change since the stage began.
//! A relay that could not be read at a stage's edge (it left a DNS fleet, or did not
//! answer in time) counts with its last reading, and the stage's record says so.

use super::records::UnreadRecord;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Instant;

/// One relay's count of this run's injections, by the plan's fault id.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    /// The relay (its admin address, without credentials; empty for the in-process relay).
    pub relay: String,
    pub counts: BTreeMap<String, u64>,
    /// Not read now: `counts` is its last reading (when, if ever), and why.
    pub unread: Option<(Option<Instant>, String)>,
}

/// This run's injections in a relay's `GET /status`, by the plan's fault id: with `run`
/// (faults posted through an admin API), only the ids of that run
/// ([`super::fault_ids::fault_id`]); without, every fault (the run's own in-process relay).
pub fn of_run(status: &Value, run: Option<&str>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let Some(m) = status["summary"]["injections"].as_object() else {
        return out;
    };
    for (id, v) in m {
        let own = match run {
            Some(run) => match super::fault_ids::own_of(id, run) {
                Some(own) => own,
                None => continue,
            },
            None => id.as_str(),
        };
        let n = v["count"].as_u64().or(v.as_u64()).unwrap_or(0);
        *out.entry(own.to_string()).or_insert(0) += n;
    }
    out
}

/// The stage's injections by fault id: each relay's change from `before` to `after`
/// (a relay not read before counts from zero), summed.
pub fn stage(before: &[Reading], after: &[Reading]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for a in after {
        let b = before.iter().find(|b| b.relay == a.relay);
        for (id, n) in &a.counts {
            let was = b.and_then(|b| b.counts.get(id)).copied().unwrap_or(0);
            let d = n.saturating_sub(was);
            if d > 0 {
                *out.entry(id.clone()).or_insert(0) += d;
            }
        }
    }
    out
}

/// The relays whose count at the stage's end is a last reading, times from `origin`.
pub fn unread(after: &[Reading], origin: Instant) -> Vec<UnreadRecord> {
    after
        .iter()
        .filter_map(|a| {
            let (at, why) = a.unread.as_ref()?;
            Some(UnreadRecord {
                relay: a.relay.clone(),
                read_ms: at.map(|t| t.saturating_duration_since(origin).as_secs_f64() * 1000.0),
                detail: why.clone(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn status(pairs: &[(&str, u64)]) -> Value {
        let m: serde_json::Map<String, Value> = pairs
            .iter()
            .map(|(id, n)| (id.to_string(), json!({"count": n})))
            .collect();
        json!({"summary": {"injections": m}})
    }

    #[test]
    fn only_this_runs_faults_count() {
        let s = status(&[
            ("slow--brownout-run-7-mine", 5),
            ("slow--brownout-run-7-theirs", 100),
            ("slow", 1000),
            ("down--brownout-run-7-mine", 2),
        ]);
        let mine = of_run(&s, Some("mine"));
        assert_eq!(
            mine,
            BTreeMap::from([("slow".into(), 5), ("down".into(), 2)])
        );
        assert_eq!(of_run(&s, None).get("slow"), Some(&1000));
    }

    #[test]
    fn a_stage_counts_per_relay_and_a_relay_read_late_keeps_its_count() {
        let r = |relay: &str, n: u64, unread: bool| Reading {
            relay: relay.into(),
            counts: BTreeMap::from([("slow".to_string(), n)]),
            unread: unread.then(|| (None, "left the fleet".to_string())),
        };
        // Relay a left mid-stage: its last reading (30) still counts; b joined (from 0).
        let before = [r("a", 10, false)];
        let after = [r("a", 30, true), r("b", 7, false)];
        assert_eq!(
            stage(&before, &after),
            BTreeMap::from([("slow".into(), 27)])
        );
        let u = unread(&after, Instant::now());
        assert_eq!(u.len(), 1);
        assert_eq!(u[0].relay, "a");
    }
}
