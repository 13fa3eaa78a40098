//! The live part of a run: load events in, gates evaluated on every completed call and at
//! least every 100 ms, SLIs kept per phase and per second, a progress line per second.

use super::gates::{self, GateStatus, GateView, Watch};
use super::journal::{Acc, Sample, Second};
use super::loadgen::Event;
use brownout_core::event::Outcome;
use brownout_core::slo::Kind;
use std::io::Write;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

/// The gate evaluation period when no call completes.
pub const TICK: Duration = Duration::from_millis(100);

/// The most calls a phase keeps one by one (the baseline, for calibration): beyond it the
/// calls are counted in the phase's SLIs but not kept, so a long baseline under heavy load
/// cannot grow the runner without bound.
pub const MAX_KEPT_CALLS: usize = 100_000;

/// How a phase ended.
pub enum End {
    /// Its time ran out (or, in recovery, it recovered).
    Done,
    /// A gate breached; its state and every gate's at that evaluation.
    Breach(GateView, Vec<GateView>),
    Interrupted,
    /// The load could not run (no session could start).
    Trouble(String),
    /// A `during: true` probe missed its tolerance in a stage.
    Deviated(String),
}

/// The state shared by every phase of a run.
pub struct Live {
    pub origin: Instant,
    pub watch: Watch,
    pub events: mpsc::UnboundedReceiver<Event>,
    /// Samples of the `during: true` probes.
    pub probe_samples: Option<mpsc::UnboundedReceiver<(usize, Sample)>>,
    /// Every sample of the `during: true` probes so far, whatever the phase.
    pub all_samples: Vec<Sample>,
    pub signals: watch::Receiver<u32>,
    pub series: Vec<Second>,
    second: Acc,
    second_start: f64,
    /// The series' current span (see `span_ms`).
    span: Acc,
    span_start: f64,
    pub progress: bool,
    last_progress: Option<Instant>,
    /// Calls seen.
    pub calls: u64,
    pub last_states: Vec<GateView>,
    /// The live state for a watcher (`brownout run --status FILE`).
    pub status: Option<super::status::StatusFile>,
    /// The length of a span of the journal's series ([`series_span_ms`]).
    pub span_ms: f64,
}

/// The series' span for a run planned to last `planned`: a second for a minute or more,
/// else about a sixtieth of the run, at least 100 ms (in steps of 100 ms), so a short run's
/// chart still shows where things happened.
pub fn series_span_ms(planned: Duration) -> f64 {
    let ms = planned.as_secs_f64() * 1000.0 / 60.0;
    ((ms / 100.0).ceil() * 100.0).clamp(100.0, 1000.0)
}

/// What a phase collects.
#[derive(Default)]
pub struct Collected {
    pub acc: Acc,
    pub changes: Vec<GateView>,
    /// Samples of the `during: true` probes, by probe index.
    pub probes: std::collections::BTreeMap<usize, Vec<Sample>>,
    /// Robustness ρ over the phase's evaluations with enough samples.
    pub robustness: Option<f64>,
    /// Keep every call and count tasks (the baseline: the simulator is calibrated on it).
    pub keep_calls: bool,
    pub calls: Vec<brownout_core::slo::CallObservation>,
    pub tasks: u64,
}

impl Live {
    pub fn new(
        origin: Instant,
        watch: Watch,
        events: mpsc::UnboundedReceiver<Event>,
        signals: watch::Receiver<u32>,
        progress: bool,
    ) -> Live {
        Live {
            origin,
            watch,
            events,
            probe_samples: None,
            all_samples: Vec::new(),
            signals,
            series: Vec::new(),
            second: Acc::default(),
            second_start: 0.0,
            span: Acc::default(),
            span_start: 0.0,
            progress,
            last_progress: None,
            calls: 0,
            last_states: Vec::new(),
            status: None,
            span_ms: 1000.0,
        }
    }

    pub fn now_ms(&self) -> f64 {
        self.origin.elapsed().as_secs_f64() * 1000.0
    }

