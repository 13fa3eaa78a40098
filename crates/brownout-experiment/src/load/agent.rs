//! Playing the workload: arrivals (open or closed loop), each task's steps of parallel
//! calls with think time and deadlines, and the client's resilience on every call — the
//! per-attempt timeout, retries with backoff and jitter (bounded or not, with a budget), the
//! outbound rate limiter and the per-tool circuit breaker. Retry, limiter and breaker
//! arithmetic is the simulator's own (`brownout_sim::sim`), in real time: a workload means
//! the same thing in `brownout sim` and in `brownout load`.

use super::chain;
use super::schedule::{call_rng, session_of, Arrivals, Fingerprint};
use super::session::{self, Session};
use super::stats::{LoadSummary, Tally};
use super::wire::{self, Answer};
use super::{LoadError, LoadEvent, LoadOptions, LoadTarget, STOP_GRACE};
use brownout_core::event::Outcome;
use brownout_core::slo::{CallObservation, TaskObservation};
use brownout_sim::chain::{Chain, Policy};
use brownout_sim::sim::breaker::Breaker;
use brownout_sim::sim::limiter::{Take, TokenBucket};
use brownout_sim::sim::retry::{backoff_ms, may_retry};
use brownout_sim::sim::Answer as SimAnswer;
use brownout_sim::workload::{Arrival, Client};
use brownout_sim::Workload;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Tasks when neither the workload nor the options say.
const DEFAULT_TASKS: u64 = 1000;

/// One call of a step, prepared once: its params are serialised here, not per attempt
/// (per task when it takes values from earlier results).
pub(super) struct PreparedCall {
    pub(super) tool: Arc<str>,
    /// The tool's advertised `outputSchema`: an `ok` answer that breaks it is not correct.
    schema: Option<Arc<jsonschema::Validator>>,
    pub(super) params: String,
    /// The arguments as written, and those of them taken from earlier results.
    pub(super) arguments: Option<serde_json::Map<String, serde_json::Value>>,
    pub(super) refs: Vec<brownout_sim::chain::FromRef>,
    pub(super) critical: bool,
    repeat: u32,
    /// The server it goes to, when the load reaches several (`super::routed`).
    server: usize,
}

struct PreparedStep {
    calls: Vec<PreparedCall>,
    deadline: Option<Duration>,
}

pub(super) struct Shared {
    steps: Vec<PreparedStep>,
    /// Who takes values from whom, and what the agent does with those results.
    chain: Chain,
    pub(super) policy: Policy,
    pub(super) rereads: AtomicU64,
    pub(super) gave_up: AtomicU64,
    missing_values: AtomicU64,
    client: Client,
    think: Option<Duration>,
    task_deadline: Option<Duration>,
    timeout: Duration,
    sessions: Vec<Session>,
    seed: u64,
    start: Instant,
    stop: CancellationToken,
    events: UnboundedSender<LoadEvent>,
    trace: Option<super::trace::CallTracer>,
    limiter: Option<Mutex<TokenBucket>>,
    breakers: Option<Mutex<HashMap<Arc<str>, Breaker>>>,
    tally: Mutex<Tally>,
    calls_made: AtomicU64,
    retries_made: AtomicU64,
    attempts: AtomicU64,
    limiter_rejections: AtomicU64,
    breaker_rejections: AtomicU64,
    /// Worst lag of a task's start behind its schedule, in µs.
    lag_us: AtomicU64,
}

