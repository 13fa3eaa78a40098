//! The discrete-event simulation: virtual time, an event queue, agents, servers, clients.
//!
//! Each attempt asks the core engine which faults hit it (`Engine::on_simulated_call`, the
//! same decisions the relay makes), then travels: request delay → the server's pool (queue,
//! queue timeout, service time, base error rate) → response delay → the client, whose own
//! timeout may have fired first. Abandoned attempts keep their server slot until the server
//! finishes them, which is how retry storms overload a squeezed pool.

use crate::metrics::{BreakerTransition, Counters, Report, BREAKER_LOG_CAP};
use crate::workload::{Arrival, BreakerMode, LimiterMode, Workload};
use brownout_core::faults::latency::Latency;
use brownout_core::faults::simulated::SimOutcome;
use brownout_core::rng::SplitMix;
use brownout_core::{Engine, EngineConfig, Plan, Time};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Attempts per call under `unbounded` retries: enough for any storm, and a run whose
/// calls have no deadline still ends.
const UNBOUNDED_ATTEMPTS: u32 = 1_000;

#[derive(Debug, Clone, Default)]
pub struct SimOptions {
    /// Override the workload's task count.
    pub tasks: Option<u64>,
    /// Override the workload's seed.
    pub seed: Option<u64>,
    /// Keep the per-second series in the report.
    pub keep_series: bool,
}