    /// Run one phase for `duration` (or, with `until`, until it says the phase is done).
    /// `breach_ends` says whether a breach ends the phase (not in recovery).
    pub async fn phase(
        &mut self,
        name: &str,
        duration: Duration,
        out: &mut Collected,
        breach_ends: bool,
        mut until: impl FnMut(&[GateView], f64, Option<f64>, u64) -> bool,
    ) -> End {
        let deadline = tokio::time::Instant::now() + duration;
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            // Checked here too: under a steady stream of calls the event branch is always
            // ready, and a biased select would never reach the deadline's.
            if tokio::time::Instant::now() >= deadline {
                return End::Done;
            }
            tokio::select! {
                biased;
                _ = self.signals.changed() => return End::Interrupted,
                ev = self.events.recv() => match ev {
                    Some(Event::Call(mut c)) => {
                        c.at_ms = self.now_ms();
                        self.calls += 1;
                        let ok = c.outcome == Outcome::Ok && !c.timed_out;
                        out.acc.add(ok, c.latency_ms);
                        self.second.add(ok, c.latency_ms);
                        self.span.add(ok, c.latency_ms);
                        self.watch.observe_call(&c);
                        if out.keep_calls && out.calls.len() < MAX_KEPT_CALLS {
                            out.calls.push(c);
                        }
                    }
                    Some(Event::Task(mut t)) => {
                        t.at_ms = self.now_ms();
                        out.tasks += 1;
                        self.watch.observe_task(&t);
                    }
                    Some(Event::Taint { tool, mark, n }) => {
                        let at = self.now_ms();
                        for _ in 0..n {
                            self.watch.observe_taint(at, Some(&tool), mark);
                        }
                    }
                    Some(Event::Reading { sli, value }) => {
                        let at = self.now_ms();
                        self.watch.observe_reading(at, sli, value);
                    }
                    Some(Event::Trouble(t)) => return End::Trouble(t),
                    None => {
                        tokio::time::sleep_until(deadline.min(tokio::time::Instant::now() + TICK)).await;
                    }
                },
                Some((i, sample)) = next_sample(&mut self.probe_samples) => {
                    self.all_samples.push(sample.clone());
                    out.probes.entry(i).or_default().push(sample);
                    continue;
                }
                _ = tick.tick() => {}
                _ = tokio::time::sleep_until(deadline) => return End::Done,
            }
            let now_ms = self.now_ms();
            let states = self.watch.evaluate(now_ms);
            out.changes
                .extend(states.iter().filter(|s| s.changed).cloned());
            for st in states
                .iter()
                .filter(|s| s.status != GateStatus::Insufficient)
            {
                if let (Some(v), Some(g)) = (st.value, self.watch.gates().nth(st.index)) {
                    let m = brownout_core::slo::robustness::margin(g, v);
                    out.robustness = Some(out.robustness.map_or(m, |r: f64| r.min(m)));
                }
            }
            self.roll_second(name, now_ms);
            self.show(name, deadline, &states);
            if let Some(b) = gates::any_breached(&states).filter(|_| breach_ends) {
                let b = b.clone();
                self.last_states = states.clone();
                return End::Breach(b, states);
            }
            let err = self.current_second_error_rate();
            let done = until(&states, now_ms, err, self.calls);
            self.last_states = states;
            if done {
                return End::Done;
            }
        }
    }

    /// Run `work` (the rollbacks) while draining the load's events, so the queue between
    /// the load and the runner does not grow while nothing else reads it: calls are counted,
    /// probe samples kept; no gate is judged and signals are left to `work`.
    pub async fn drain_during<T>(&mut self, work: impl std::future::Future<Output = T>) -> T {
        tokio::pin!(work);
        loop {
            tokio::select! {
                out = &mut work => return out,
                ev = self.events.recv() => match ev {
                    Some(Event::Call(_)) => self.calls += 1,
                    Some(_) => {}
                    // The load is gone: nothing left to drain.
                    None => return work.await,
                },
                Some((_, sample)) = next_sample(&mut self.probe_samples) => {
                    self.all_samples.push(sample);
                }
            }
        }
    }

    /// After the faults left at `left_ms`, keep the run (and its `during: true` probes)
    /// going until a probe passes and no alert is left open, at most `limit`: the journal
    /// then has the probes' time to recover and the recovery notice.
    pub async fn until_probes_back(&mut self, left_ms: f64, limit: Duration) {
        let until = Instant::now() + limit;
        let mut c = Collected::default();
        while !self.probes_back(left_ms) && Instant::now() < until {
            let step = self
                .phase("recovery", TICK * 2, &mut c, false, |_, _, _, _| false)
                .await;
            if !matches!(step, End::Done) {
                break;
            }
        }
    }

    fn probes_back(&self, left_ms: f64) -> bool {
        let after = || {
            self.all_samples
                .iter()
                .filter(|s| s.at_ms.is_some_and(|t| t > left_ms))
        };
        let passed = after().any(|s| s.ok);
        let open = self
            .all_samples
            .iter()
            .rev()
            .find_map(|s| s.notice.as_deref())
            == Some("alert");
        passed && !open
    }

    /// The error rate of the second in progress (`None` without calls).
    pub fn current_second_error_rate(&self) -> Option<f64> {
        self.second.error_rate()
    }

    /// Close the series' span and the current second when their time is up (the second,
    /// whose error rate recovery judges, stays a second whatever the span).
    fn roll_second(&mut self, phase: &str, now_ms: f64) {
        let span = self.span_ms;
        if now_ms - self.span_start >= span {
            self.series.push(Second {
                t_ms: self.span_start,
                width_ms: span,
                phase: phase.to_string(),
                slis: std::mem::take(&mut self.span).slis(),
            });
            self.span_start = (now_ms / span).floor() * span;
        }
        if now_ms - self.second_start >= 1000.0 {
            self.second = Acc::default();
            self.second_start = (now_ms / 1000.0).floor() * 1000.0;
        }
    }

    fn show(&mut self, name: &str, deadline: tokio::time::Instant, states: &[GateView]) {
        if let Some(s) = self.status.as_mut() {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            s.update(name, left, self.calls, states, false);
        }
        if !self.progress
            || self
                .last_progress
                .is_some_and(|t| t.elapsed() < Duration::from_secs(1))
        {
            return;
        }
        self.last_progress = Some(Instant::now());
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let kinds: Vec<Kind> = self.watch.gates().map(|g| g.sli.kind()).collect();
        let gates: Vec<String> = states
            .iter()
            .map(|s| {
                let show = |v: f64| match kinds.get(s.index) {
                    Some(Kind::Ratio) => format!("{:.2}%", v * 100.0),
                    Some(Kind::Latency) => format!("{v:.0}ms"),
                    _ => format!("{v:.2}"),
                };
                let v = s.value.map_or("—".to_string(), show);
                let status = format!("{:?}", s.status).to_lowercase();
                format!("{}: {v} vs {} ({status})", s.gate, show(s.limit))
            })
            .collect();
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "brownout: [{name}] {:.0}s left · {} calls · {}",
            left.as_secs_f64(),
            self.calls,
            gates.join(" · ")
        );
    }
}