fn ms(x: f64) -> Duration {
    Duration::from_secs_f64(x.max(0.0) / 1000.0)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    fn now_us(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    fn at_ms(&self) -> f64 {
        self.start.elapsed().as_secs_f64() * 1000.0
    }
}

pub(super) async fn run(
    workload: &Workload,
    target: LoadTarget,
    opts: LoadOptions,
    events: UnboundedSender<LoadEvent>,
) -> Result<LoadSummary, LoadError> {
    let n_sessions = opts.sessions.max(1);
    // With --otlp, the sessions' set-up (initialize, tools/list) joins the load's trace.
    let root = opts
        .trace
        .as_ref()
        .map(super::trace::CallTracer::root_traceparent);
    let sessions = session::open_all_traced(&target, n_sessions, root.as_deref()).await?;
    let schemas = match sessions.first() {
        Some(s) => s.schemas().await,
        None => Default::default(),
    };
    let routes = match (&target, sessions.first()) {
        (LoadTarget::Servers { servers }, Some(Session::Routed(r))) => {
            let names: Vec<String> = servers.iter().map(|(n, _)| n.clone()).collect();
            let tools: Vec<&str> = workload
                .steps
                .iter()
                .flat_map(|s| s.calls.iter().map(|c| c.tool.as_str()))
                .collect();
            match super::routed::routes(r, &names, &tools).await {
                Ok(r) => r,
                Err(e) => {
                    futures::future::join_all(sessions.iter().map(Session::close)).await;
                    return Err(e);
                }
            }
        }
        _ => Default::default(),
    };
    let seed = opts.seed.or(workload.seed).unwrap_or(0);
    let stop = opts.cancel.child_token();
    let steps = workload
        .steps
        .iter()
        .map(|s| PreparedStep {
            calls: s
                .calls
                .iter()
                .map(|c| PreparedCall {
                    tool: Arc::from(c.tool.as_str()),
                    schema: schemas.get(&c.tool).cloned(),
                    params: wire::call_params(&c.tool, c.arguments.as_ref()),
                    arguments: c.arguments.clone(),
                    refs: brownout_sim::chain::refs(c.arguments.as_ref()),
                    critical: c.critical.unwrap_or(true),
                    repeat: c.repeat.unwrap_or(1).max(1),
                    server: routes.get(&c.tool).copied().unwrap_or(0),
                })
                .collect(),
            deadline: s.deadline_ms.map(ms),
        })
        .collect();
    let c = &workload.client;
    let shared = Arc::new(Shared {
        steps,
        chain: Chain::of(&workload.steps),
        policy: c.agent.policy,
        rereads: AtomicU64::new(0),
        gave_up: AtomicU64::new(0),
        missing_values: AtomicU64::new(0),
        client: c.clone(),
        think: workload.think_ms.filter(|t| *t > 0.0).map(ms),
        task_deadline: workload.task_deadline_ms.map(ms),
        timeout: ms(c.timeout_ms.unwrap_or(30_000.0)),
        sessions,
        seed,
        start: Instant::now(),
        stop: stop.clone(),
        events,
        trace: opts.trace.clone(),
        limiter: c
            .rate_limiter
            .as_ref()
            .map(|l| Mutex::new(TokenBucket::new(l))),
        breakers: c.breaker.as_ref().map(|_| Mutex::new(HashMap::new())),
        tally: Mutex::new(Tally::default()),
        calls_made: AtomicU64::new(0),
        retries_made: AtomicU64::new(0),
        attempts: AtomicU64::new(0),
        limiter_rejections: AtomicU64::new(0),
        breaker_rejections: AtomicU64::new(0),
        lag_us: AtomicU64::new(0),
    });
    if let Some(d) = opts.duration {
        let stop = stop.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep(d) => stop.cancel(),
                _ = stop.cancelled() => {}
            }
        });
    }
    let limit = match opts.duration {
        Some(_) => u64::MAX,
        None => workload.tasks.unwrap_or(DEFAULT_TASKS),
    };
    let mut set = JoinSet::new();
    let fingerprint = match workload.arrival {
        Some(Arrival::Open { rate_per_s }) => {
            open_loop(&shared, &mut set, rate_per_s, limit, n_sessions).await
        }
        Some(Arrival::Closed { concurrency }) => {
            closed_loop(&shared, &mut set, concurrency, limit, n_sessions)
        }
        None => closed_loop(&shared, &mut set, 1, limit, n_sessions),
    };
    let drained = tokio::select! {
        _ = async { while set.join_next().await.is_some() {} } => true,
        _ = async { stop.cancelled().await; tokio::time::sleep(STOP_GRACE).await } => false,
    };
    if !drained {
        set.shutdown().await;
    }
    let elapsed = shared.start.elapsed().as_secs_f64();
    stop.cancel();
    futures::future::join_all(shared.sessions.iter().map(Session::close)).await;
    Ok(summary(&shared, elapsed, n_sessions, fingerprint))
}

