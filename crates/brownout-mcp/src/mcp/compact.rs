//! A journal in a few hundred bytes: what an agent needs to reason about a run (verdict,
//! reason, each stage's share, SLIs and injections, the breach, rollbacks, recovery, ρ)
//! without the per-second series and gate histories that fill a whole journal.

use serde_json::{json, Value};

/// The compact summary of a journal (read as JSON, so older journals summarise too).
pub fn summary(j: &Value) -> Value {
    let round = |v: &Value| v.as_f64().map(|x| (x * 10_000.0).round() / 10_000.0);
    let slis = |s: &Value| {
        json!({
            "calls": s["calls"],
            "error_rate": round(&s["error_rate"]),
            "p50_ms": round(&s["p50_ms"]),
            "p95_ms": round(&s["p95_ms"]),
            "p99_ms": round(&s["p99_ms"]),
        })
    };
    let stages: Vec<Value> = j["stages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            json!({
                "stage": s["stage"],
                "share": s["share"],
                "completed": s["completed"],
                "slis": slis(&s["slis"]),
                "injections": s["injections"],
                "robustness": round(&s["robustness"]),
                "predicted_verdict": s.pointer("/prediction/verdict").cloned().unwrap_or(Value::Null),
            })
        })
        .collect();
    let rollbacks: Vec<Value> = j["rollbacks"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| json!({"action": r["action"], "ok": r["ok"]}))
        .collect();
    json!({
        "run_id": j["run_id"],
        "experiment": j.pointer("/experiment/title").cloned().unwrap_or(Value::Null),
        "labels": j.pointer("/experiment/labels").cloned().unwrap_or(Value::Null),
        "status": j["status"],
        "reason": j["reason"],
        "dry_run": j["dry_run"],
        "refusal": j["refusal"],
        "seed": j["seed"],
        "started_unix_ms": j["started_unix_ms"],
        "duration_ms": match (j["started_unix_ms"].as_i64(), j["ended_unix_ms"].as_i64()) {
            (Some(a), Some(b)) if b >= a => json!(b - a),
            _ => Value::Null,
        },
        "baseline": j.pointer("/baseline/slis").map(slis),
        "stages": stages,
        "breach": j["breach"].is_object().then(|| json!({
            "gate": j["breach"]["gate"],
            "value": round(&j["breach"]["value"]),
            "limit": j["breach"]["limit"],
            "stage": j["breach"]["stage"],
            "abort_latency_ms": round(&j["breach"]["abort_latency_ms"]),
        })),
        "rollbacks": rollbacks,
        "mttr_ms": j.pointer("/recovery/mttr_ms").cloned().unwrap_or(Value::Null),
        "recovered": j.pointer("/recovery/recovered").cloned().unwrap_or(Value::Null),
        "robustness": round(&j["robustness"]),
    })
}
