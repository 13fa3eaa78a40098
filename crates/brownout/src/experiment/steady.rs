//! The steady-state hypothesis: each probe's samples through a fresh MCP session, judged by
//! its tolerance — before the faults, after recovery, and (probes with `during: true`)
//! once a second while the baseline and the stages run, judged per stage.

use super::journal::{Acc, ProbeRecord, Sample, SteadyState};
use super::mcp_http::Session;
use super::spec::{holds, parse_bound, Probe};
use serde_json::Value;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

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

async fn open(p: &Probe, url: &str) -> Result<Session, String> {
    Session::open(url, Duration::from_secs(10))
        .await
        .map_err(|e| format!("probe `{}`: cannot open a session: {e}", p.call.tool))
}

async fn sample(s: &mut Session, p: &Probe) -> Sample {
    let args = Value::Object(p.call.arguments.clone());
    let started = Instant::now();
    let answer = s.call_tool(&p.call.tool, &args).await;
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    let (ok, error) = match answer {
        Ok(a) => (a.ok, a.error),
        Err(e) => (false, Some(e)),
    };
    Sample {
        ok,
        latency_ms,
        error,
    }
}

async fn probe(p: &Probe, url: &str) -> Result<ProbeRecord, String> {
    let mut s = open(p, url).await?;
    let mut samples = Vec::new();
    for _ in 0..p.samples.unwrap_or(20) {
        samples.push(sample(&mut s, p).await);
    }
    s.close().await;
    Ok(judge(p, samples))
}

/// Start the `during: true` probes: each samples once a second until `stop` is dropped,
/// sending (probe index, sample).
pub fn continuous(
    probes: &[Probe],
    url: &str,
    tx: mpsc::UnboundedSender<(usize, Sample)>,
) -> Vec<tokio::task::JoinHandle<()>> {
    probes
        .iter()
        .enumerate()
        .filter(|(_, p)| p.during)
        .map(|(i, p)| {
            let (p, url, tx) = (p.clone(), url.to_string(), tx.clone());
            tokio::spawn(async move {
                let mut s = match open(&p, &url).await {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = tx.send((
                            i,
                            Sample {
                                ok: false,
                                latency_ms: 0.0,
                                error: Some(e),
                            },
                        ));
                        return;
                    }
                };
                let mut tick = tokio::time::interval(Duration::from_secs(1));
                loop {
                    tick.tick().await;
                    if tx.send((i, sample(&mut s, &p).await)).is_err() {
                        break;
                    }
                }
            })
        })
        .collect()
}

/// Judge samples by the probe's tolerance.
pub fn judge(p: &Probe, samples: Vec<Sample>) -> ProbeRecord {
    let mut acc = Acc::default();
    for s in &samples {
        acc.add(s.ok, s.latency_ms);
    }
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
        if slis.calls > 0 && !holds(op, success_pct, bound) {
            misses.push(format!("success {success_pct:.1}% is not {success}"));
        }
    }
    for (name, bound, value) in [
        ("p50", &t.p50, slis.p50_ms),
        ("p95", &t.p95, slis.p95_ms),
        ("p99", &t.p99, slis.p99_ms),
    ] {
        if let (Some(text), Some((op, b)), Some(v)) =
            (bound, bound.as_deref().and_then(parse_bound), value)
        {
            if !holds(op, v, b) {
                misses.push(format!("{name} {v:.1} ms is not {text}"));
            }
        }
    }
    if slis.calls == 0 {
        misses.push("no sample".into());
    }
    ProbeRecord {
        tool: p.call.tool.clone(),
        tolerance: t.clone(),
        samples,
        success_pct,
        latency: slis,
        met: misses.is_empty(),
        misses,
    }
}