async fn open_loop(
    shared: &Arc<Shared>,
    set: &mut JoinSet<()>,
    rate_per_s: f64,
    limit: u64,
    n_sessions: usize,
) -> Fingerprint {
    let mut fp = Fingerprint::default();
    for (k, at_ms) in (0..limit).zip(Arrivals::new(rate_per_s, shared.seed)) {
        let intended = shared.start + ms(at_ms);
        tokio::select! {
            _ = tokio::time::sleep_until(intended.into()) => {}
            _ = shared.stop.cancelled() => break,
        }
        let lag = intended.elapsed().as_micros() as u64;
        shared.lag_us.fetch_max(lag, Ordering::Relaxed);
        let session = session_of(k, n_sessions);
        fp.add(k, session, (at_ms * 1000.0) as u64);
        set.spawn(run_task(Arc::clone(shared), k, session, intended));
        // Reap finished tasks as we go: the set stays as large as the tasks in flight.
        while set.try_join_next().is_some() {}
    }
    fp
}

fn closed_loop(
    shared: &Arc<Shared>,
    set: &mut JoinSet<()>,
    concurrency: u32,
    limit: u64,
    n_sessions: usize,
) -> Fingerprint {
    let next = Arc::new(AtomicU64::new(0));
    let mut fp = Fingerprint::default();
    for agent in 0..u64::from(concurrency.max(1)) {
        let session = session_of(agent, n_sessions);
        fp.add(agent, session, 0);
        let (shared, next) = (Arc::clone(shared), Arc::clone(&next));
        set.spawn(async move {
            loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= limit || shared.stop.is_cancelled() {
                    break;
                }
                run_task(Arc::clone(&shared), k, session, Instant::now()).await;
            }
        });
    }
    fp
}

/// Sleep, unless the load stops first; false if it did.
async fn pause(shared: &Shared, d: Duration) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(d) => true,
        _ = shared.stop.cancelled() => false,
    }
}

