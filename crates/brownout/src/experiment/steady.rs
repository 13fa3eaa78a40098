//! The steady-state hypothesis: each probe's samples through a fresh MCP session, judged by
//! its tolerance.

use super::journal::{Acc, ProbeRecord, Sample, SteadyState};
use super::mcp_http::Session;
use super::spec::{holds, parse_bound, Probe};
use serde_json::Value;
use std::time::{Duration, Instant};

/// Check every probe against `url`. `Err` when a probe could not run at all (the target is
/// unreachable, the session was refused): brownout could not check, which is not "not met".
pub async fn check(probes: &[Probe], url: &str) -> Result<SteadyState, String> {
    let mut records = Vec::new();
    for p in probes {
        records.push(probe(p, url).await?);
    }
    Ok(SteadyState {
        met: records.iter().all(|r| r.met),
        probes: records,
    })
}

async fn probe(p: &Probe, url: &str) -> Result<ProbeRecord, String> {
    let mut s = Session::open(url, Duration::from_secs(10))
        .await
        .map_err(|e| format!("probe `{}`: cannot open a session: {e}", p.call.tool))?;
    let args = Value::Object(p.call.arguments.clone());
    let mut samples = Vec::new();
    let mut acc = Acc::default();
    for _ in 0..p.samples.unwrap_or(20) {
        let started = Instant::now();
        let answer = s.call_tool(&p.call.tool, &args).await;
        let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
        let (ok, error) = match answer {
            Ok(a) => (a.ok, a.error),
            Err(e) => (false, Some(e)),
        };
        acc.add(ok, latency_ms);
        samples.push(Sample {
            ok,
            latency_ms,
            error,
        });
    }
    s.close().await;
    let slis = acc.slis();
    let success_pct = if slis.calls == 0 {
        0.0
    } else {
        100.0 * (slis.calls - slis.errors) as f64 / slis.calls as f64
    };
    let t = &p.tolerance;
    let mut misses = Vec::new();
    let success = t.success.as_deref().unwrap_or(">= 100%");
    if let Some((op, bound)) = parse_bound(success) {
        if !holds(op, success_pct, bound) {
            misses.push(format!("success {success_pct:.1}% is not {success}"));
        }
    }
    for (name, bound, value) in [
        ("p50", &t.p50, slis.p50_ms),
        ("p95", &t.p95, slis.p95_ms),
        ("p99", &t.p99, slis.p99_ms),
    ] {
        if let (Some(text), Some((op, b))) = (bound, bound.as_deref().and_then(parse_bound)) {
            let v = value.unwrap_or(f64::INFINITY);
            if !holds(op, v, b) {
                misses.push(format!("{name} {v:.1} ms is not {text}"));
            }
        }
    }
    Ok(ProbeRecord {
        tool: p.call.tool.clone(),
        tolerance: t.clone(),
        samples,
        success_pct,
        latency: slis,
        met: misses.is_empty(),
        misses,
    })
}
