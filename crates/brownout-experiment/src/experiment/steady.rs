//! The steady-state hypothesis: each probe's samples through an MCP session kept open
//! ([`crate::probe::session`]: the same failure reasons as `brownout probe`), judged by its
//! tolerance — before the faults, after recovery, and (probes with `during: true`) every
//! `interval` while the baseline and the stages run, judged per stage, with alerts as a
//! `brownout probe` monitor fires them (N failures in a row, a rolling P95 broken).

use super::journal::{Acc, ProbeRecord, Sample, SteadyState};
use super::servers::Endpoints;
use super::spec::{holds, parse_bound, Probe};
use crate::probe::monitor::{MonitorOptions, Schedule, Tracker};
use crate::probe::session::{ends_session, Session};
use crate::probe::spec::{Dur as ProbeDur, Headers, McpProbe, ProbeCall};
use crate::probe::{FailureReason, MonitorEvent, ProbeResult};
use brownout_core::slo::tolerance::Tolerance;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// The default time budget of one sample.
const SAMPLE_TIMEOUT: Duration = Duration::from_secs(10);

/// The probe as `brownout probe` sees it: the experiment's target, the probe's call, and a
/// `Brownout-Session: probe-i` label so a relay's blast radius treats it the same every run.
fn mcp_probe(p: &Probe, i: usize, url: &str, trace: Option<&str>) -> McpProbe {
    let mut headers = Headers::default();
    headers.0.insert(
        brownout_relay::relay::http_sessions::LABEL_HEADER.to_string(),
        format!("probe-{i}"),
    );
    McpProbe {
        url: Some(url.to_string()),
        headers,
        call: Some(ProbeCall {
            tool: p.call.tool.clone(),
            arguments: p.call.arguments.clone(),
        }),
        timeout: Some(ProbeDur(timeout(p))),
        traceparent: trace.map(str::to_string),
        ..McpProbe::default()
    }
}

fn timeout(p: &Probe) -> Duration {
    p.timeout
        .as_ref()
        .map(|t| t.get())
        .filter(|t| !t.is_zero())
        .unwrap_or(SAMPLE_TIMEOUT)
}

/// Check every probe against its server (`urls`). `Err` when a probe could not run at all (the target is
/// unreachable, the session was refused): brownout could not check, which is not "not met".
pub async fn check(probes: &[Probe], urls: &Endpoints) -> Result<SteadyState, String> {
    let mut records = Vec::new();
    for (i, p) in probes.iter().enumerate() {
        records.push(probe(p, i, &urls.probe_urls(p), urls.trace.as_deref()).await?);
    }
    Ok(SteadyState {
        met: records.iter().all(|r| r.met),
        probes: records,
    })
}

/// A probe's kept sessions, one per URL it samples (a fleet's relays, in turn), each
/// opened on first use and again after a failure that ends it.
struct Sampler {
    targets: Vec<(McpProbe, Option<Session>)>,
    limit: Duration,
    /// The target of the next sample.
    next: usize,
}

impl Sampler {
    fn new(p: &Probe, i: usize, urls: &[String], trace: Option<&str>) -> Sampler {
        Sampler {
            targets: urls
                .iter()
                .map(|u| (mcp_probe(p, i, u, trace), None))
                .collect(),
            limit: timeout(p),
            next: 0,
        }
    }

    /// One sample, from the next target in turn: (latency of the call, or why it failed).
    async fn sample(&mut self) -> (f64, Result<(), crate::probe::Failure>) {
        let started = Instant::now();
        let deadline = tokio::time::Instant::now() + self.limit;
        let client = crate::probe::client();
        let n = self.targets.len().max(1);
        let at = self.next % n;
        self.next = (at + 1) % n;
        let Some((m, session)) = self.targets.get_mut(at) else {
            return (ms(started), Ok(()));
        };
        if session.is_none() {
            match Session::open(m, client, deadline).await {
                Ok(s) => *session = Some(s),
                Err(f) => return (ms(started), Err(f)),
            }
        }
        let Some(s) = session.as_mut() else {
            return (ms(started), Ok(()));
        };
        let call_start = Instant::now();
        let r = s.sample(m, deadline).await;
        if let Err(f) = &r {
            if ends_session(&f.reason) {
                if let Some(s) = session.take() {
                    s.close().await;
                }
            }
        }
        (ms(call_start), r)
    }

