//! The simulator's precompiled entry: the same decisions as
//! [`Engine::on_simulated_call_to`], without string work, hashing or allocation per call.
//!
//! Two things are resolved once instead of on every call:
//!
//! - a [`SimCallSite`] per (server, tool): which faults a `tools/call` of that tool on that
//!   server can ever meet. Everything a fault's selectors decide from the method, the tool,
//!   the server and the (absent) arguments — `enabled`, `methods`, `tools`, `servers`,
//!   `arguments`, the kind's own [`crate::faults::Targets`] — is decided here;
//! - a [`SimSession`] per session, held by the driver instead of the engine's session map:
//!   the key's hashes (its draw stream and its blast-radius membership), the sequence
//!   number and the per-fault counters, reset in place for the next session.
//!
//! What is left per call is what depends on the session's history and the time: `sessions`,
//! `window`, `after_calls`, `every_nth`, `max_injections`, the draw (or the correlation),
//! then the kind's effect, in plan order — exactly as [`Engine::decide`] and
//! [`Engine::on_simulated_call_to`] do it (a test drives both side by side).
//!
//! Made for a driver that keeps its plan (the simulator). After a plan change
//! ([`Engine::set_plan`]) a site is recompiled on its next use, and a session's counters
//! start again (the engine's own sessions carry the counters of faults a new plan keeps).

use super::{Counters, Engine};
use crate::faults::simulated::SimulatedCall;
use crate::faults::{Ctx, Targets};
use crate::rng::{hash_str, salt, StreamKey};
use crate::select::session_selected_hash;
use crate::time::Time;

/// The method every simulated call is.
const METHOD: &str = "tools/call";

/// The faults a simulated call of one tool on one server can meet, in plan order.
#[derive(Debug, Clone)]
pub struct SimCallSite {
    generation: u64,
    server: Option<String>,
    tool: String,
    /// (fault index, how its dynamic selectors are decided).
    faults: Box<[(usize, Gate)]>,
}

/// What is left to decide per call for one fault at one site.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Gate {
    /// The kind takes the call whatever its dynamic selectors say.
    Always,
    /// Only the draw against this probability: no `sessions`, `window`, `after_calls`,
    /// `every_nth`, `max_injections` or correlation (most faults).
    Draw(f64),
    /// Every dynamic selector, in the engine's order.
    Selected,
}

impl SimCallSite {
    /// The tool this site calls.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// No fault of the plan can ever hit a call here.
    pub fn is_quiet(&self) -> bool {
        self.faults.is_empty()
    }
}

/// One session's decision state, held by the driver (see the module doc).
#[derive(Debug)]
pub struct SimSession {
    generation: u64,
    /// `hash_str(key)`: the session's draw streams.
    hash: u64,
    /// `hash_str` of the key below its server (`crate::session_key::split`): the blast radius.
    radius_hash: u64,
    next_seq: u64,
    counters: Vec<Counters>,
    /// Per fault, its draw key for this session (seed, fault, session), made on first use.
    keys: Vec<Option<StreamKey>>,
}

impl SimSession {
    /// A copy of this session while no fault has counted a call in it or kept state for it
    /// (a simulator's snapshot taken before any fault can act, run on under another plan
    /// with the same faults); `None` once one has.
    pub fn fork(&self) -> Option<SimSession> {
        let untouched = self
            .counters
            .iter()
            .all(|c| c.matches == 0 && c.injections == 0 && !c.bad && c.kind.is_empty());
        untouched.then(|| SimSession {
            generation: self.generation,
            hash: self.hash,
            radius_hash: self.radius_hash,
            next_seq: self.next_seq,
            counters: self.counters.iter().map(|_| Counters::default()).collect(),
            keys: self.keys.clone(),
        })
    }
}

impl Engine {
    /// Resolve the static part of every fault's selectors for `tools/call` of `tool` on
    /// `server` (`None`: a workload of one unnamed server).
    pub fn sim_call_site(&self, server: Option<&str>, tool: &str) -> SimCallSite {
        let faults = self
            .plan
            .faults
            .iter()
            .enumerate()
            .filter_map(|(i, f)| {
                if !f.enabled || !f.select.method_matches(METHOD) {
                    return None;
                }
                match f
                    .effect
                    .targets(METHOD, Some(tool), f.select.tools.as_ref())
                {
                    Targets::Skip => return None,
                    Targets::Always => return Some((i, Gate::Always)),
                    Targets::IgnoreTools => {}
                    Targets::BySelector => {
                        if !f.select.tool_matches(Some(tool)) {
                            return None;
                        }
                    }
                }
                // A simulated call has no arguments: a fault that asks for some never hits.
                let sel = &f.select;
                let plain = sel.sessions.is_none()
                    && sel.window.is_none()
                    && sel.after_calls == 0
                    && sel.every_nth.is_none()
                    && sel.max_injections.is_none()
                    && f.correlation.is_none();
                let gate = if plain {
                    Gate::Draw(sel.probability)
                } else {
                    Gate::Selected
                };
                (sel.server_matches(server) && sel.arguments_match(|_| None)).then_some((i, gate))
            })
            .collect();
        SimCallSite {
            generation: self.generation,
            server: server.map(str::to_string),
            tool: tool.to_string(),
            faults,
        }
    }

    /// A fresh session keyed `key`, as the engine would make it on its first call.
    pub fn sim_session(&self, key: &str) -> SimSession {
        let mut s = SimSession {
            generation: self.generation,
            hash: 0,
            radius_hash: 0,
            next_seq: 0,
            counters: Vec::new(),
            keys: Vec::new(),
        };
        self.sim_session_reset(&mut s, key);
        s
    }

