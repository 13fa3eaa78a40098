//! Monitor mode: probe targets forever (or N times) on a jittered, seeded schedule, keep
//! rolling percentiles, and turn failures into incidents — one alert when `alert_after`
//! probes in a row fail or the rolling P95 breaks its tolerance, one recovery notice when
//! probes pass again. Events arrive on a channel ([`Monitor::next`]).

use super::rolling::{Percentiles, Rolling};
use super::{run_once, FailureReason, ProbeResult, ProbeSpec};
use brownout_core::rng::{hash_str, mix, SplitMix};
use brownout_core::slo::tolerance::Tolerance;
use serde::Serialize;
use std::time::Duration;
use tokio::sync::mpsc;

/// How one target is watched.
#[derive(Debug, Clone)]
pub struct MonitorOptions {
    pub interval: Duration,
    /// Probes failing in a row that open an incident (default 2).
    pub alert_after: u32,
    /// The rolling P95 must meet this (e.g. `< 500ms`); breaking it opens an incident.
    pub p95: Option<Tolerance>,
    /// Probes in the rolling window (default 10).
    pub window: usize,
    /// Stop after this many probes (`None`: forever).
    pub count: Option<u64>,
    /// Seeds the jitter (±10 % of the interval) and the first probe's offset.
    pub seed: u64,
    /// Spread the first probes over one interval (many targets) instead of starting now.
    pub stagger: bool,
}

impl Default for MonitorOptions {
    fn default() -> MonitorOptions {
        MonitorOptions {
            interval: Duration::from_secs(10),
            alert_after: 2,
            p95: None,
            window: 10,
            count: None,
            seed: 0,
            stagger: false,
        }
    }
}

/// Why an incident opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    ConsecutiveFailures,
    P95,
}

/// An incident's alert or its recovery.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Notice {
    /// `alert` or `recovery`.
    pub event: &'static str,
    /// The target's position in the list the monitor watches.
    pub index: usize,
    pub target: String,
    pub cause: Cause,
    /// The last failure's reason (an alert), or the one that opened the incident (a
    /// recovery); `null` for a P95 incident whose probes passed.
    pub failure_reason: Option<FailureReason>,
    pub failure: Option<String>,
    pub detail: String,
    pub consecutive_failures: u32,
    pub percentiles: Option<Percentiles>,
    /// When it happened (ms since the Unix epoch: the probe that decided it).
    pub at_ms: f64,
    /// When the incident opened.
    pub incident_started_ms: f64,
    /// The incident's length (a recovery).
    pub duration_ms: Option<f64>,
}

/// What a monitor reports.
#[derive(Debug, Clone, PartialEq)]
pub enum MonitorEvent {
    /// A probe finished.
    Probe {
        index: usize,
        result: ProbeResult,
        percentiles: Option<Percentiles>,
    },
    Alert(Notice),
    Recovery(Notice),
    /// The target ran its `count` probes.
    Done {
        index: usize,
    },
}

