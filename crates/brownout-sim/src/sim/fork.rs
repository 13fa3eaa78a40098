//! Runs that share their beginning: a search simulates one seed under many plans that differ
//! only in their faults' numbers, and until the first instant any of those faults can act
//! (the start of their windows) every such run is the same run. [`Prefix`] simulates that
//! part once and pauses before the first event at that instant; [`Prefix::resume`] copies
//! the paused state, puts in the plan's engine, and runs on.
//!
//! The copy is exactly the run from the start: before the pause no fault of either plan
//! could act on a call (each is windowed to start at or after it, and none is of a kind that
//! takes calls whatever its selectors say), so no fault drew, counted or kept state — the
//! engine is a fresh one and each session's decision state is copied only while it holds
//! none ([`SimSession::fork`]); both plans name the same faults in the same order with the
//! same seed, so the sessions' draw streams are the same. Anything else (a fault that can act
//! from the start, other faults, another seed) is refused: `None`, and the caller simulates
//! from the start. A test compares whole reports, resumed and simulated from the start.
//!
//! [`Forks`] keeps a few seeds' prefixes for the threads of a search.

use super::{build, engine_for, sites_of, Sim, SimOptions};
use crate::metrics::Report;
use crate::workload::Workload;
use brownout_core::engine::SimSession;
use brownout_core::faults::Targets;
use brownout_core::Plan;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// The first instant (µs of virtual time) any fault of `plan` can act on a call of `w`.
pub fn quiet_until(w: &Workload, plan: &Plan) -> u64 {
    let tools: Vec<&String> = w.servers.iter().flat_map(|s| s.tools.keys()).collect();
    plan.faults
        .iter()
        .filter(|f| f.enabled)
        .map(|f| {
            let always = tools.iter().any(|t| {
                f.effect
                    .targets("tools/call", Some(t.as_str()), f.select.tools.as_ref())
                    == Targets::Always
            });
            match f.select.window {
                Some(win) if !always => win.start.0,
                _ => 0,
            }
        })
        .min()
        .unwrap_or(u64::MAX)
}

/// The faults' identity as far as the sessions' draws go: ids in order, and the seed.
fn faults_of(plan: &Plan) -> (Vec<String>, u64) {
    (
        plan.faults.iter().map(|f| f.id.clone()).collect(),
        plan.seed,
    )
}

/// A run paused before its faults could first act.
pub struct Prefix<'w> {
    sim: Sim<'w>,
    opts: SimOptions,
    /// Paused at this instant (`false`: the run ended before it).
    paused: bool,
    at: u64,
    faults: (Vec<String>, u64),
}