    async fn close(self) {
        for (_, s) in self.targets {
            if let Some(s) = s {
                s.close().await;
            }
        }
    }
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

fn to_sample(r: &Result<(), crate::probe::Failure>, latency_ms: f64) -> Sample {
    Sample {
        ok: r.is_ok(),
        latency_ms,
        error: r.as_ref().err().map(|f| f.detail.clone()),
        reason: r.as_ref().err().map(|f| f.reason.to_string()),
        at_ms: None,
        notice: None,
    }
}

async fn probe(
    p: &Probe,
    i: usize,
    urls: &[String],
    trace: Option<&str>,
) -> Result<ProbeRecord, String> {
    let mut sampler = Sampler::new(p, i, urls, trace);
    let mut samples = Vec::new();
    // With a fleet, at least one sample per relay.
    let count = p.samples.unwrap_or(20).max(urls.len() as u32);
    for n in 0..count {
        let (latency, r) = sampler.sample().await;
        // The first sample of each target opens its session: a target that cannot be
        // reached at all is brownout unable to check, not a steady state missed.
        if (n as usize) < urls.len() {
            if let Err(f) = &r {
                if matches!(
                    f.reason,
                    FailureReason::ConnectionRefused
                        | FailureReason::Dns
                        | FailureReason::Tls
                        | FailureReason::HttpStatus { .. }
                        | FailureReason::InitializeFailed { .. }
                ) {
                    return Err(format!(
                        "probe `{}`: cannot open a session: {} ({})",
                        p.call.tool, f.reason, f.detail
                    ));
                }
            }
        }
        samples.push(to_sample(&r, latency));
    }
    sampler.close().await;
    Ok(judge(p, samples))
}

/// Where the `during: true` probes send their samples, and how they are scheduled.
pub struct During {
    /// The run's clock: samples are stamped in milliseconds since it.
    pub origin: Instant,
    /// The experiment's seed: the same seed, the same jittered schedule.
    pub seed: u64,
}

/// Start the `during: true` probes: each samples every `interval` (±10 %, from the seed)
/// until its task is aborted, sending (probe index, sample). Alerts and recovery notices
/// are marked on the sample that decided them, and POSTed to the probe's webhook.
pub fn continuous(
    probes: &[Probe],
    urls: &Endpoints,
    during: &During,
    tx: mpsc::UnboundedSender<(usize, Sample)>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let endpoints_trace = urls.trace.clone();
    probes
        .iter()
        .enumerate()
        .filter(|(_, p)| p.during)
        .map(|(i, p)| {
            let (p, urls, tx) = (p.clone(), urls.probe_urls(p), tx.clone());
            let trace = endpoints_trace.clone();
            let (origin, seed) = (during.origin, during.seed);
            tokio::spawn(async move {
                let opts = MonitorOptions {
                    interval: p
                        .interval
                        .as_ref()
                        .map(|d| d.get())
                        .filter(|d| !d.is_zero())
                        .unwrap_or(Duration::from_secs(1)),
                    alert_after: p.alert_after.unwrap_or(2),
                    p95: p
                        .alert_p95
                        .as_deref()
                        .and_then(|t| Tolerance::parse(t).ok()),
                    window: p.window.unwrap_or(10) as usize,
                    count: None,
                    seed,
                    stagger: false,
                };
                let mut tracker = Tracker::new(i, p.call.tool.clone(), &opts);
                let mut sampler = Sampler::new(&p, i, &urls, trace.as_deref());
                let start = tokio::time::Instant::now();
                for (n, offset) in Schedule::new(&opts, &p.call.tool, i).enumerate() {
                    let at = start + offset;
                    // A sample slower than the interval delays the next; missed slots are
                    // skipped, not run back to back.
                    if at < tokio::time::Instant::now() && n > 0 {
                        continue;
                    }
                    tokio::time::sleep_until(at).await;
                    let (latency, r) = sampler.sample().await;
                    let mut sample = to_sample(&r, latency);
                    sample.at_ms = Some(ms(origin));
                    let result = ProbeResult {
                        ok: r.is_ok(),
                        target: p.call.tool.clone(),
                        failure: sample.reason.clone(),
                        failure_reason: r.as_ref().err().map(|f| f.reason.clone()),
                        phases: Vec::new(),
                        at_ms: unix_ms(),
                        total_ms: latency,
                        detail: sample.error.clone().unwrap_or_default(),
                    };
                    let (_, event) = tracker.observe(&result);
                    let notice = match &event {
                        Some(MonitorEvent::Alert(n)) | Some(MonitorEvent::Recovery(n)) => Some(n),
                        _ => None,
                    };
                    if let Some(n) = notice {
                        sample.notice = Some(n.event.to_string());
                        if let Some(hook) = &p.webhook {
                            let (hook, n) = (hook.clone(), n.clone());
                            tokio::spawn(async move {
                                crate::probe::alert::send(crate::probe::client(), &hook, &n).await;
                            });
                        }
                    }
                    if tx.send((i, sample)).is_err() {
                        break;
                    }
                }
                sampler.close().await;
            })
        })
        .collect()
}

fn unix_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
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
