//! `brownout run`: guardrails, steady state before, baseline, stages under live gates,
//! removal of the faults (always), rollbacks, recovery, steady state after, the journal.
//!
//! Whatever happens after the target is reached — completion, a breach, a signal, an error
//! of brownout's own — the faults are removed before anything else, then the user's
//! rollbacks run, every one to its own timeout (a signal meanwhile is recorded, not obeyed).

use super::detect::detect;
use super::gates::Watch;
use super::journal::{Breach, Journal, Phase, StageRecord, Status};
use super::load::{load_file, Loaded};
use super::loadgen::LoadRun;
use super::phase::{Collected, End, Live};
use super::policy::{self, Policy};
use super::recovery::{recover, Removal};
use super::rollback;
pub use super::run_args::{Outcome, RunArgs};
use super::run_record::{finish, new_journal, print_plan};
use super::steady;
use super::target::Target;
use crate::load::trace::CallTracer;
use brownout_relay::otlp::Otlp;
use std::io::IsTerminal;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

/// The longest wait for the load's first call before the baseline starts.
const WARM_UP: Duration = Duration::from_secs(60);

/// Run an experiment; the exit code (0 completed, 1 deviated or aborted, 2 bad input,
/// 3 refused, 4 failed or not run, 130 interrupted).
pub fn run(a: RunArgs) -> anyhow::Result<i32> {
    let x = match load_file(&a.file) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("{e}");
            return Ok(2);
        }
    };
    Ok(run_loaded(x, &a)?.map_or(2, |o| o.code))
}

/// Run an experiment already loaded (a GameDay's, say); `None` when the policy file is bad
/// input (said on stderr), else the outcome.
pub fn run_loaded(mut x: Loaded, a: &RunArgs) -> anyhow::Result<Option<Outcome>> {
    let policy = match &a.policy {
        None => Policy::default(),
        Some(p) => {
            let text = match brownout_relay::input::read_document(p) {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("{}: cannot read the policy: {}", p.display(), e.reason());
                    return Ok(None);
                }
            };
            match Policy::from_str_named(&text, &p.display().to_string()) {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("{e}");
                    return Ok(None);
                }
            }
        }
    };
    // Every file the run will write is checked before anything reaches the target.
    let outputs = a
        .journal
        .iter()
        .map(|p| ("journal", p.as_path()))
        .chain(a.keep.report.iter().map(|r| ("report", r.file.as_path())))
        .chain(a.watch.status.iter().map(|p| ("status file", p.as_path())));
    if let Err(e) = super::outputs::check_all(outputs) {
        eprintln!("brownout run: {e}; nothing was sent to the target");
        return Ok(None);
    }
    if let Some(seed) = a.seed {
        x.plan_doc["seed"] = seed.into();
        x.plan.seed = seed;
    }
    let mut j = new_journal(&x, a.dry_run);
    if let Some(id) = &a.watch.run_id {
        j.run_id = id.clone();
    }
    j.gameday_id = a.gameday.clone();
    let store = if a.keep.no_store {
        Err("no store (--no-store)")
    } else {
        Ok(a.keep.store.as_deref())
    };
    j.baselines = super::baseline::resolve(&mut x, store);
    if !a.json && !a.quiet {
        for r in &j.baselines {
            println!("tolerance: {}", super::baseline::describe(r));
        }
    }
    let checked = policy::check(&x, &policy).and_then(|()| {
        super::history::enforce_or_skip(&x, &policy, &a.keep, a.ladder_skip_approved_by.as_deref())
            .map(|skip| j.ladder_skip = skip)
    });
    if let Err(r) = checked {
        j.reason = r.to_string();
        j.refusal = Some(r);
        return finish(j, Status::Refused, a).map(Some);
    }
    if let Some(w) = super::gates::silent_blind_spot(&x.plan, &x.gates) {
        eprintln!("brownout: warning: {w}");
    }
    if a.dry_run {
        // With --json, stdout carries the journal alone.
        if !a.json && !a.quiet {
            print_plan(&x);
        }
        j.reason = "dry run: checked, nothing sent to the target".into();
        return finish(j, Status::Completed, a).map(Some);
    }
    // One run per target and per relay: held until this function returns (or the process
    // dies); a relay joining a DNS fleet is locked as it joins.
    let lock = match super::lock::acquire_within(
        &x,
        &super::lock::dir(&a.keep),
        &j.run_id,
        a.wait_for_target,
    ) {
        Ok(l) => std::sync::Arc::new(l),
        Err(busy) => {
            let r = policy::Refusal {
                rule: "target_lock".into(),
                detail: busy.to_string(),
            };
            j.reason = r.to_string();
            j.refusal = Some(r);
            return finish(j, Status::Refused, a).map(Some);
        }
    };
    let progress = !a.json && !a.quiet && std::io::stderr().is_terminal();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let status = rt.block_on(live(&x, &mut j, progress, &a.watch, a.otlp.as_ref(), &lock));
    rt.shutdown_timeout(Duration::from_secs(2));
    finish(j, status, a).map(Some)
}