impl<'w> Prefix<'w> {
    /// Simulate `w` under `plan` up to the first instant a fault can act; `None` when one can
    /// from the start.
    pub fn new(w: &'w Workload, plan: Plan, opts: &SimOptions) -> Option<Prefix<'w>> {
        let at = quiet_until(w, &plan);
        if at == 0 {
            return None;
        }
        let faults = faults_of(&plan);
        let mut sim = build(w, plan, opts);
        sim.start();
        let paused = sim.run_on(Some(at));
        Some(Prefix {
            sim,
            opts: opts.clone(),
            paused,
            at,
            faults,
        })
    }

    /// The run under `plan` from the start — the same report as `simulate` with this
    /// prefix's workload and options — or `None` when `plan` may act before the pause or
    /// names other faults (simulate it from the start).
    pub fn resume(&self, plan: Plan) -> Option<Report> {
        self.copy(plan).map(Resumed::finish)
    }

    /// The paused state with `plan`'s engine, to run on without holding the prefix.
    fn copy(&self, plan: Plan) -> Option<Resumed<'w>> {
        if quiet_until(self.sim.w, &plan) < self.at || faults_of(&plan) != self.faults {
            return None;
        }
        let s = &self.sim;
        let engine = engine_for(plan);
        let sites = sites_of(&engine, s.w, &s.tools, &s.names);
        let sim_sessions = s
            .sim_sessions
            .iter()
            .map(SimSession::fork)
            .collect::<Option<Vec<_>>>()?;
        let orphan_session = match &s.orphan_session {
            Some(o) => Some(o.fork()?),
            None => None,
        };
        let sim = Sim {
            w: s.w,
            engine,
            sites,
            sim_sessions,
            orphan_session,
            key_buf: s.key_buf.clone(),
            step_ids: s.step_ids.clone(),
            spare_calls: s.spare_calls.clone(),
            rng: s.rng.clone(),
            now: s.now,
            queue: s.queue.clone(),
            tools: s.tools.clone(),
            names: s.names.clone(),
            step_calls: s.step_calls.clone(),
            chain: s.chain.clone(),
            policy: s.policy,
            deadlines: s.deadlines,
            servers: s.servers.clone(),
            breakers: s.breakers.clone(),
            open_breakers: s.open_breakers,
            tasks: s.tasks.clone(),
            free_tasks: s.free_tasks.clone(),
            calls: s.calls.clone(),
            attempts: s.attempts.clone(),
            limiter: s.limiter.clone(),
            retries_made: s.retries_made,
            steps_started: s.steps_started,
            started_tasks: s.started_tasks,
            target_tasks: s.target_tasks,
            c: s.c.clone(),
            timeout_us: s.timeout_us,
            gates: s.gates.clone(),
            stop_at_breach: s.stop_at_breach,
            sessions: s.sessions,
            timing_out: s.timing_out,
            budget: s.budget.clone(),
            stopped_by: s.stopped_by.clone(),
            events: s.events,
            held: s.held,
            tail: s.tail,
            deferred: s.deferred,
        };
        Some(Resumed {
            sim,
            paused: self.paused,
            opts: self.opts.clone(),
        })
    }
}

/// A copy of a prefix with its own plan.
struct Resumed<'w> {
    sim: Sim<'w>,
    paused: bool,
    opts: SimOptions,
}

impl Resumed<'_> {
    fn finish(mut self) -> Report {
        if self.paused {
            self.sim.run_on(None);
        }
        self.sim.report(&self.opts)
    }
}

/// Prefixes of the last few seeds simulated, shared by a search's threads: one workload and
/// one set of options, the seed (the plan's and the simulation's) set per run.
pub struct Forks<'w> {
    w: &'w Workload,
    opts: SimOptions,
    kept: Mutex<VecDeque<(u64, Arc<Mutex<Prefix<'w>>>)>>,
    keep: usize,
}

impl<'w> Forks<'w> {
    /// Keep at most `keep` seeds' prefixes (each holds a paused run's state).
    pub fn new(w: &'w Workload, opts: SimOptions, keep: usize) -> Forks<'w> {
        Forks {
            w,
            opts,
            kept: Mutex::new(VecDeque::new()),
            keep: keep.max(1),
        }
    }

    /// `simulate(w, plan, opts)` with `seed` as the plan's seed and the simulation's, from
    /// the seed's prefix where it can be.
    pub fn simulate(&self, mut plan: Plan, seed: u64) -> Report {
        plan.seed = seed;
        let opts = SimOptions {
            seed: Some(seed),
            ..self.opts.clone()
        };
        let found = self
            .kept
            .lock()
            .ok()
            .and_then(|k| k.iter().find(|e| e.0 == seed).map(|e| e.1.clone()));
        let prefix = match found {
            Some(p) => Some(p),
            None => Prefix::new(self.w, plan.clone(), &opts).map(|p| {
                let p = Arc::new(Mutex::new(p));
                if let Ok(mut k) = self.kept.lock() {
                    if k.len() >= self.keep {
                        k.pop_front();
                    }
                    k.push_back((seed, p.clone()));
                }
                p
            }),
        };
        // The copy is made under the lock, the run goes on outside it.
        let copied = prefix.and_then(|p| p.lock().ok()?.copy(plan.clone()));
        match copied {
            Some(r) => r.finish(),
            None => super::simulate(self.w, plan, &opts),
        }
    }
}

#[cfg(test)]
#[path = "fork_tests.rs"]
mod tests;