/// Probes running in the background; dropping it stops them.
pub struct Monitor {
    rx: mpsc::Receiver<MonitorEvent>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Monitor {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Monitor {
    /// Start watching every target (on the current runtime).
    pub fn start(targets: Vec<(ProbeSpec, MonitorOptions)>) -> Monitor {
        let (tx, rx) = mpsc::channel(1024.max(targets.len() * 4));
        let tasks = targets
            .into_iter()
            .enumerate()
            .map(|(i, (spec, opts))| tokio::spawn(watch(i, spec, opts, tx.clone())))
            .collect();
        Monitor { rx, tasks }
    }

    /// The next event; `None` once every target is done.
    pub async fn next(&mut self) -> Option<MonitorEvent> {
        self.rx.recv().await
    }
}

/// The incident logic of one target, apart from time and I/O (unit-tested).
#[derive(Debug)]
pub struct Tracker {
    pub index: usize,
    pub target: String,
    opts_alert_after: u32,
    p95: Option<Tolerance>,
    rolling: Rolling,
    consecutive: u32,
    open: Option<Notice>,
}

impl Tracker {
    pub fn new(index: usize, target: String, opts: &MonitorOptions) -> Tracker {
        Tracker {
            index,
            target,
            opts_alert_after: opts.alert_after.max(1),
            p95: opts.p95.clone(),
            rolling: Rolling::new(opts.window),
            consecutive: 0,
            open: None,
        }
    }

    /// Take a probe's result; the alert or recovery it decides, if any.
    pub fn observe(&mut self, r: &ProbeResult) -> (Option<Percentiles>, Option<MonitorEvent>) {
        self.rolling.push(r.total_ms);
        self.consecutive = if r.ok { 0 } else { self.consecutive + 1 };
        let pct = self.rolling.percentiles();
        let slow = match (&self.p95, pct) {
            (Some(t), Some(p)) => !t.check_number(p.p95_ms),
            _ => false,
        };
        let failing = self.consecutive >= self.opts_alert_after;
        let notice = |event, cause, since: f64, base: Option<&Notice>| Notice {
            event,
            index: self.index,
            target: self.target.clone(),
            cause,
            failure_reason: r
                .failure_reason
                .clone()
                .or_else(|| base.and_then(|b| b.failure_reason.clone())),
            failure: r
                .failure
                .clone()
                .or_else(|| base.and_then(|b| b.failure.clone())),
            detail: r.detail.clone(),
            consecutive_failures: self.consecutive,
            percentiles: pct,
            at_ms: r.at_ms,
            incident_started_ms: since,
            duration_ms: base.map(|b| r.at_ms - b.incident_started_ms),
        };
        let event = match &self.open {
            None if failing || slow => {
                let cause = if failing {
                    Cause::ConsecutiveFailures
                } else {
                    Cause::P95
                };
                let n = notice("alert", cause, r.at_ms, None);
                self.open = Some(n.clone());
                Some(MonitorEvent::Alert(n))
            }
            Some(open) if r.ok && !failing && !slow => {
                let n = notice("recovery", open.cause, open.incident_started_ms, Some(open));
                self.open = None;
                Some(MonitorEvent::Recovery(n))
            }
            _ => None,
        };
        (pct, event)
    }

    pub fn in_incident(&self) -> bool {
        self.open.is_some()
    }
}

/// A target's probe times, as offsets from the monitor's start: the first within one
/// interval when staggered (else at 0), then every interval ±10 %. The same seed, target
/// and position give the same schedule.
#[derive(Debug, Clone)]
pub struct Schedule {
    rng: SplitMix,
    interval: f64,
    next: f64,
}

impl Schedule {
    pub fn new(opts: &MonitorOptions, target: &str, index: usize) -> Schedule {
        let mut rng = SplitMix::new(mix(opts.seed ^ hash_str(target) ^ index as u64));
        let interval = opts.interval.as_secs_f64();
        let next = if opts.stagger {
            interval * rng.unit()
        } else {
            0.0
        };
        Schedule {
            rng,
            interval,
            next,
        }
    }
}

impl Iterator for Schedule {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        let at = self.next;
        self.next += self.interval * (1.0 + 0.2 * (self.rng.unit() - 0.5));
        Some(Duration::from_secs_f64(at))
    }
}

async fn watch(
    index: usize,
    spec: ProbeSpec,
    opts: MonitorOptions,
    tx: mpsc::Sender<MonitorEvent>,
) {
    let mut tracker = Tracker::new(index, spec.target(), &opts);
    let start = tokio::time::Instant::now();
    let mut n = 0u64;
    for offset in Schedule::new(&opts, &spec.target(), index) {
        if opts.count.is_some_and(|c| n >= c) {
            let _ = tx.send(MonitorEvent::Done { index }).await;
            return;
        }
        // A probe slower than the interval delays the next; missed slots are skipped,
        // not run back to back.
        let at = start + offset;
        if at < tokio::time::Instant::now() && n > 0 {
            continue;
        }
        tokio::time::sleep_until(at).await;
        let result = run_once(&spec).await;
        n += 1;
        let (percentiles, event) = tracker.observe(&result);
        let probe = MonitorEvent::Probe {
            index,
            result,
            percentiles,
        };
        if tx.send(probe).await.is_err() {
            return;
        }
        if let Some(e) = event {
            if tx.send(e).await.is_err() {
                return;
            }
        }
    }
}

#[cfg(test)]
#[path = "monitor_tests.rs"]
mod tests;