    /// Make `s` a fresh session keyed `key`, keeping its allocations (the previous session
    /// has ended: as with [`Engine::end_session`], nothing of it carries over).
    pub fn sim_session_reset(&self, s: &mut SimSession, key: &str) {
        let n = self.plan.faults.len();
        s.generation = self.generation;
        s.hash = hash_str(key);
        let base = crate::session_key::split(key).1;
        // Most keys have no server part: their base is the key itself, hashed just above.
        s.radius_hash = if base.len() == key.len() {
            s.hash
        } else {
            hash_str(base)
        };
        s.next_seq = 0;
        // In place when the plan's size is the same (a task's session reset for the next).
        if s.counters.len() == n && s.keys.len() == n {
            s.counters.fill_with(Counters::default);
            s.keys.fill(None);
        } else {
            s.counters.clear();
            s.counters.resize_with(n, Counters::default);
            s.keys.clear();
            s.keys.resize(n, None);
        }
    }

    /// [`Engine::on_simulated_call_to`] for a call at `site` in `session`: the same
    /// selectors, counters, draws and effects, decided from what the site and the session
    /// already resolved.
    #[inline(always)]
    pub fn on_simulated_call_at(
        &mut self,
        site: &mut SimCallSite,
        session: &mut SimSession,
        now: Time,
    ) -> SimulatedCall {
        if site.generation != self.generation {
            *site = self.sim_call_site(site.server.as_deref(), &site.tool);
        }
        if session.generation != self.generation {
            // Counters of another plan: the session counts again from here.
            let n = self.plan.faults.len();
            session.generation = self.generation;
            session.counters.clear();
            session.counters.resize_with(n, Counters::default);
            session.keys.clear();
            session.keys.resize(n, None);
        }
        let seq = session.next_seq;
        session.next_seq += 1;
        let mut out = SimulatedCall::default();
        if site.faults.is_empty() {
            return out;
        }
        let seed = self.plan.seed;
        for &(i, gate) in site.faults.iter() {
            let key = *session.keys[i].get_or_insert_with(|| {
                StreamKey::new(seed, self.plan.faults[i].id_hash, session.hash)
            });
            let fire = match gate {
                Gate::Draw(p) => {
                    // What the general path decides when no dynamic selector is set: the
                    // counter, then the draw (none when it cannot fire).
                    let c = &mut session.counters[i];
                    c.matches += 1;
                    let fire = p >= 1.0 || (p > 0.0 && key.unit(seq, salt::FIRE) < p);
                    if fire {
                        c.injections += 1;
                    }
                    fire
                }
                Gate::Selected => self.selected(i, key, session, seq, now),
                Gate::Always => true,
            };
            if fire {
                self.inject(i, key, &site.tool, session, seq, now, &mut out);
            }
        }
        out
    }

    /// Every dynamic selector of fault `i`, then its draw or correlation, in the engine's
    /// order (counting the match and the injection). Out of line: the plain draw above is
    /// the common case, and this one's loads were hoisted onto every call.
    #[inline(never)]
    fn selected(
        &self,
        i: usize,
        key: StreamKey,
        session: &mut SimSession,
        seq: u64,
        now: Time,
    ) -> bool {
        let plan = &*self.plan;
        let seed = plan.seed;
        let f = &plan.faults[i];
        let sel = &f.select;
        if let Some(frac) = sel.sessions {
            if !in_radius(seed, session.radius_hash, frac) {
                return false;
            }
        }
        if !sel.in_window(now) {
            return false;
        }
        let c = &mut session.counters[i];
        if !c.admits(sel) {
            return false;
        }
        let p = sel.probability;
        let fire = match &f.correlation {
            Some(corr) => correlated(corr, p, key, seed, f.id_hash, seq, now, &mut c.bad),
            None => p >= 1.0 || key.unit(seq, salt::FIRE) < p,
        };
        if fire {
            c.injections += 1;
        }
        fire
    }

    /// Fault `i` takes the call: its kind's effect on `out`. Out of line (a fault fires on
    /// a few calls in a hundred).
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn inject(
        &mut self,
        i: usize,
        key: StreamKey,
        tool: &str,
        session: &mut SimSession,
        seq: u64,
        now: Time,
        out: &mut SimulatedCall,
    ) {
        // Borrowed beside `shared` and `summary` (other fields): no reference count.
        let plan = &*self.plan;
        let f = &plan.faults[i];
        let state = if f.effect.shared_state() {
            self.shared.entry(i).or_default()
        } else {
            &mut session.counters[i].kind
        };
        let mut c = Ctx {
            key,
            seq,
            now,
            method: METHOD,
            tool: Some(tool),
            id: None,
            tools: f.select.tools.as_ref(),
            state,
            schema: None,
        };
        if f.effect.simulate(f.direction, &mut c, out) {
            out.injected += 1;
            self.summary.record_fault(&f.id, f.effect.kind());
        }
    }
}

// Out of line, so that the hashes they compute are not hoisted onto every call's path (the
// optimiser computed them for every fault whether its selectors asked for them or not).

/// [`session_selected_hash`], for a fault with `sessions`.
#[inline(never)]
fn in_radius(seed: u64, radius_hash: u64, fraction: f64) -> bool {
    session_selected_hash(seed, radius_hash, fraction)
}

/// A correlated fault's draw.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn correlated(
    corr: &crate::faults::correlation::Correlation,
    p: f64,
    key: StreamKey,
    seed: u64,
    id_hash: u64,
    seq: u64,
    now: Time,
    bad: &mut bool,
) -> bool {
    corr.fires(p, key, StreamKey::new(seed, id_hash, 0), seq, now, bad)
}