/// The run from the target's start to its stop.
async fn live(
    x: &Loaded,
    j: &mut Journal,
    progress: bool,
    w: &super::stop::Watched,
    otlp: Option<&Otlp>,
    lock: &std::sync::Arc<super::lock::TargetLock>,
) -> Status {
    let origin = Instant::now();
    let mut sig = super::stop::signals(w.stop_on_stdin_eof);
    let run = super::target::RunOf {
        id: j.run_id.clone(),
        lock: Some(std::sync::Arc::clone(lock)),
    };
    let mut target = match Target::start(x, otlp, &run).await {
        Ok(t) => t,
        Err(e) => {
            j.reason = format!("cannot reach the target: {e}");
            return Status::Failed;
        }
    };
    j.target.url = Some(target.url.clone());
    // With --otlp, the probes' requests hang under the run's root span too.
    if otlp.is_some() {
        target.endpoints.trace = Some(brownout_relay::otlp::context::traceparent(
            &super::otel::root(&j.run_id),
        ));
    }
    let status_file = w.status.as_ref().map(|p| {
        let mut s = super::status::StatusFile::new(p.clone(), j.run_id.clone());
        s.injections = target.injections_now();
        s
    });
    // The load's calls hang under the run's root span (`super::otel::root`).
    let trace = otlp.map(|o| CallTracer::new(o.clone(), super::otel::root(&j.run_id)));
    let status = with_target(
        x,
        j,
        &target,
        origin,
        progress,
        &mut sig,
        status_file,
        trace,
    )
    .await;
    target.stop().await;
    status
}

