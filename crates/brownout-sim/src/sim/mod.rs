//! The discrete-event simulation: virtual time, an event queue, agents, servers, clients.
//!
//! Each attempt asks the core engine which faults hit it (`Engine::on_simulated_call`, the
//! same decisions the relay makes), then travels: request delay → the server's pool (queue,
//! queue timeout, service time, base error rate) → response delay → the client, whose own
//! timeout may have fired first. Abandoned attempts keep their server slot until the server
//! finishes them, which is how retry storms overload a squeezed pool. (A plain workload's call
//! served at once and answered as its service ends has no attempt record: `serve_alone`.)
//!
//! This module holds the state and the event loop; [`tasks`] runs tasks, steps and calls,
//! [`attempts`] the trip of one attempt, [`retry`], [`breaker`] and [`limiter`] the client's
//! resilience, [`queue`] virtual time's event queue, [`build`] a run's state before its first
//! event.

mod attempts;
pub mod breaker;
pub mod budget;
mod build;
mod chain;
pub mod fork;
mod gates;
#[cfg(test)]
mod gates_tests;
pub mod limiter;
mod queue;
mod report;
pub mod retry;
mod slab;
mod tasks;
#[cfg(test)]
mod tests;

use crate::metrics::{Counters, Report};
use crate::workload::{Arrival, Workload};
use breaker::Breaker;
use brownout_core::engine::{SimCallSite, SimSession};
use brownout_core::faults::latency::Latency;
use brownout_core::faults::simulated::SimOutcome;
use brownout_core::rng::SplitMix;
use brownout_core::{Engine, Plan};
use build::{build, engine_for, sites_of};
use limiter::TokenBucket;
use queue::{Due, EventQueue};
use slab::Slab;
use std::collections::VecDeque;

#[derive(Debug, Clone, Default)]
pub struct SimOptions {
    /// Override the workload's task count.
    pub tasks: Option<u64>,
    /// Override the workload's seed.
    pub seed: Option<u64>,
    /// Keep the per-second series in the report.
    pub keep_series: bool,
    /// SLO gates to evaluate in virtual time (`docs/gates.md`); the report says whether
    /// and when each breached.
    pub gates: Vec<brownout_core::slo::Gate>,
    /// End the run at the first gate breach (a search needs only the verdict's sign; the
    /// report then covers the run up to the breach).
    pub stop_at_breach: bool,
    /// Model the live load's N long-lived sessions (tasks share them as `brownout load`'s
    /// do) instead of one session per task: faults' `sessions` shares then select what
    /// they select live.
    pub sessions: Option<u64>,
    /// Bounds on the work (events, memory, wall time, cancellation): none by default.
    pub budget: budget::Budget,
}

/// Milliseconds → microseconds of virtual time (negative → 0).
fn ms(x: f64) -> u64 {
    (x.max(0.0) * 1000.0) as u64
}

/// [`ms`] for a drawn delay, which is at most a day ([`Latency::sample_ms`] clamps to
/// `MAX_DELAY_MS`): a signed conversion, one instruction on x86-64 where the unsigned one
/// takes several, exact below 2⁶³ µs (NaN and negatives → 0, as `ms`).
#[inline(always)]
fn delay_us(x: f64) -> u64 {
    debug_assert!(x.is_nan() || x <= brownout_core::faults::latency::MAX_DELAY_MS);
    let us = x * 1000.0;
    if us > 0.0 {
        us as i64 as u64
    } else {
        0
    }
}

#[derive(Debug, Clone, Copy)]
enum Ev {
    Arrive,
    StartTask,
    StepStart(u32),
    Attempt(u32, u32),
    Launch(u32, u32),
    AtServer(u32, u32),
    ServiceDone(u32, u32),
    /// The service of a call served without an attempt record ends (call, generation):
    /// [`Sim::serve_alone`].
    Served(u32, u32),
    QueueTimeout(u32, u32),
    Reply(u32, u32, Answer),
    ClientTimeout(u32, u32),
    StepDeadline(u32, u32),
}

/// How an attempt was answered, as the client's breaker sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Answer {
    Ok,
    Corrupt,
    Fail,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum CallEnd {
    Ok,
    Corrupt,
    Fail,
    Skipped,
}