fn ms(x: f64) -> u64 {
    (x.max(0.0) * 1000.0) as u64
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
    QueueTimeout(u32, u32),
    Reply(u32, u32, Answer),
    ClientTimeout(u32, u32),
    StepDeadline(u32, u32),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Answer {
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

struct ToolInfo {
    server: usize,
    latency: Latency,
    error_rate: f64,
    /// A rough expected service time, for deadline-aware skipping.
    expect_us: u64,
}

struct Task {
    session: String,
    step: usize,
    step_gen: u32,
    started: u64,
    deadline: Option<u64>,
    step_deadline: Option<u64>,
    outstanding: u32,
    failed: bool,
    calls: Vec<u32>,
}

struct Call {
    task: u32,
    tool: usize,
    critical: bool,
    attempts: u32,
    started: u64,
    resolved: bool,
    gen: u32,
}

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

#[derive(Default)]
struct Replica {
    busy: u32,
    queue: VecDeque<(u32, u32)>,
}

struct ServerState {
    replicas: Vec<Replica>,
    next: usize,
    concurrency: u32,
    queue_timeout: Option<u64>,
}

#[derive(Clone, Copy, PartialEq)]
enum BreakerState {
    Closed,
    Open(u64),
    HalfOpen { left: u32, ok: u32 },
}

struct Breaker {
    state: BreakerState,
    window: VecDeque<(bool, bool)>,
}

/// Slabs with free lists and generations, so memory stays flat over millions of calls.
struct Slab<T> {
    items: Vec<T>,
    free: Vec<u32>,
}

impl<T> Slab<T> {
    fn new() -> Self {
        Slab {
            items: Vec::new(),
            free: Vec::new(),
        }
    }

    fn insert(&mut self, make: impl FnOnce(u32) -> T, reuse: impl FnOnce(&mut T)) -> u32 {
        match self.free.pop() {
            Some(i) => {
                reuse(&mut self.items[i as usize]);
                i
            }
            None => {
                let i = self.items.len() as u32;
                self.items.push(make(i));
                i
            }
        }
    }
}

struct Sim<'w> {
    w: &'w Workload,
    engine: Engine,
    rng: SplitMix,
    now: u64,
    seq: u64,
    queue: BinaryHeap<Reverse<(u64, u64, usize)>>,
    timeouts: VecDeque<(u64, u32, u32)>,
    events: Vec<Ev>,
    free_events: Vec<usize>,
    tools: Vec<ToolInfo>,
    names: Vec<String>,
    /// Per step: (tool index, critical) of every call, repeats expanded.
    step_calls: Vec<Vec<(usize, bool)>>,
    servers: Vec<ServerState>,
    breakers: Vec<Breaker>,
    open_breakers: u64,
    tasks: Vec<Option<Task>>,
    free_tasks: Vec<u32>,
    calls: Slab<Call>,
    attempts: Slab<Attempt>,
    limiter: Option<(f64, f64, f64, u64)>, // rate, burst, tokens, last
    retries_made: u64,
    started_tasks: u64,
    target_tasks: u64,
    c: Counters,
    timeout_us: u64,
}

impl<'w> Sim<'w> {
    fn push(&mut self, at: u64, ev: Ev) {
        let slot = match self.free_events.pop() {
            Some(i) => {
                self.events[i] = ev;
                i
            }
            None => {
                self.events.push(ev);
                self.events.len() - 1
            }
        };
        self.seq += 1;
        self.queue.push(Reverse((at, self.seq, slot)));
    }

    fn run(&mut self) {
        match self.w.arrival {
            Some(Arrival::Closed { concurrency }) => {
                for _ in 0..concurrency {
                    self.push(0, Ev::StartTask);
                }
            }
            Some(Arrival::Open { .. }) => self.push(0, Ev::Arrive),
            None => self.push(0, Ev::StartTask),
        }
        loop {
            // Client timeouts all have the same length, so they come due in the order they
            // were set: a FIFO beside the heap keeps the heap small (most never fire).
            let heap_at = self.queue.peek().map(|Reverse((t, _, _))| *t);
            let fifo_at = self.timeouts.front().map(|(t, _, _)| *t);
            match (heap_at, fifo_at) {
                (None, None) => break,
                (Some(h), Some(f)) if f < h => self.pop_timeout(),
                (None, Some(_)) => self.pop_timeout(),
                _ => {
                    let Some(Reverse((at, _, slot))) = self.queue.pop() else {
                        break;
                    };
                    self.now = at;
                    let ev = self.events[slot];
                    self.free_events.push(slot);
                    self.handle(ev);
                }
            }
        }
        // Carry breaker state through seconds with no change.
        let mut open = 0;
        for s in &mut self.c.series {
            if s.open_breakers == u64::MAX {
                s.open_breakers = open;
            } else {
                open = s.open_breakers;
            }
        }
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::Arrive => {
                if self.started_tasks < self.target_tasks {
                    self.start_task();
                    if let Some(Arrival::Open { rate_per_s }) = self.w.arrival {
                        let gap = -(1.0 - self.rng.unit()).ln() / rate_per_s;
                        self.push(self.now + (gap * 1e6) as u64, Ev::Arrive);
                    }
                }
            }
            Ev::StartTask => {
                if self.started_tasks < self.target_tasks {
                    self.start_task();
                }
            }
            Ev::StepStart(t) => self.start_step(t),
            Ev::Attempt(call, gen) => {
                if self.calls.items[call as usize].gen == gen
                    && !self.calls.items[call as usize].resolved
                {
                    self.try_attempt(call);
                }
            }
            Ev::Launch(call, gen) => {
                if self.calls.items[call as usize].gen == gen
                    && !self.calls.items[call as usize].resolved
                {
                    let deadline = self.deadline_of(call);
                    self.launch(call, deadline);
                }
            }
            Ev::AtServer(a, gen) => {
                if self.attempts.items[a as usize].gen == gen {
                    self.at_server(a);
                }
            }
            Ev::ServiceDone(a, gen) => {
                if self.attempts.items[a as usize].gen == gen {
                    self.service_done(a);
                }
            }
            Ev::QueueTimeout(a, gen) => {
                let at = &mut self.attempts.items[a as usize];
                if at.gen == gen && at.queued {
                    at.queued = false; // left in the queue, skipped when popped
                    at.server = false;
                    self.reply(a, Answer::Fail);
                }
            }
            Ev::Reply(a, gen, answer) => {
                if self.attempts.items[a as usize].gen == gen {
                    self.reply(a, answer);
                }
            }
            Ev::ClientTimeout(a, gen) => {
                if self.attempts.items[a as usize].gen == gen
                    && self.attempts.items[a as usize].client
                {
                    self.reply(a, Answer::Fail);
                }
            }
            Ev::StepDeadline(t, step_gen) => self.step_deadline(t, step_gen),
        }
    }

    fn pop_timeout(&mut self) {
        let Some((at, a, gen)) = self.timeouts.pop_front() else {
            return;
        };
        let at_ = &self.attempts.items[a as usize];
        if at_.gen == gen && at_.client {
            self.now = at;
            self.reply(a, Answer::Fail);
        }
    }

    fn start_task(&mut self) {
        self.started_tasks += 1;
        let id = self.started_tasks;
        let task = Task {
            session: format!("task-{id}"),
            step: 0,
            step_gen: 0,
            started: self.now,
            deadline: self.w.task_deadline_ms.map(|d| self.now + ms(d)),
            step_deadline: None,
            outstanding: 0,
            failed: false,
            calls: Vec::new(),
        };
        let t = match self.free_tasks.pop() {
            Some(i) => {
                self.tasks[i as usize] = Some(task);
                i
            }
            None => {
                self.tasks.push(Some(task));
                (self.tasks.len() - 1) as u32
            }
        };
        self.start_step(t);
    }

    fn start_step(&mut self, t: u32) {
        let Some(task) = self.tasks[t as usize].as_mut() else {
            return;
        };
        let step = &self.w.steps[task.step];
        task.step_gen += 1;
        task.calls.clear();
        task.step_deadline = step.deadline_ms.map(|d| self.now + ms(d));
        let step_gen = task.step_gen;
        let deadline = task.step_deadline;
        let new_calls = self.step_calls[task.step].clone();
        if let Some(d) = deadline {
            self.push(d, Ev::StepDeadline(t, step_gen));
        }
        let now = self.now;
        let ids: Vec<u32> = new_calls
            .into_iter()
            .map(|(tool, critical)| {
                self.calls.insert(
                    |_| Call {
                        task: t,
                        tool,
                        critical,
                        attempts: 0,
                        started: now,
                        resolved: false,
                        gen: 0,
                    },
                    |c| {
                        c.task = t;
                        c.tool = tool;
                        c.critical = critical;
                        c.attempts = 0;
                        c.started = now;
                        c.resolved = false;
                        c.gen += 1;
                    },
                )
            })
            .collect();
        if let Some(task) = self.tasks[t as usize].as_mut() {
            task.outstanding = ids.len() as u32;
            task.calls = ids.clone();
        }
        for id in ids {
            self.c.calls += 1;
            self.c.second(self.now).offered += 1;
            self.try_attempt(id);
        }
    }

    /// The time the call's step and task have left.
    fn deadline_of(&self, call: u32) -> Option<u64> {
        let task = self.tasks[self.calls.items[call as usize].task as usize].as_ref()?;
        match (task.deadline, task.step_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn try_attempt(&mut self, call: u32) {
        let tool = self.calls.items[call as usize].tool;
        let deadline = self.deadline_of(call);
        if let Some(d) = deadline {
            let left = d.saturating_sub(self.now);
            if left == 0 || (self.w.client.deadline_aware && left < self.tools[tool].expect_us) {
                return self.end_call(call, CallEnd::Skipped);
            }
        }
        if !self.breaker_allows(tool) {
            return self.end_call(call, CallEnd::Skipped);
        }
        if let Some((rate, burst, tokens, last)) = self.limiter {
            let tokens = (tokens + (self.now - last) as f64 / 1e6 * rate).min(burst);
            if tokens >= 1.0 {
                self.limiter = Some((rate, burst, tokens - 1.0, self.now));
            } else {
                let mode = self
                    .w
                    .client
                    .rate_limiter
                    .as_ref()
                    .map(|l| l.mode)
                    .unwrap_or_default();
                match mode {
                    LimiterMode::Queue => {
                        // Take a token from the future (the bucket goes into debt) and go
                        // out when it exists, without passing the limiter again.
                        let wait = ((1.0 - tokens) / rate * 1e6) as u64;
                        self.limiter = Some((rate, burst, tokens - 1.0, self.now));
                        let gen = self.calls.items[call as usize].gen;
                        self.push(self.now + wait, Ev::Launch(call, gen));
                        return;
                    }
                    LimiterMode::Reject => {
                        self.limiter = Some((rate, burst, tokens, self.now));
                        self.calls.items[call as usize].attempts += 1;
                        self.c.attempts += 1;
                        let s = self.c.second(self.now);
                        s.attempts += 1;
                        s.errors += 1;
                        return self.attempt_failed(call);
                    }
                }
            }
        }
        self.launch(call, deadline);
    }

    fn launch(&mut self, call: u32, deadline: Option<u64>) {
        let (tool, task) = {
            let c = &mut self.calls.items[call as usize];
            c.attempts += 1;
            (c.tool, c.task)
        };
        self.c.attempts += 1;
        self.c.second(self.now).attempts += 1;
        let session = self.tasks[task as usize]
            .as_ref()
            .map_or("", |t| t.session.as_str());
        let sim = self
            .engine
            .on_simulated_call(session, &self.names[tool], Time(self.now));
        let call_gen = self.calls.items[call as usize].gen;
        let now = self.now;
        let a = self.attempts.insert(
            |_| Attempt {
                gen: 0,
                call,
                call_gen,
                tool,
                client: true,
                server: false,
                queued: false,
                freed: false,
                replica: 0,
                outcome: sim.outcome,
                response_delay: sim.response_delay.0,
                started: now,
            },
            |at| {
                at.gen += 1;
                at.call = call;
                at.call_gen = call_gen;
                at.tool = tool;
                at.client = true;
                at.server = false;
                at.queued = false;
                at.freed = false;
                at.outcome = sim.outcome;
                at.response_delay = sim.response_delay.0;
                at.started = now;
            },
        );
        let gen = self.attempts.items[a as usize].gen;
        let timeout = self.now + self.timeout_us;
        match deadline {
            Some(d) if d < timeout => self.push(d, Ev::ClientTimeout(a, gen)),
            _ => self.timeouts.push_back((timeout, a, gen)),
        }
        let arrive = self.now + sim.request_delay.0;
        if sim.outcome == SimOutcome::FailFast {
            self.push(arrive, Ev::Reply(a, gen, Answer::Fail));
        } else {
            self.attempts.items[a as usize].server = true;
            if arrive == self.now {
                self.at_server(a);
            } else {
                self.push(arrive, Ev::AtServer(a, gen));
            }
        }
    }

    fn at_server(&mut self, a: u32) {
        let tool = self.attempts.items[a as usize].tool;
        let server = self.tools[tool].server;
        let s = &mut self.servers[server];
        let r = s.next % s.replicas.len();
        s.next = s.next.wrapping_add(1);
        self.attempts.items[a as usize].replica = r;
        if s.replicas[r].busy < s.concurrency {
            self.begin_service(a, tool);
        } else {
            s.replicas[r]
                .queue
                .push_back((a, self.attempts.items[a as usize].gen));
            let depth = s.replicas[r].queue.len() as u64;
            let qt = s.queue_timeout;
            self.attempts.items[a as usize].queued = true;
            let sec = self.c.second(self.now);
            sec.max_queue = sec.max_queue.max(depth);
            if let Some(qt) = qt {
                let gen = self.attempts.items[a as usize].gen;
                self.push(self.now + qt, Ev::QueueTimeout(a, gen));
            }
        }
    }

    fn begin_service(&mut self, a: u32, tool: usize) {
        let server = self.tools[tool].server;
        let r = self.attempts.items[a as usize].replica;
        self.servers[server].replicas[r].busy += 1;
        let (u1, u2) = (self.rng.unit(), self.rng.unit());
        let service = ms(self.tools[tool].latency.sample_ms(u1, u2));
        let gen = self.attempts.items[a as usize].gen;
        self.push(self.now + service, Ev::ServiceDone(a, gen));
    }

    fn service_done(&mut self, a: u32) {
        let (tool, r, outcome, delay, gen) = {
            let at = &mut self.attempts.items[a as usize];
            at.server = false;
            (at.tool, at.replica, at.outcome, at.response_delay, at.gen)
        };
        let server = self.tools[tool].server;
        self.servers[server].replicas[r].busy -= 1;
        let base_error =
            self.tools[tool].error_rate > 0.0 && self.rng.unit() < self.tools[tool].error_rate;
        let answer = match (base_error, outcome) {
            (_, SimOutcome::NoAnswer) => None,
            (true, _) | (_, SimOutcome::FailAfter | SimOutcome::FailFast) => Some(Answer::Fail),
            (false, SimOutcome::Corrupt) => Some(Answer::Corrupt),
            (false, SimOutcome::Server) => Some(Answer::Ok),
        };
        // A reply at once frees the slot itself (when the client still waits for it).
        match answer {
            Some(ans) if delay == 0 && self.attempts.items[a as usize].client => self.reply(a, ans),
            Some(ans) if delay > 0 => self.push(self.now + delay, Ev::Reply(a, gen, ans)),
            _ => self.maybe_free(a),
        }
        // Next in the queue, skipping those that timed out while waiting.
        while let Some((next, ngen)) = self.servers[server].replicas[r].queue.pop_front() {
            let at = &mut self.attempts.items[next as usize];
            if at.gen != ngen || !at.queued {
                continue;
            }
            at.queued = false;
            let ntool = at.tool;
            self.begin_service(next, ntool);
            break;
        }
    }

    /// Return the slot once neither the client nor the server holds the attempt (once).
    fn maybe_free(&mut self, a: u32) {
        let at = &mut self.attempts.items[a as usize];
        if !at.client && !at.server && !at.freed {
            at.freed = true;
            self.attempts.free.push(a);
        }
    }

    fn reply(&mut self, a: u32, answer: Answer) {
        let (call, call_gen, started) = {
            let at = &mut self.attempts.items[a as usize];
            if !at.client {
                self.maybe_free(a);
                return;
            }
            at.client = false;
            (at.call, at.call_gen, at.started)
        };
        self.maybe_free(a);
        let c = &self.calls.items[call as usize];
        if c.gen != call_gen || c.resolved {
            return;
        }
        let tool = c.tool;
        self.breaker_record(tool, answer);
        match answer {
            Answer::Ok => self.end_call(call, CallEnd::Ok),
            Answer::Corrupt => self.end_call(call, CallEnd::Corrupt),
            Answer::Fail => {
                // Per attempt: the failure lands in the second its attempt started, so a
                // second's error rate is a share of that second's attempts (never over 100 %).
                self.c.second(started).errors += 1;
                self.attempt_failed(call);
            }
        }
    }

    fn attempt_failed(&mut self, call: u32) {
        let attempts = self.calls.items[call as usize].attempts;
        let Some(r) = &self.w.client.retries else {
            return self.end_call(call, CallEnd::Fail);
        };
        let within = if r.unbounded {
            attempts < UNBOUNDED_ATTEMPTS
        } else {
            attempts < r.max_attempts.unwrap_or(3)
        };
        let budget_ok = r
            .budget_ratio
            .is_none_or(|ratio| (self.retries_made as f64) < ratio * self.c.calls as f64);
        if !within || !budget_ok {
            return self.end_call(call, CallEnd::Fail);
        }
        self.retries_made += 1;
        let first = r.backoff_ms.unwrap_or(0.0);
        // The exponent is capped: 0 × 2^1024 would be NaN, and no backoff needs more.
        let exponent = attempts.saturating_sub(1).min(60) as i32;
        let base = if first == 0.0 {
            0.0
        } else {
            first * r.multiplier.unwrap_or(2.0).powi(exponent)
        };
        let b = base.min(r.max_backoff_ms.unwrap_or(10_000.0));
        let j = r.jitter.unwrap_or(0.0);
        let wait = if j > 0.0 {
            b * (1.0 - j * self.rng.unit())
        } else {
            b
        };
        let wait = wait.max(r.min_gap_ms.unwrap_or(1.0).max(0.001));
        let gen = self.calls.items[call as usize].gen;
        self.push(self.now + ms(wait), Ev::Attempt(call, gen));
    }

    fn end_call(&mut self, call: u32, end: CallEnd) {
        let (task, critical, started) = {
            let c = &mut self.calls.items[call as usize];
            if c.resolved {
                return;
            }
            c.resolved = true;
            (c.task, c.critical, c.started)
        };
        self.calls.free.push(call);
        let _ = self.c.latency_us.record((self.now - started).max(1));
        match end {
            CallEnd::Ok => {
                self.c.responded += 1;
                self.c.correct += 1;
            }
            CallEnd::Corrupt => {
                self.c.responded += 1;
                self.c.silent += 1;
            }
            CallEnd::Fail => self.c.surfaced += 1,
            CallEnd::Skipped => {
                self.c.surfaced += 1;
                self.c.skipped += 1;
            }
        }
        let degrade = self.w.client.degrade;
        let Some(t) = self.tasks[task as usize].as_mut() else {
            return;
        };
        if matches!(end, CallEnd::Fail | CallEnd::Skipped) && (critical || !degrade) {
            t.failed = true;
        }
        t.outstanding = t.outstanding.saturating_sub(1);
        if t.outstanding == 0 {
            self.step_done(task);
        }
    }

    fn step_deadline(&mut self, t: u32, step_gen: u32) {
        let calls = match self.tasks[t as usize].as_ref() {
            Some(task) if task.step_gen == step_gen && task.outstanding > 0 => task.calls.clone(),
            _ => return,
        };
        for call in calls {
            let c = &self.calls.items[call as usize];
            if !c.resolved && c.task == t {
                self.end_call(call, CallEnd::Fail);
            }
        }
    }

    fn step_done(&mut self, t: u32) {
        let Some(task) = self.tasks[t as usize].as_mut() else {
            return;
        };
        let last = task.step + 1 >= self.w.steps.len();
        if task.failed || last {
            return self.end_task(t);
        }
        task.step += 1;
        let think = ms(self.w.think_ms.unwrap_or(0.0));
        self.push(self.now + think, Ev::StepStart(t));
    }

    fn end_task(&mut self, t: u32) {
        let Some(task) = self.tasks[t as usize].take() else {
            return;
        };
        self.free_tasks.push(t);
        let late = task.deadline.is_some_and(|d| self.now > d);
        self.c.tasks += 1;
        if task.failed || late {
            self.c.failed_tasks += 1;
        }
        if !late {
            self.c.tasks_within_deadline += 1;
        }
        let _ = task.started;
        self.engine.end_session(&task.session, Time(self.now));
        if matches!(self.w.arrival, Some(Arrival::Closed { .. }) | None) {
            self.push(self.now, Ev::StartTask);
        }
    }

    fn breaker_allows(&mut self, tool: usize) -> bool {
        let Some(cfg) = &self.w.client.breaker else {
            return true;
        };
        let b = &mut self.breakers[tool];
        match b.state {
            BreakerState::Closed => true,
            BreakerState::Open(until) if self.now < until => false,
            BreakerState::Open(_) => {
                let probes = cfg.half_open_probes.unwrap_or(1).max(1);
                b.state = BreakerState::HalfOpen {
                    left: probes - 1,
                    ok: 0,
                };
                self.set_open(-1);
                self.breaker_moved(tool, "half_open");
                true
            }
            BreakerState::HalfOpen { left, ok } => {
                if left == 0 {
                    return false;
                }
                b.state = BreakerState::HalfOpen { left: left - 1, ok };
                true
            }
        }
    }

    fn breaker_moved(&mut self, tool: usize, to: &'static str) {
        self.c.breaker_transitions += 1;
        if self.c.breaker_log.len() < BREAKER_LOG_CAP {
            self.c.breaker_log.push(BreakerTransition {
                t_ms: self.now as f64 / 1000.0,
                tool: self.names[tool].clone(),
                to,
            });
        }
    }

    fn set_open(&mut self, delta: i64) {
        self.open_breakers = (self.open_breakers as i64 + delta).max(0) as u64;
        let n = self.open_breakers;
        self.c.second(self.now).open_breakers = n;
    }

    fn breaker_record(&mut self, tool: usize, answer: Answer) {
        let Some(cfg) = self.w.client.breaker.clone() else {
            return;
        };
        let now = self.now;
        let open_us = ms(cfg.open_ms.unwrap_or(5000.0));
        let b = &mut self.breakers[tool];
        let responded = answer != Answer::Fail;
        let correct = answer == Answer::Ok;
        match b.state {
            BreakerState::HalfOpen { left, ok } => {
                let good = match cfg.mode {
                    BreakerMode::ErrorRate => responded,
                    BreakerMode::Eta => correct,
                };
                if !good {
                    b.state = BreakerState::Open(now + open_us);
                    self.set_open(1);
                    self.breaker_moved(tool, "open");
                } else if left == 0 && ok + 1 >= cfg.half_open_probes.unwrap_or(1) {
                    b.state = BreakerState::Closed;
                    b.window.clear();
                    self.breaker_moved(tool, "closed");
                } else {
                    b.state = BreakerState::HalfOpen { left, ok: ok + 1 };
                }
            }
            BreakerState::Open(_) => {}
            BreakerState::Closed => {
                let window = cfg.window.unwrap_or(20) as usize;
                b.window.push_back((responded, correct));
                if b.window.len() > window {
                    b.window.pop_front();
                }
                if b.window.len() >= cfg.min_calls.unwrap_or(10) as usize {
                    let n = b.window.len() as f64;
                    let trip = match cfg.mode {
                        BreakerMode::ErrorRate => {
                            b.window.iter().filter(|(r, _)| !r).count() as f64 / n > cfg.threshold
                        }
                        BreakerMode::Eta => {
                            b.window.iter().filter(|(r, c)| *r && *c).count() as f64 / n
                                < cfg.threshold
                        }
                    };
                    if trip {
                        b.state = BreakerState::Open(now + open_us);
                        self.set_open(1);
                        self.breaker_moved(tool, "open");
                    }
                }
            }
        }
    }
}

/// Run a workload under a plan.
pub fn simulate(w: &Workload, plan: Plan, opts: &SimOptions) -> Report {
    let seed = opts.seed.or(w.seed).unwrap_or(0);
    let plan_seed = plan.seed;
    let mut tools = Vec::new();
    let mut names = Vec::new();
    let mut tool_index = std::collections::HashMap::new();
    let mut servers = Vec::new();
    for (si, s) in w.servers.iter().enumerate() {
        servers.push(ServerState {
            replicas: (0..s.replicas.unwrap_or(1))
                .map(|_| Replica::default())
                .collect(),
            next: 0,
            concurrency: s.concurrency.unwrap_or(u32::MAX),
            queue_timeout: s.queue_timeout_ms.map(ms),
        });
        for (name, t) in &s.tools {
            let mut rng = SplitMix::new(seed ^ 0xe57);
            let expect = (0..64)
                .map(|_| t.latency.sample_ms(rng.unit(), rng.unit()))
                .sum::<f64>()
                / 64.0;
            tool_index.insert(name.clone(), tools.len());
            names.push(name.clone());
            tools.push(ToolInfo {
                server: si,
                latency: t.latency.clone(),
                error_rate: t.error_rate.unwrap_or(0.0),
                expect_us: ms(expect),
            });
        }
    }
    let step_calls: Vec<Vec<(usize, bool)>> = w
        .steps
        .iter()
        .map(|st| {
            st.calls
                .iter()
                .flat_map(|c| {
                    std::iter::repeat_n(
                        (tool_index[&c.tool], c.critical.unwrap_or(true)),
                        c.repeat.unwrap_or(1) as usize,
                    )
                })
                .collect()
        })
        .collect();
    let breakers = tools
        .iter()
        .map(|_| Breaker {
            state: BreakerState::Closed,
            window: VecDeque::new(),
        })
        .collect();
    let limiter = w.client.rate_limiter.as_ref().map(|l| {
        let burst = l.burst.unwrap_or(l.rate_per_s.max(1.0));
        (l.rate_per_s, burst, burst, 0u64)
    });
    let config = EngineConfig {
        record_events: false,
        ..EngineConfig::default()
    };
    let mut sim = Sim {
        w,
        engine: Engine::new(plan, config),
        rng: SplitMix::new(seed),
        now: 0,
        seq: 0,
        queue: BinaryHeap::new(),
        timeouts: VecDeque::new(),
        events: Vec::new(),
        free_events: Vec::new(),
        tools,
        names,
        step_calls,
        servers,
        breakers,
        open_breakers: 0,
        tasks: Vec::new(),
        free_tasks: Vec::new(),
        calls: Slab::new(),
        attempts: Slab::new(),
        limiter,
        retries_made: 0,
        started_tasks: 0,
        target_tasks: opts.tasks.or(w.tasks).unwrap_or(1000),
        c: Counters::default(),
        timeout_us: ms(w.client.timeout_ms.unwrap_or(30_000.0)),
    };
    sim.run();
    let injections = sim
        .engine
        .summary()
        .report()
        .injections
        .into_iter()
        .map(|(k, v)| (k, v.count))
        .collect();
    let duration = sim.now;
    Report::from_counters(
        &sim.c,
        w.name.clone(),
        seed,
        plan_seed,
        duration,
        injections,
        opts.keep_series,
    )
}