#[allow(clippy::too_many_arguments)] // the run's parts, each used once; a struct would only rename them
async fn with_target(
    x: &Loaded,
    j: &mut Journal,
    target: &Target,
    origin: Instant,
    progress: bool,
    sig: &mut watch::Receiver<u32>,
    status_file: Option<super::status::StatusFile>,
    trace: Option<CallTracer>,
) -> Status {
    let before = tokio::select! {
        r = steady::check(&x.spec.steady_state, &target.endpoints) => r,
        _ = sig.changed() => {
            j.reason = "interrupted during the steady-state check; no fault was applied".into();
            return Status::Interrupted;
        }
    };
    match before {
        Err(e) => {
            j.reason = e;
            return Status::Failed;
        }
        Ok(ss) if !ss.met => {
            let misses: Vec<String> = ss.probes.iter().flat_map(|p| p.misses.clone()).collect();
            j.reason = format!(
                "steady state not met before: {}; no fault was injected",
                misses.join("; ")
            );
            j.steady_state_before = Some(ss);
            return Status::NotRun;
        }
        Ok(ss) => j.steady_state_before = Some(ss),
    }
    let sessions = x.spec.load.sessions.unwrap_or(16);
    let (tx, rx) = mpsc::unbounded_channel();
    let silent_source = target.silent_source();
    let silent_feed = super::silent::feed(silent_source.clone(), tx.clone());
    let health_feed = super::health::Source::for_target(&x.spec.target, &x.gates)
        .map(|s| super::health::feed(s, tx.clone()));
    let load = LoadRun::start(
        &x.workload,
        target.endpoints.load_target(),
        sessions,
        trace,
        tx,
    );
    let watch = Watch::new(x.gates.clone());
    let mut live = Live::new(origin, watch, rx, sig.clone(), progress);
    live.status = status_file;
    let planned = x
        .spec
        .baseline
        .as_ref()
        .map(|b| b.get())
        .unwrap_or_default()
        + x.spec
            .method
            .iter()
            .map(|s| s.duration.get())
            .sum::<Duration>();
    live.span_ms = super::phase::series_span_ms(planned);
    let (ptx, prx) = mpsc::unbounded_channel();
    live.probe_samples = Some(prx);
    let during = steady::During {
        origin,
        seed: x.plan.seed,
    };
    let probing = steady::continuous(&x.spec.steady_state, &target.endpoints, &during, ptx);
    // The baseline starts once the load runs: its sessions may take a while to start.
    let mut warm = Collected::default();
    let mut removal = None;
    let (end, stage) = match live
        .phase("warm-up", WARM_UP, &mut warm, false, |_, _, _, calls| {
            calls > 0
        })
        .await
    {
        End::Done if live.calls == 0 => (
            End::Trouble(format!("the load made no call within {WARM_UP:?}")),
            "warm-up".to_string(),
        ),
        End::Done => drive(x, j, target, &mut live, &mut removal).await,
        other => (other, "warm-up".to_string()),
    };
    // The faults leave first, whatever happened.
    let removal = match removal {
        Some(r) => r,
        None => Removal::now(target, origin).await,
    };
    let left_ms = removal.at_ms;
    let removal_failed = (!removal.record.ok).then(|| removal.record.detail.clone());
    j.rollbacks.push(removal.record);
    j.fleet = target.fleet_records(origin);
    let mut status = match &end {
        End::Done => Status::Completed,
        End::Breach(b, window) => {
            j.reason = format!(
                "gate `{}` breached during `{stage}`: {} against {}; faults removed",
                b.gate,
                brownout_store::report::view::gate_value(&b.gate, b.value),
                brownout_store::report::view::gate_value(&b.gate, Some(b.limit))
            );
            j.breach = Some(Breach {
                at_ms: b.since_ms,
                gate: b.gate.clone(),
                value: b.value,
                limit: b.limit,
                samples: b.samples,
                stage: stage.clone(),
                window: window.clone(),
                last_fault_left_ms: left_ms,
                abort_latency_ms: left_ms - b.since_ms,
            });
            Status::Aborted
        }
        End::Interrupted => {
            j.reason = format!("interrupted during `{stage}`; faults removed");
            Status::Interrupted
        }
        End::Trouble(t) => {
            j.reason = t.clone();
            Status::Failed
        }
        End::Deviated(why) => {
            j.reason = why.clone();
            Status::Deviated
        }
    };
    if let Some(why) = removal_failed {
        // A run that ended well has no reason yet: say what happened before the removal.
        let before = match j.reason.as_str() {
            "" => "every stage ran",
            r => r,
        };
        j.reason = format!("{before}; and the faults could not be removed: {why} (a remote relay drops each when its lease lapses)");
        status = Status::Failed;
    }
    if let Some(s) = live.status.as_mut() {
        s.stage = None;
        let states = live.last_states.clone();
        s.update("rollbacks", Duration::ZERO, live.calls, &states, true);
    }
    // The user's rollbacks: every one, each to its own timeout; signals are recorded.
    // The load's events are drained meanwhile, so its queue stays bounded.
    for r in &x.spec.rollbacks {
        let rec = live
            .drain_during(rollback::run_one(r, &x.dir, origin, sig))
            .await;
        j.rollbacks.push(rec);
    }
    if matches!(
        status,
        Status::Completed | Status::Aborted | Status::Deviated
    ) {
        recover(x, j, &mut live, left_ms, &mut status).await;
        if !probing.is_empty() {
            let limit = x
                .spec
                .recovery
                .as_ref()
                .map_or(Duration::from_secs(30), |r| r.within.get());
            live.until_probes_back(left_ms, limit).await;
        }
    }
    load.stop().await;
    silent_feed.abort();
    health_feed.iter().for_each(|h| h.abort());
    let silent_tools = silent_source.read().await;
    j.silent = silent_tools.as_ref().map(super::silent::total);
    probing.iter().for_each(|p| p.abort());
    j.tool_calls = target.tool_calls().await;
    if !target.endpoints.servers.is_empty() {
        let lines = target.tool_lines().await;
        j.servers = Some(super::servers::record(
            &target.endpoints,
            lines.as_ref(),
            silent_tools.as_ref(),
        ));
    }
    if let Some(first) = j.stages.first().filter(|_| !probing.is_empty()) {
        let samples: Vec<_> = live.all_samples.iter().collect();
        j.detection = Some(detect(&samples, first.start_ms, Some(left_ms)));
    }
    j.gates = live.watch.summaries();
    j.robustness = live.watch.robustness();
    j.series = std::mem::take(&mut live.series);
    if status == Status::Completed && !x.spec.steady_state.is_empty() {
        match steady::check(&x.spec.steady_state, &target.endpoints).await {
            Ok(ss) => {
                if !ss.met {
                    j.reason = "steady state not met after the faults left".into();
                    status = Status::Deviated;
                }
                j.steady_state_after = Some(ss);
            }
            Err(e) => {
                j.reason = format!("steady state after: {e}");
                status = Status::Failed;
            }
        }
    }
    if status == Status::Completed && j.reason.is_empty() {
        j.reason = "every stage ran with every gate holding; recovered".into();
    }
    if let Some(s) = live.status.as_mut() {
        s.stage = None;
        let states = live.last_states.clone();
        s.update("ended", Duration::ZERO, live.calls, &states, true);
    }
    status
}