async fn next_sample(
    rx: &mut Option<mpsc::UnboundedReceiver<(usize, Sample)>>,
) -> Option<(usize, Sample)> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_run_is_drawn_in_finer_spans() {
        assert_eq!(series_span_ms(Duration::from_secs(3)), 100.0);
        assert_eq!(series_span_ms(Duration::from_secs(30)), 500.0);
        assert_eq!(series_span_ms(Duration::from_secs(600)), 1000.0);
    }
    use brownout_core::slo::CallObservation;

    fn call() -> Event {
        Event::Call(CallObservation {
            at_ms: 0.0,
            method: "tools/call".into(),
            tool: Some("echo".into()),
            outcome: Outcome::Ok,
            latency_ms: 1.0,
            correct: true,
            timed_out: false,
            attempts: 1,
        })
    }

    /// Calls that end while the runner does other work (the simulator's prediction,
    /// rollbacks) are drained then, not left queued for the next phase to count as its own
    /// (a canary of 759 calls "in 18 ms"), and the queue does not grow meanwhile.
    #[tokio::test]
    async fn events_that_arrive_during_other_work_are_drained_not_left_for_the_next_phase() {
        let (tx, rx) = mpsc::unbounded_channel();
        let (_stx, srx) = watch::channel(0u32);
        let mut live = Live::new(Instant::now(), Watch::new(Vec::new()), rx, srx, false);
        let sender = tx.clone();
        let work = async move {
            for _ in 0..500 {
                let _ = sender.send(call());
                tokio::task::yield_now().await;
            }
            7
        };
        assert_eq!(live.drain_during(work).await, 7);
        // Whatever was still queued when the work ended is all that is left.
        let mut c = Collected::default();
        let end = live
            .phase(
                "next",
                Duration::from_millis(50),
                &mut c,
                false,
                |_, _, _, _| false,
            )
            .await;
        assert!(matches!(end, End::Done));
        assert!(
            c.acc.slis().calls <= 1,
            "{} calls leaked",
            c.acc.slis().calls
        );
        assert!(live.calls >= 499, "{}", live.calls);
        drop(tx);
    }
}