#[derive(Clone)]
struct ToolInfo {
    server: usize,
    latency: Latency,
    error_rate: f64,
    /// A rough expected service time, for deadline-aware skipping.
    expect_us: u64,
    /// Its server has no concurrency limit: a replica never queues, so which one serves a
    /// call and how busy it is change nothing ([`Sim::serve_alone`] keeps no count).
    unbounded: bool,
}

#[derive(Clone)]
struct Task {
    /// Its session's decision state: an index into `Sim::sim_sessions`.
    session: usize,
    step: usize,
    step_gen: u32,
    started: u64,
    deadline: Option<u64>,
    step_deadline: Option<u64>,
    outstanding: u32,
    failed: bool,
    calls: Vec<u32>,
    /// Tools whose consumed result the agent took (a later step may take values from them).
    got: Vec<usize>,
    /// Tools whose taken result a fault altered, not yet acted on.
    pending: Vec<usize>,
}

#[derive(Clone)]
struct Call {
    task: u32,
    tool: usize,
    critical: bool,
    attempts: u32,
    started: u64,
    resolved: bool,
    gen: u32,
    /// Its last failed attempt timed out (client timeout or step deadline).
    timed_out: bool,
    /// A later step takes a value from its result: the agent's policy applies.
    consumed: bool,
    /// Reads answered so far, and the first three (the agent's policy).
    reads: u8,
    log: [chain::Read; 3],
    /// Served without an attempt record ([`Sim::serve_alone`]): its replica and outcome.
    replica: u32,
    outcome: SimOutcome,
    /// Its task's session (an index into `Sim::sim_sessions`) as the call started: a plain
    /// workload's call launches then, so its launch needs no look at the task.
    session: u32,
}

#[derive(Clone)]
struct Attempt {
    gen: u32,
    call: u32,
    call_gen: u32,
    /// The attempt's tool: its call's slot may be reused by another call (on another
    /// server) while the attempt still travels or waits at the server.
    tool: usize,
    /// The client still waits for it.
    client: bool,
    /// The server still holds it (queued or in service).
    server: bool,
    queued: bool,
    freed: bool,
    replica: usize,
    outcome: SimOutcome,
    response_delay: u64,
    /// When the attempt went out: its failure is counted in this second, beside its start.
    started: u64,
}

#[derive(Clone, Default)]
struct Replica {
    busy: u32,
    queue: VecDeque<(u32, u32)>,
}

#[derive(Clone)]
struct ServerState {
    replicas: Vec<Replica>,
    next: usize,
    concurrency: u32,
    queue_timeout: Option<u64>,
}

struct Sim<'w> {
    w: &'w Workload,
    engine: Engine,
    /// Per tool, the faults a call of it can meet (resolved once, `Engine::sim_call_site`).
    sites: Vec<SimCallSite>,
    /// The sessions' decision state: one per task slot (reset for each task), or one per
    /// long-lived session (`sessions`).
    sim_sessions: Vec<SimSession>,
    /// The session of a call whose task is gone (the engine's `""` session).
    orphan_session: Option<SimSession>,
    /// The session key being built (`task-N`), reused.
    key_buf: String,
    /// Call ids of the step being started, reused.
    step_ids: Vec<u32>,
    /// Emptied `Task::calls` lists, reused by the next tasks.
    spare_calls: Vec<Vec<u32>>,
    rng: SplitMix,
    now: u64,
    queue: EventQueue<Ev>,
    tools: Vec<ToolInfo>,
    names: Vec<String>,
    /// Per step: (tool index, critical, consumed) of every call, repeats expanded.
    step_calls: Vec<Vec<(usize, bool, bool)>>,
    /// Who takes values from whom.
    chain: crate::chain::Chain,
    policy: crate::chain::Policy,
    servers: Vec<ServerState>,
    breakers: Vec<Breaker>,
    open_breakers: u64,
    tasks: Vec<Option<Task>>,
    free_tasks: Vec<u32>,
    calls: Slab<Call>,
    attempts: Slab<Attempt>,
    limiter: Option<TokenBucket>,
    retries_made: u64,
    /// Steps started in all: each step's generation, so stale step deadlines are ignored.
    steps_started: u32,
    started_tasks: u64,
    target_tasks: u64,
    c: Counters,
    timeout_us: u64,
    /// The workload has a task or step deadline (else no call has one to look up).
    deadlines: bool,
    /// The gates, when the run has any.
    gates: Option<gates::SimGates>,
    stop_at_breach: bool,
    sessions: Option<u64>,
    /// The reply being handled is the client's timeout firing.
    timing_out: bool,
    budget: budget::Budget,
    /// The bound that stopped the run early, if one did.
    stopped_by: Option<String>,
    /// Events handled so far (for the budget's bounds).
    events: u64,
    /// The next event, taken out of the queue when the run paused before it.
    held: Option<Due<Ev>>,
    /// The event being handled has nothing left to do once the call it ends is counted
    /// (a call served alone on a server without a limit): an event it schedules at its own
    /// instant may be [`Sim::deferred`] instead of queued ([`Sim::push_now`]).
    tail: bool,
    /// An event at the current instant that the queue would give next: handled after the
    /// current one without going through the queue.
    deferred: Option<Ev>,
}

