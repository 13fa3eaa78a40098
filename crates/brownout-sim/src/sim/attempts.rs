//! Attempts on the wire: the client's gates (deadline-aware skip, breaker, rate limiter),
//! the engine's fault decision, the trip to the server, its pool (replicas, concurrency,
//! queue, queue timeout), service time and base error rate, and the answer or the client's
//! timeout. Abandoned attempts keep their server slot until the server finishes them.

use super::chain::Read;
use super::limiter::Take;
use super::{delay_us, Answer, Attempt, CallEnd, Ev, Sim};
use brownout_core::faults::simulated::SimOutcome;
use brownout_core::Time;

impl Sim<'_> {
    pub(super) fn try_attempt<const F: bool>(&mut self, call: u32) {
        if !F {
            return self.launch::<F>(call, None);
        }
        let tool = self.calls.items[call as usize].tool;
        let deadline = if self.deadlines {
            self.deadline_of(call)
        } else {
            None
        };
        if let Some(d) = deadline {
            let left = d.saturating_sub(self.now);
            if left == 0 || (self.w.client.deadline_aware && left < self.tools[tool].expect_us) {
                return self.end_call::<F>(call, CallEnd::Skipped);
            }
        }
        if !self.breaker_allows(tool) {
            return self.end_call::<F>(call, CallEnd::Skipped);
        }
        let take = match self.limiter.as_mut() {
            Some(bucket) => bucket.take(self.now),
            None => Take::Go,
        };
        match take {
            Take::Go => {}
            Take::Wait(wait) => {
                // Go out when the token exists, without passing the limiter again.
                let gen = self.calls.items[call as usize].gen;
                self.push(self.now + wait, Ev::Launch(call, gen));
                return;
            }
            Take::Reject => {
                self.calls.items[call as usize].attempts += 1;
                self.calls.items[call as usize].timed_out = false;
                self.c.attempts += 1;
                let s = self.c.second(self.now);
                s.attempts += 1;
                s.errors += 1;
                return self.attempt_failed::<F>(call);
            }
        }
        self.launch::<F>(call, deadline);
    }

    pub(super) fn launch<const F: bool>(&mut self, call: u32, deadline: Option<u64>) {
        let (tool, task, session) = {
            let c = &mut self.calls.items[call as usize];
            c.attempts += 1;
            (c.tool, c.task, c.session)
        };
        // `F` false: the call started just now ([`Sim::start_step`] is the only way in), and
        // its one attempt was counted with the step's calls.
        if F {
            self.c.attempts += 1;
            self.c.second(self.now).attempts += 1;
        }
        // The faults the call can meet were resolved for its tool and server (`servers:`)
        // once; the session's own state goes with it.
        // (`F` false: the call's task is the one that just started it, in its session.)
        let session = if !F {
            &mut self.sim_sessions[session as usize]
        } else {
            match self.tasks[task as usize].as_ref() {
                Some(t) => &mut self.sim_sessions[t.session],
                None => self
                    .orphan_session
                    .get_or_insert_with(|| self.engine.sim_session("")),
            }
        };
        let sim = self
            .engine
            .on_simulated_call_at(&mut self.sites[tool], session, Time(self.now));
        let call_gen = self.calls.items[call as usize].gen;
        let arrive = self.now + sim.request_delay.0;
        // A plain workload's call served at once and answered as its service ends, before
        // its timeout: the call's record is the attempt's too ([`Sim::serve_alone`]).
        if !F
            && arrive == self.now
            && sim.response_delay.0 == 0
            && !matches!(sim.outcome, SimOutcome::FailFast | SimOutcome::NoAnswer)
            && self.serve_alone(call, call_gen, tool, sim.outcome)
        {
            return;
        }
        let a = self.new_attempt(call, call_gen, tool, sim.outcome, sim.response_delay.0);
        let gen = self.attempts.items[a as usize].gen;
        let timeout = self.now + self.timeout_us;
        // The client's timeout: an earlier deadline on the event queue, else on the FIFO of
        // timeouts (pushed below, once it is known whether it can ever fire).
        let fifo = match deadline.filter(|_| F) {
            Some(d) if d < timeout => {
                self.push(d, Ev::ClientTimeout(a, gen));
                false
            }
            _ => true,
        };
        let mut answered_by = None;
        if sim.outcome == SimOutcome::FailFast {
            self.push(arrive, Ev::Reply(a, gen, Answer::Fail));
        } else {
            self.attempts.items[a as usize].server = true;
            if arrive == self.now {
                answered_by = self
                    .at_server(a)
                    .filter(|_| sim.outcome != SimOutcome::NoAnswer)
                    .map(|done| done + sim.response_delay.0);
            } else {
                self.push(arrive, Ev::AtServer(a, gen));
            }
        }
        // A timeout that comes due after the answer (or with it: at one instant the answer's
        // event goes first) would find the attempt answered and do nothing: it is not queued.
        // Only the FIFO's order matters, and this is the only push onto it.
        if fifo && answered_by.is_none_or(|t| t > timeout) {
            self.queue.push_timeout(timeout, a, gen);
        }
    }

    /// A new attempt of `call` (generation `call_gen`), held by the client; returns its
    /// slot.
    #[inline(always)]
    fn new_attempt(
        &mut self,
        call: u32,
        call_gen: u32,
        tool: usize,
        outcome: SimOutcome,
        response_delay: u64,
    ) -> u32 {
        let now = self.now;
        self.attempts.insert(
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
                outcome,
                response_delay,
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
                at.outcome = outcome;
                at.response_delay = response_delay;
                at.started = now;
            },
        )
    }

    /// A plain workload's attempt that reaches its server at once and is answered as its
    /// service ends: when the server serves it at once and its service ends no later than
    /// the client's timeout, nothing but its service's end can happen to it (no timeout,
    /// deadline, queue or retry; nothing else ends its call), so the call's own record
    /// keeps its replica and outcome and [`Ev::Served`] carries the call: no attempt record,
    /// the same events, draws and counts as [`Sim::at_server`] and
    /// [`Sim::service_done`] with one. `false` (nothing done) when the replica is full. A
    /// service that ends after the timeout is served with an attempt record, as
    /// [`Sim::launch`] would have.
    ///
    /// On a server without a concurrency limit the replica is not chosen and a call served
    /// alone is not counted: no replica of it ever queues, so neither is observable (the
    /// attempts with a record count theirs, which stay far below the limit of `u32::MAX`).
    fn serve_alone(&mut self, call: u32, call_gen: u32, tool: usize, outcome: SimOutcome) -> bool {
        let info = &self.tools[tool];
        let r = if info.unbounded {
            0
        } else {
            let s = &mut self.servers[info.server];
            let r = s.next;
            if s.replicas[r].busy >= s.concurrency {
                return false;
            }
            s.next = if r + 1 >= s.replicas.len() { 0 } else { r + 1 };
            s.replicas[r].busy += 1;
            r
        };
        let done = self.now + self.service_us(tool);
        let timeout = self.now + self.timeout_us;
        if done <= timeout {
            let c = &mut self.calls.items[call as usize];
            c.replica = r as u32;
            c.outcome = outcome;
            self.push(done, Ev::Served(call, call_gen));
        } else {
            if self.tools[tool].unbounded {
                // An attempt record's service end counts its replica down.
                self.servers[self.tools[tool].server].replicas[r].busy += 1;
            }
            let a = self.new_attempt(call, call_gen, tool, outcome, 0);
            let at = &mut self.attempts.items[a as usize];
            at.server = true;
            at.replica = r;
            let gen = at.gen;
            self.push(done, Ev::ServiceDone(a, gen));
            self.queue.push_timeout(timeout, a, gen);
        }
        true
    }

    /// A service time of `tool`, drawn.
    #[inline(always)]
    fn service_us(&mut self, tool: usize) -> u64 {
        let (u1, u2) = (self.rng.unit(), self.rng.unit());
        delay_us(self.tools[tool].latency.sample_ms(u1, u2))
    }

    /// The service of a call served alone ([`Sim::serve_alone`]) ended: what
    /// [`Sim::service_done`] and [`Sim::reply`] do for its attempt.
    pub(super) fn served<const F: bool>(&mut self, call: u32) {
        let (tool, r, outcome, started, consumed) = {
            let c = &self.calls.items[call as usize];
            // Current and open: nothing but this event ends such a call (`serve_alone`).
            debug_assert!(!c.resolved);
            (c.tool, c.replica as usize, c.outcome, c.started, c.consumed)
        };
        let (server, unbounded) = (self.tools[tool].server, self.tools[tool].unbounded);
        if !unbounded {
            self.servers[server].replicas[r].busy -= 1;
        }
        // Always an answer: `serve_alone` takes no attempt whose answer is lost.
        let answer = self.answer(tool, outcome).unwrap_or(Answer::Fail);
        // The attempt started with its call (a plain workload's call makes one attempt,
        // launched as the call starts).
        if unbounded {
            // Nothing is left to do once the call is counted, when its count ends it
            // directly (a clean answer nobody takes from, or a failure): `push_now`.
            self.tail = answer == Answer::Fail || answer == Answer::Ok && !consumed;
            self.answered_open::<F>(call, tool, consumed, started, outcome, answer);
            self.tail = false;
        } else {
            self.answered_open::<F>(call, tool, consumed, started, outcome, answer);
            self.next_in_queue(server, r);
        }
    }

    /// The attempt reaches its server: served at once (returns when its service ends) or
    /// queued.
    #[inline(always)]
    pub(super) fn at_server(&mut self, a: u32) -> Option<u64> {
        let tool = self.attempts.items[a as usize].tool;
        let server = self.tools[tool].server;
        let s = &mut self.servers[server];
        // Round robin: `next` stays below the replica count (no division per attempt).
        let r = s.next;
        s.next = if r + 1 >= s.replicas.len() { 0 } else { r + 1 };
        self.attempts.items[a as usize].replica = r;
        if s.replicas[r].busy < s.concurrency {
            Some(self.begin_service(a, tool))
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
            None
        }
    }

    /// Service starts; returns when it ends.
    #[inline(always)]
    pub(super) fn begin_service(&mut self, a: u32, tool: usize) -> u64 {
        let server = self.tools[tool].server;
        let r = self.attempts.items[a as usize].replica;
        self.servers[server].replicas[r].busy += 1;
        let service = self.service_us(tool);
        let gen = self.attempts.items[a as usize].gen;
        let done = self.now + service;
        self.push(done, Ev::ServiceDone(a, gen));
        done
    }

    pub(super) fn service_done<const F: bool>(&mut self, a: u32) {
        let (tool, r, outcome, delay, gen) = {
            let at = &mut self.attempts.items[a as usize];
            at.server = false;
            (at.tool, at.replica, at.outcome, at.response_delay, at.gen)
        };
        let server = self.tools[tool].server;
        self.servers[server].replicas[r].busy -= 1;
        let answer = self.answer(tool, outcome);
        // A reply at once frees the slot itself (when the client still waits for it).
        match answer {
            Some(ans) if delay == 0 && self.attempts.items[a as usize].client => {
                self.reply::<F>(a, ans)
            }
            Some(ans) if delay > 0 => self.push(self.now + delay, Ev::Reply(a, gen, ans)),
            _ => self.maybe_free(a),
        }
        self.next_in_queue(server, r);
    }

    /// The server's answer to an attempt with this outcome as its service ends (its base
    /// error rate drawn): none when no answer reaches the client.
    #[inline(always)]
    fn answer(&mut self, tool: usize, outcome: SimOutcome) -> Option<Answer> {
        let base_error =
            self.tools[tool].error_rate > 0.0 && self.rng.unit() < self.tools[tool].error_rate;
        match (base_error, outcome) {
            (_, SimOutcome::NoAnswer) => None,
            (true, _) | (_, SimOutcome::FailAfter | SimOutcome::FailFast) => Some(Answer::Fail),
            (false, SimOutcome::Corrupt | SimOutcome::Wrong) => Some(Answer::Corrupt),
            (false, SimOutcome::Server) => Some(Answer::Ok),
        }
    }

    /// A replica's slot came free: the next in its queue is served, skipping those that
    /// timed out while waiting.
    #[inline(always)]
    fn next_in_queue(&mut self, server: usize, r: usize) {
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
    pub(super) fn maybe_free(&mut self, a: u32) {
        let at = &mut self.attempts.items[a as usize];
        if !at.client && !at.server && !at.freed {
            at.freed = true;
            self.attempts.free.push(a);
        }
    }

    pub(super) fn reply<const F: bool>(&mut self, a: u32, answer: Answer) {
        let (call, call_gen, started, outcome) = {
            let at = &mut self.attempts.items[a as usize];
            if !at.client {
                self.maybe_free(a);
                return;
            }
            at.client = false;
            (at.call, at.call_gen, at.started, at.outcome)
        };
        self.maybe_free(a);
        self.answered::<F>(call, call_gen, started, outcome, answer);
    }

    /// The client got `answer` to its attempt of `call` (generation `call_gen`) that
    /// started at `started` with this outcome.
    #[inline(always)]
    fn answered<const F: bool>(
        &mut self,
        call: u32,
        call_gen: u32,
        started: u64,
        outcome: SimOutcome,
        answer: Answer,
    ) {
        let c = &self.calls.items[call as usize];
        if c.gen != call_gen || c.resolved {
            return;
        }
        let (tool, consumed) = (c.tool, c.consumed);
        self.answered_open::<F>(call, tool, consumed, started, outcome, answer);
    }

    /// [`Sim::answered`] for a call known to be current and open (its `tool` and
    /// `consumed` read by the caller).
    #[inline(always)]
    fn answered_open<const F: bool>(
        &mut self,
        call: u32,
        tool: usize,
        consumed: bool,
        started: u64,
        outcome: SimOutcome,
        answer: Answer,
    ) {
        if F {
            self.breaker_record(tool, answer);
        }
        match answer {
            // A clean answer no later step takes from: what `read_done` would do, directly.
            Answer::Ok if !consumed => self.end_call::<F>(call, CallEnd::Ok),
            Answer::Ok => self.read_done(call, Read::Clean),
            Answer::Corrupt if outcome == SimOutcome::Corrupt => self.read_done(call, Read::Drift),
            Answer::Corrupt => self.read_done(call, Read::Wrong),
            Answer::Fail => {
                // Per attempt: the failure lands in the second its attempt started, so a
                // second's error rate is a share of that second's attempts (never over 100 %).
                self.c.second(started).errors += 1;
                self.calls.items[call as usize].timed_out = self.timing_out;
                self.attempt_failed::<F>(call);
            }
        }
    }
}