/// The baseline and the stages; the end and the phase it happened in.
async fn drive(
    x: &Loaded,
    j: &mut Journal,
    target: &Target,
    live: &mut Live,
    removal: &mut Option<Removal>,
) -> (End, String) {
    let mut predictions = Vec::new();
    if let Some(b) = &x.spec.baseline {
        let mut c = Collected {
            keep_calls: true,
            ..Collected::default()
        };
        let start_ms = live.now_ms();
        let end = live
            .phase("baseline", b.get(), &mut c, true, |_, _, _, _| false)
            .await;
        j.baseline = Some(Phase {
            start_ms,
            end_ms: live.now_ms(),
            slis: c.acc.slis(),
        });
        if !matches!(end, End::Done) {
            return (end, "baseline".into());
        }
        let secs = (live.now_ms() - start_ms) / 1000.0;
        // The simulator runs off the async threads, and the load's events are drained
        // meanwhile: calls that end before the first stage's faults are on are counted in
        // no stage (before, they piled up and landed in the canary: 759 calls "in 18 ms").
        let routes = target.endpoints.routes.clone();
        let (xc, calls, tasks) = (x.clone(), std::mem::take(&mut c.calls), c.tasks);
        let work = tokio::task::spawn_blocking(move || {
            super::predict::before_stages(&xc, &calls, tasks, secs, &routes)
        });
        if let Ok((cal, p)) = live.drain_during(work).await {
            (j.calibration, predictions) = (Some(cal), p);
        }
    }
    for (i, st) in x.spec.method.iter().enumerate() {
        let share = st.sessions.fraction().unwrap_or(0.0);
        if let Some(s) = live.status.as_mut() {
            s.stage = Some((i + 1, share));
        }
        let (doc, plan) = match x.stage_plan(share) {
            Ok(p) => p,
            Err(e) => return (End::Trouble(e.to_string()), st.stage.clone()),
        };
        let before = target.injections().await;
        let silent_source = target.silent_source();
        let silent_before = silent_source.read().await;
        let start_ms = live.now_ms();
        if let Err(e) = target.apply(plan.clone(), &doc, st).await {
            return (
                End::Trouble(format!("cannot apply the faults: {e}")),
                st.stage.clone(),
            );
        }
        let mut c = Collected::default();
        let mut left = st.duration.get();
        let mut end = End::Done;
        while !left.is_zero() {
            let chunk = target.renew_every().map_or(left, |r| r.min(left));
            end = live
                .phase(&st.stage, chunk, &mut c, true, |_, _, _, _| false)
                .await;
            left = left.saturating_sub(chunk);
            if !matches!(end, End::Done) {
                // A breach, a signal, trouble: the faults leave before anything else.
                *removal = Some(Removal::now(target, live.origin).await);
                break;
            }
            if let (false, Some(_)) = (left.is_zero(), target.renew_every()) {
                if let Err(e) = target.apply(plan.clone(), &doc, st).await {
                    end = End::Trouble(format!("cannot renew the faults: {e}"));
                    break;
                }
            }
        }
        let after = target.injections().await;
        let silent = match (silent_before, silent_source.read().await) {
            (Some(b), Some(a)) => Some(super::silent::total(&a).since(&super::silent::total(&b))),
            _ => None,
        };
        let injections = super::injections::stage(&before, &after);
        let injections_unread = super::injections::unread(&after, live.origin);
        for u in &injections_unread {
            eprintln!(
                "brownout: stage `{}`: relay {}'s injections are as of its last reading: {}",
                st.stage, u.relay, u.detail
            );
        }
        let probes: Vec<_> = c
            .probes
            .iter()
            .filter_map(|(i, samples)| {
                x.spec
                    .steady_state
                    .get(*i)
                    .map(|p| steady::judge(p, samples.clone()))
            })
            .collect();
        let missed: Vec<String> = probes
            .iter()
            .filter(|p| !p.met)
            .map(|p| format!("probe `{}`: {}", p.tool, p.misses.join(", ")))
            .collect();
        if matches!(end, End::Done) && !missed.is_empty() {
            end = End::Deviated(format!(
                "during `{}`: {}; no wider stage",
                st.stage,
                missed.join("; ")
            ));
            *removal = Some(Removal::now(target, live.origin).await);
        }
        // Within the stage: its faults from its start; removed when it ended the run.
        let detection = (!c.probes.is_empty()).then(|| {
            let samples: Vec<_> = c.probes.values().flatten().collect();
            detect(&samples, start_ms, removal.as_ref().map(|r| r.at_ms))
        });
        let mut record = StageRecord {
            prediction: None,
            robustness: c.robustness,
            detection,
            probes,
            stage: st.stage.clone(),
            share,
            start_ms,
            end_ms: live.now_ms(),
            completed: matches!(end, End::Done),
            injections,
            injections_unread,
            slis: c.acc.slis(),
            gate_changes: c.changes,
            silent,
        };
        super::predict::attach(&mut record, predictions.get(i).cloned().flatten());
        j.stages.push(record);
        if !matches!(end, End::Done) {
            return (end, st.stage.clone());
        }
    }
    (End::Done, String::new())
}