async fn run_task(shared: Arc<Shared>, k: u64, session: usize, intended: Instant) {
    let task_deadline = shared.task_deadline.map(|d| intended + d);
    let mut ok = true;
    let mut ordinal = 0u64;
    let mut values = chain::Values::default();
    for (i, step) in shared.steps.iter().enumerate() {
        if i > 0 {
            if let Some(t) = shared.think {
                if !pause(&shared, t).await {
                    return;
                }
            }
        }
        if shared.stop.is_cancelled() {
            return; // a task cut short by the end of the run is not reported
        }
        // The first step is due at the task's intended start; later ones when the previous
        // one ended (that wait is the system's, not the generator's).
        let step_start = if i == 0 { intended } else { Instant::now() };
        let deadline = match (step.deadline.map(|d| step_start + d), task_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let mut targets = Vec::new();
        let mut j = 0;
        for c in &step.calls {
            let params = match chain::params(c, &values) {
                Ok(p) => p,
                Err(_) => {
                    // A value the call takes is missing: the task fails, loudly counted.
                    shared.missing_values.fetch_add(1, Ordering::Relaxed);
                    ok = false;
                    break;
                }
            };
            for _ in 0..c.repeat {
                let taken = shared.chain.consumed[i]
                    .get(j)
                    .filter(|p| !p.is_empty())
                    .map(Vec::as_slice);
                targets.push((c, params.clone(), taken, ordinal));
                ordinal += 1;
                j += 1;
            }
        }
        if !ok {
            break;
        }
        let sh: &Shared = &shared;
        let reads = targets.iter().map(|(c, params, taken, ordinal)| {
            let t = chain::Target {
                task: k,
                session,
                intended: step_start,
                deadline,
                params,
                taken: *taken,
            };
            async move { chain::read(sh, c, &t, *ordinal).await }
        });
        let results = futures::future::join_all(reads).await;
        for (r, (c, ..)) in results.into_iter().zip(&targets) {
            match r {
                // A call cut short by the end of the run: neither it nor its task is reported.
                None => return,
                Some(r) => {
                    if r.gave_up || (!r.good && (r.critical || !shared.client.degrade)) {
                        ok = false;
                    }
                    if let Some(v) = r.value {
                        values.keep(&c.tool, v);
                    }
                }
            }
        }
        if !ok {
            break;
        }
    }
    if task_deadline.is_some_and(|d| Instant::now() > d) {
        ok = false;
    }
    lock(&shared.tally).task(ok);
    let _ = shared.events.send(LoadEvent::Task(TaskObservation {
        at_ms: shared.at_ms(),
        ok,
    }));
}

fn sim_answer(a: &Answer) -> SimAnswer {
    match a {
        Answer::Ok => SimAnswer::Ok,
        Answer::ToolError | Answer::Wrong => SimAnswer::Corrupt,
        _ => SimAnswer::Fail,
    }
}

/// How one logical call ended.
pub(super) struct Called {
    /// It succeeded (answered, right or wrong).
    pub(super) good: bool,
    pub(super) answer: Answer,
    /// The value its result offers later steps, when asked for.
    pub(super) value: Option<serde_json::Value>,
}

/// One logical call with its retries, or None when the end of the run cut it short (it is
/// then not reported: it neither failed nor succeeded). `keep`: return its result's value.
#[allow(clippy::too_many_arguments)]
pub(super) async fn call(
    shared: &Shared,
    task: u64,
    ordinal: u64,
    c: &PreparedCall,
    session: usize,
    intended: Instant,
    deadline: Option<Instant>,
    params: &str,
    keep: bool,
) -> Option<Called> {
    let mut rng = call_rng(shared.seed, task, ordinal);
    let span = shared.trace.as_ref().map(|t| t.span_id(task, ordinal));
    let params = match (&shared.trace, span) {
        (Some(t), Some(span)) => t.params(params, span),
        _ => std::borrow::Cow::Borrowed(params),
    };
    let params = params.as_ref();
    let calls_so_far = shared.calls_made.fetch_add(1, Ordering::Relaxed) + 1;
    let mut attempts = 0u32;
    let mut last: Answer;
    let mut value = None;
    loop {
        let now = Instant::now();
        let left = deadline.map(|d| d.saturating_duration_since(now));
        if left == Some(Duration::ZERO) {
            last = Answer::Timeout;
            break;
        }
        if let (Some(b), Some(cfg)) = (&shared.breakers, &shared.client.breaker) {
            let now_us = shared.now_us();
            let mut map = lock(b);
            let br = map.entry(Arc::clone(&c.tool)).or_insert_with(Breaker::new);
            if !br.allows(now_us, cfg).0 {
                shared.breaker_rejections.fetch_add(1, Ordering::Relaxed);
                last = Answer::Error {
                    code: -32099,
                    message: "circuit breaker open".into(),
                };
                break;
            }
        }
        attempts += 1;
        shared.attempts.fetch_add(1, Ordering::Relaxed);
        let take = shared
            .limiter
            .as_ref()
            .map(|l| lock(l).take(shared.now_us()));
        let answer = match take {
            Some(Take::Reject) => {
                shared.limiter_rejections.fetch_add(1, Ordering::Relaxed);
                Answer::Error {
                    code: -32098,
                    message: "rejected by the client's rate limiter".into(),
                }
            }
            Some(Take::Wait(us)) if !pause(shared, Duration::from_micros(us)).await => {
                return None;
            }
            _ => {
                let timeout = left.map_or(shared.timeout, |l| l.min(shared.timeout));
                let (answer, v) = shared.sessions[session]
                    .part(c.server)
                    .request("tools/call", params, timeout, c.schema.as_ref(), keep)
                    .await;
                value = v;
                answer
            }
        };
        if let (Some(b), Some(cfg), false) = (
            &shared.breakers,
            &shared.client.breaker,
            matches!(take, Some(Take::Reject)),
        ) {
            let now_us = shared.now_us();
            if let Some(br) = lock(b).get_mut(&c.tool) {
                br.record(now_us, cfg, sim_answer(&answer));
            }
        }
        last = answer;
        if matches!(last, Answer::Ok | Answer::Wrong | Answer::ToolError) {
            break;
        }
        let Some(r) = &shared.client.retries else {
            break;
        };
        let retries = shared.retries_made.load(Ordering::Relaxed);
        if !may_retry(r, attempts, retries, calls_so_far) {
            break;
        }
        if shared.stop.is_cancelled() {
            return None; // it would have been retried
        }
        shared.retries_made.fetch_add(1, Ordering::Relaxed);
        let mut wait = ms(backoff_ms(r, attempts, || rng.unit()));
        if let Some(d) = deadline {
            wait = wait.min(d.saturating_duration_since(Instant::now()));
        }
        if !pause(shared, wait).await {
            return None;
        }
    }
    let outcome = match &last {
        Answer::Ok | Answer::Wrong => Outcome::Ok,
        Answer::ToolError => Outcome::ToolError,
        Answer::Error { .. } => Outcome::Error,
        Answer::Malformed => Outcome::Malformed,
        Answer::Timeout | Answer::Closed => Outcome::Unanswered,
    };
    let obs = CallObservation {
        at_ms: shared.at_ms(),
        method: "tools/call".into(),
        tool: Some(c.tool.to_string()),
        outcome,
        latency_ms: intended.elapsed().as_secs_f64() * 1000.0,
        correct: last == Answer::Ok,
        timed_out: last == Answer::Timeout,
        attempts,
    };
    lock(&shared.tally).call(&obs);
    if let (Some(t), Some(span)) = (&shared.trace, span) {
        t.call(&obs, span);
    }
    let _ = shared.events.send(LoadEvent::Call(obs));
    Some(Called {
        good: outcome == Outcome::Ok,
        answer: last,
        value,
    })
}

fn summary(shared: &Shared, elapsed: f64, sessions: usize, fp: Fingerprint) -> LoadSummary {
    let t = lock(&shared.tally);
    let attempts = shared.attempts.load(Ordering::Relaxed);
    let per_s = |n: u64| {
        if elapsed > 0.0 {
            n as f64 / elapsed
        } else {
            0.0
        }
    };
    let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    LoadSummary {
        duration_s: elapsed,
        sessions,
        seed: shared.seed,
        tasks: t.tasks_ok + t.tasks_failed,
        tasks_ok: t.tasks_ok,
        tasks_failed: t.tasks_failed,
        calls: t.calls,
        outcomes: t
            .outcomes
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
        timeouts: t.timeouts,
        attempts,
        limiter_rejections: shared.limiter_rejections.load(Ordering::Relaxed),
        breaker_rejections: shared.breaker_rejections.load(Ordering::Relaxed),
        attempt_amplification: ratio(attempts, t.calls),
        calls_per_s: per_s(t.calls),
        attempts_per_s: per_s(attempts),
        error_rate: ratio(t.failed, t.calls),
        latency_ms: t.hist.summary(),
        max_start_lag_ms: shared.lag_us.load(Ordering::Relaxed) as f64 / 1000.0,
        session_restarts: shared.sessions.iter().map(Session::restarts).sum(),
        schedule_fingerprint: fp.0,
        policy: shared.policy.as_str(),
        rereads: shared.rereads.load(Ordering::Relaxed),
        gave_up: shared.gave_up.load(Ordering::Relaxed),
        missing_values: shared.missing_values.load(Ordering::Relaxed),
    }
}