impl Sim<'_> {
    #[inline(always)]
    fn push(&mut self, at: u64, ev: Ev) {
        self.queue.push(at, ev);
    }

    /// An event at the current instant. At the end of a handler with nothing left to do
    /// ([`Sim::tail`]), when nothing in the queue is due by now, the queue would give it
    /// next: it is kept aside and handled next by the same loop (the same order, counts,
    /// pause and budget checks), without a push and a pop. A plain workload's loop only.
    #[inline(always)]
    fn push_now<const F: bool>(&mut self, ev: Ev) {
        if !F && self.tail {
            self.defer(ev);
        } else {
            self.push(self.now, ev);
        }
    }

    /// [`Sim::push_now`]'s check, out of line (once per step and task).
    #[inline(never)]
    fn defer(&mut self, ev: Ev) {
        self.tail = false;
        if self.queue.due_by(self.now) {
            self.push(self.now, ev);
        } else {
            self.deferred = Some(ev);
        }
    }

    fn run(&mut self) {
        self.start();
        self.run_on(None);
    }

    /// The workload has no breaker, rate limiter, retries or deadlines: its run goes through
    /// the loop compiled without them ([`Sim::run_until`] with `F` false).
    fn plain(&self) -> bool {
        let client = &self.w.client;
        !self.deadlines
            && self.limiter.is_none()
            && client.breaker.is_none()
            && client.retries.is_none()
    }

    /// [`Sim::run_until`], the loop chosen once for the workload.
    fn run_on(&mut self, pause: Option<u64>) -> bool {
        if self.plain() {
            self.run_until::<false>(pause)
        } else {
            self.run_until::<true>(pause)
        }
    }

    /// The first events.
    fn start(&mut self) {
        match self.w.arrival {
            Some(Arrival::Closed { concurrency }) => {
                for _ in 0..concurrency {
                    self.push(0, Ev::StartTask);
                }
            }
            Some(Arrival::Open { .. }) => self.push(0, Ev::Arrive),
            None => self.push(0, Ev::StartTask),
        }
    }

    /// Handle events until none is left or a bound or a breach ends the run (`false`), or,
    /// with `pause`, until the next one is at or after it (`true`: that one is kept, and
    /// handled first when the run goes on — [`fork`] runs on from there).
    ///
    /// `F` false compiles the loop without what a plain workload ([`Sim::plain`]) lacks: no
    /// deadline, breaker, limiter or retry step on a call's path (the same model code, its
    /// branches for absent features gone; `F` true is right for every workload). Functions
    /// off that path call the full versions.
    fn run_until<const F: bool>(&mut self, pause: Option<u64>) -> bool {
        // (`held` and `deferred` are read only when set: most events come straight from the
        // queue.)
        while let Some(due) = if self.deferred.is_some() {
            self.deferred.take().map(|ev| Due::Event(self.now, ev))
        } else if self.held.is_some() {
            self.held.take()
        } else {
            self.queue.pop()
        } {
            let (Due::Event(at, _) | Due::Timeout(at, ..)) = due;
            if pause.is_some_and(|p| at >= p) {
                self.held = Some(due);
                return true;
            }
            self.events += 1;
            if self.events.is_multiple_of(budget::EVERY) {
                if let Some(why) = self.budget.exceeded(self.events, || self.footprint()) {
                    self.stopped_by = Some(why);
                    break;
                }
            }
            match due {
                Due::Event(at, ev) => {
                    if self.gates.is_some() {
                        self.gates_until(at);
                        if self.stop_at_breach && self.gates_breached() {
                            break;
                        }
                    }
                    self.now = at;
                    self.handle::<F>(ev);
                }
                Due::Timeout(at, a, gen) => self.timeout_due::<F>(at, a, gen),
            }
        }
        false
    }

    fn handle<const F: bool>(&mut self, ev: Ev) {
        match ev {
            Ev::Arrive => {
                if self.started_tasks < self.target_tasks {
                    self.start_task::<F>();
                    if let Some(Arrival::Open { rate_per_s }) = self.w.arrival {
                        let gap = -(1.0 - self.rng.unit()).ln() / rate_per_s;
                        self.push(self.now + (gap * 1e6) as u64, Ev::Arrive);
                    }
                }
            }
            Ev::StartTask => {
                if self.started_tasks < self.target_tasks {
                    self.start_task::<F>();
                }
            }
            Ev::StepStart(t) => self.start_step::<F>(t),
            Ev::Attempt(call, gen) => {
                if self.calls.items[call as usize].gen == gen
                    && !self.calls.items[call as usize].resolved
                {
                    self.try_attempt::<F>(call);
                }
            }
            Ev::Launch(call, gen) => {
                if self.calls.items[call as usize].gen == gen
                    && !self.calls.items[call as usize].resolved
                {
                    let deadline = self.deadline_of(call);
                    self.launch::<true>(call, deadline);
                }
            }
            Ev::AtServer(a, gen) => {
                if self.attempts.items[a as usize].gen == gen {
                    self.at_server(a);
                }
            }
            Ev::ServiceDone(a, gen) => {
                if self.attempts.items[a as usize].gen == gen {
                    self.service_done::<F>(a);
                }
            }
            Ev::Served(call, gen) => {
                // Always current: nothing else ends such a call (`serve_alone`).
                debug_assert_eq!(self.calls.items[call as usize].gen, gen);
                if self.calls.items[call as usize].gen == gen {
                    self.served::<F>(call);
                }
            }
            Ev::QueueTimeout(a, gen) => {
                let at = &mut self.attempts.items[a as usize];
                if at.gen == gen && at.queued {
                    at.queued = false; // left in the queue, skipped when popped
                    at.server = false;
                    self.reply::<F>(a, Answer::Fail);
                }
            }
            Ev::Reply(a, gen, answer) => {
                if self.attempts.items[a as usize].gen == gen {
                    self.reply::<F>(a, answer);
                }
            }
            Ev::ClientTimeout(a, gen) => {
                if self.attempts.items[a as usize].gen == gen
                    && self.attempts.items[a as usize].client
                {
                    self.timing_out = true;
                    self.reply::<F>(a, Answer::Fail);
                    self.timing_out = false;
                }
            }
            Ev::StepDeadline(t, step_gen) => self.step_deadline(t, step_gen),
        }
    }

    /// An estimate of the memory the state holds, in bytes.
    fn footprint(&self) -> usize {
        use std::mem::size_of;
        let calls_per_task: usize = self
            .tasks
            .iter()
            .flatten()
            .map(|t| t.calls.capacity())
            .sum();
        self.queue.footprint()
            + self.tasks.capacity() * size_of::<Option<Task>>()
            + calls_per_task * size_of::<u32>()
            + self.calls.items.capacity() * size_of::<Call>()
            + self.attempts.items.capacity() * size_of::<Attempt>()
            + self.c.series.capacity() * size_of::<crate::metrics::Second>()
    }

    /// A client timeout came due: it fails the attempt if the client still waits for it.
    fn timeout_due<const F: bool>(&mut self, at: u64, a: u32, gen: u32) {
        let attempt = &self.attempts.items[a as usize];
        if attempt.gen == gen && attempt.client {
            // A stale timeout (its attempt long answered) moves no clock, not even the gates'.
            if self.gates.is_some() {
                self.gates_until(at);
            }
            self.now = at;
            self.timing_out = true;
            self.reply::<F>(a, Answer::Fail);
            self.timing_out = false;
        }
    }
}

/// Run a workload under a plan.
pub fn simulate(w: &Workload, plan: Plan, opts: &SimOptions) -> Report {
    let mut sim = build(w, plan, opts);
    sim.run();
    sim.report(opts)
}
