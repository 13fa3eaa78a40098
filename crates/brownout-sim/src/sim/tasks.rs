//! Tasks, their steps and their calls: a task runs its steps in order, a step's calls in
//! parallel; a call ends answered, corrupt, failed or skipped, and a failed critical call (or
//! any failed call without graceful degradation) fails its task. Step and task deadlines end
//! what is still open.

use super::{ms, Arrival, Call, CallEnd, Ev, Sim, Task};
use brownout_core::faults::simulated::SimOutcome;
use std::fmt::Write;

impl Sim<'_> {
    pub(super) fn start_task<const F: bool>(&mut self) {
        self.started_tasks += 1;
        let id = self.started_tasks;
        let slot = self
            .free_tasks
            .last()
            .copied()
            .unwrap_or(self.tasks.len() as u32);
        // The session's key, as the engine has always named it: as brownout's live load
        // labels its sessions (`Brownout-Session: load-i`, which a relay keys as
        // `label:load-i`), agent k of a closed loop (its task slot) or task k of an open one
        // uses session k mod n, so a seed's blast radius selects the same sessions in the
        // simulation as on the wire; without `sessions`, one session per task.
        let session = match self.sessions {
            Some(n) => {
                let k = match self.w.arrival {
                    Some(Arrival::Closed { .. }) | None => u64::from(slot),
                    _ => id - 1,
                };
                let k = (k % n.max(1)) as usize;
                // Long-lived: made on first use, never reset.
                while self.sim_sessions.len() <= k {
                    self.key_buf.clear();
                    let _ = write!(self.key_buf, "label:load-{}", self.sim_sessions.len());
                    let s = self.engine.sim_session(&self.key_buf);
                    self.sim_sessions.push(s);
                }
                k
            }
            None => {
                self.key_buf.clear();
                self.key_buf.push_str("task-");
                self.key_buf.push_str(itoa::Buffer::new().format(id));
                let k = slot as usize;
                match self.sim_sessions.get_mut(k) {
                    Some(s) => self.engine.sim_session_reset(s, &self.key_buf),
                    None => {
                        let s = self.engine.sim_session(&self.key_buf);
                        self.sim_sessions.push(s);
                    }
                }
                k
            }
        };
        let task = Task {
            session,
            step: 0,
            step_gen: 0,
            started: self.now,
            deadline: if F {
                self.w.task_deadline_ms.map(|d| self.now + ms(d))
            } else {
                None
            },
            step_deadline: None,
            outstanding: 0,
            failed: false,
            calls: self.spare_calls.pop().unwrap_or_default(),
            got: Vec::new(),
            pending: Vec::new(),
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
        self.start_step::<F>(t);
    }

    pub(super) fn start_step<const F: bool>(&mut self, t: u32) {
        // Unique across tasks: a task slot is reused, and the deadline of the step its last
        // occupant ran must not end a step of the next.
        self.steps_started = self.steps_started.wrapping_add(1);
        let steps_started = self.steps_started;
        let Some(task) = self.tasks[t as usize].as_mut() else {
            return;
        };
        if task.step > 0 && self.chain.is_chained() && self.take_values(t) {
            return; // a value the step takes is missing: the task failed
        }
        let Some(task) = self.tasks[t as usize].as_mut() else {
            return;
        };
        let step = &self.w.steps[task.step];
        task.step_gen = steps_started;
        task.calls.clear();
        task.step_deadline = if F {
            step.deadline_ms.map(|d| self.now + ms(d))
        } else {
            None
        };
        let step_gen = task.step_gen;
        let deadline = task.step_deadline;
        let step = task.step;
        let session = task.session as u32;
        if let Some(d) = deadline {
            self.push(d, Ev::StepDeadline(t, step_gen));
        }
        let now = self.now;
        let mut ids = std::mem::take(&mut self.step_ids);
        ids.clear();
        let calls = &mut self.calls;
        for &(tool, critical, consumed) in &self.step_calls[step] {
            ids.push(calls.insert(
                |_| Call {
                    task: t,
                    tool,
                    critical,
                    attempts: 0,
                    started: now,
                    resolved: false,
                    gen: 0,
                    timed_out: false,
                    consumed,
                    reads: 0,
                    log: Default::default(),
                    replica: 0,
                    outcome: SimOutcome::Server,
                    session,
                },
                |c| {
                    c.task = t;
                    c.tool = tool;
                    c.critical = critical;
                    c.attempts = 0;
                    c.started = now;
                    c.resolved = false;
                    c.gen += 1;
                    c.timed_out = false;
                    c.consumed = consumed;
                    c.reads = 0;
                    c.log = Default::default();
                    c.session = session;
                },
            ));
        }
        if let Some(task) = self.tasks[t as usize].as_mut() {
            task.outstanding = ids.len() as u32;
            // Only a step deadline ends the step's calls by list.
            if deadline.is_some() {
                task.calls.clear();
                task.calls.extend_from_slice(&ids);
            }
        }
        let n = ids.len() as u64;
        let second = self.c.second(now);
        second.offered += n;
        if !F {
            // A plain workload's call makes one attempt, as it starts: counted here, not
            // one by one in `launch`.
            second.attempts += n;
            self.c.attempts += n;
        }
        // Attempts may end calls, and the last one the task, at once: they go from this
        // list, not the task's. (`calls` grows one by one: a retry budget reads it.)
        for &id in &ids {
            self.c.calls += 1;
            self.try_attempt::<F>(id);
        }
        self.step_ids = ids;
    }

    /// The time the call's step and task have left.
    pub(super) fn deadline_of(&self, call: u32) -> Option<u64> {
        let task = self.tasks[self.calls.items[call as usize].task as usize].as_ref()?;
        match (task.deadline, task.step_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub(super) fn end_call<const F: bool>(&mut self, call: u32, end: CallEnd) {
        let (task, critical) = {
            let c = &mut self.calls.items[call as usize];
            if c.resolved {
                return;
            }
            c.resolved = true;
            (c.task, c.critical)
        };
        self.calls.free.push(call);
        self.record_end(call, end);
        let degrade = self.w.client.degrade;
        let Some(t) = self.tasks[task as usize].as_mut() else {
            return;
        };
        if matches!(end, CallEnd::Fail | CallEnd::Skipped) && (critical || !degrade) {
            t.failed = true;
        }
        t.outstanding = t.outstanding.saturating_sub(1);
        if t.outstanding == 0 {
            self.step_done::<F>(task);
        }
    }

    /// Count one ended call (or one read of it): latency, gates, outcome counters.
    #[inline(always)]
    pub(super) fn record_end(&mut self, call: u32, end: CallEnd) {
        let (started, tool, attempts, timed_out) = {
            let c = &self.calls.items[call as usize];
            (c.started, c.tool, c.attempts, c.timed_out)
        };
        let latency = (self.now - started).max(1);
        let _ = self.c.latency_us.record(latency);
        if self.gates.is_some() {
            self.gates_call(tool, end, timed_out, latency, attempts);
        }
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
    }

    pub(super) fn step_deadline(&mut self, t: u32, step_gen: u32) {
        let calls = match self.tasks[t as usize].as_ref() {
            Some(task) if task.step_gen == step_gen && task.outstanding > 0 => task.calls.clone(),
            _ => return,
        };
        for call in calls {
            let c = &self.calls.items[call as usize];
            if !c.resolved && c.task == t {
                self.calls.items[call as usize].timed_out = true;
                self.end_call::<true>(call, CallEnd::Fail);
            }
        }
    }

    pub(super) fn step_done<const F: bool>(&mut self, t: u32) {
        let Some(task) = self.tasks[t as usize].as_mut() else {
            return;
        };
        let last = task.step + 1 >= self.w.steps.len();
        if task.failed || last {
            return self.end_task::<F>(t);
        }
        task.step += 1;
        let think = ms(self.w.think_ms.unwrap_or(0.0));
        if think == 0 {
            self.push_now::<F>(Ev::StepStart(t));
        } else {
            self.push(self.now + think, Ev::StepStart(t));
        }
    }

    pub(super) fn end_task<const F: bool>(&mut self, t: u32) {
        let Some(task) = self.tasks[t as usize].take() else {
            return;
        };
        self.free_tasks.push(t);
        self.untaken(task.pending.len());
        let late = F && task.deadline.is_some_and(|d| self.now > d);
        self.c.tasks += 1;
        if task.failed || late {
            self.c.failed_tasks += 1;
        }
        if !late {
            self.c.tasks_within_deadline += 1;
        }
        if self.gates.is_some() {
            self.gates_task(!(task.failed || late));
        }
        let _ = task.started;
        // Long-lived sessions (`sessions`) outlive their tasks, as on the wire: their draws
        // go on from one task to the next.
        // (A task's own session ends with it: its slot's state is reset for the next task.)
        let mut calls = task.calls;
        calls.clear();
        self.spare_calls.push(calls);
        if matches!(self.w.arrival, Some(Arrival::Closed { .. }) | None) {
            self.push_now::<F>(Ev::StartTask);
        }
    }
}
