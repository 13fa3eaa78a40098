//! A run's state before its first event: the servers, tools and steps resolved from the
//! workload, the engine and its per-tool call sites, the gates (and the engine a fork makes
//! for another plan).

use super::{
    gates, ms, Breaker, Counters, EventQueue, Replica, ServerState, Sim, SimOptions, Slab,
    SplitMix, TokenBucket, ToolInfo, Workload,
};
use brownout_core::engine::SimCallSite;
use brownout_core::{Engine, EngineConfig, Plan};

/// The engine a run decides its faults with.
pub(super) fn engine_for(plan: Plan) -> Engine {
    let config = EngineConfig {
        record_events: false,
        ..EngineConfig::default()
    };
    Engine::new(plan, config)
}

/// Per tool, the faults a call of it can meet.
pub(super) fn sites_of(
    engine: &Engine,
    w: &Workload,
    tools: &[ToolInfo],
    names: &[String],
) -> Vec<SimCallSite> {
    tools
        .iter()
        .zip(names)
        .map(|(t, name)| engine.sim_call_site(Some(w.servers[t.server].name.as_str()), name))
        .collect()
}

/// A run's state before its first event.
pub(super) fn build<'w>(w: &'w Workload, plan: Plan, opts: &SimOptions) -> Sim<'w> {
    let seed = opts.seed.or(w.seed).unwrap_or(0);
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
                unbounded: s.concurrency.is_none(),
            });
        }
    }
    let chain = crate::chain::Chain::of(&w.steps);
    let step_calls: Vec<Vec<(usize, bool, bool)>> = w
        .steps
        .iter()
        .enumerate()
        .map(|(i, st)| {
            st.calls
                .iter()
                .flat_map(|c| {
                    std::iter::repeat_n(
                        (tool_index[&c.tool], c.critical.unwrap_or(true)),
                        c.repeat.unwrap_or(1) as usize,
                    )
                })
                .enumerate()
                .map(|(j, (tool, critical))| {
                    let consumed = chain
                        .consumed
                        .get(i)
                        .and_then(|s| s.get(j))
                        .is_some_and(|p| !p.is_empty());
                    (tool, critical, consumed)
                })
                .collect()
        })
        .collect();
    let breakers = tools.iter().map(|_| Breaker::new()).collect();
    let limiter = w.client.rate_limiter.as_ref().map(TokenBucket::new);
    let engine = engine_for(plan);
    let sites = sites_of(&engine, w, &tools, &names);
    let mut sim = Sim {
        w,
        engine,
        sites,
        sim_sessions: Vec::new(),
        orphan_session: None,
        key_buf: String::new(),
        step_ids: Vec::new(),
        spare_calls: Vec::new(),
        rng: SplitMix::new(seed),
        now: 0,
        queue: EventQueue::new(),
        tools,
        names,
        step_calls,
        chain,
        policy: w.client.agent.policy,
        servers,
        breakers,
        open_breakers: 0,
        tasks: Vec::new(),
        free_tasks: Vec::new(),
        calls: Slab::new(),
        attempts: Slab::new(),
        limiter,
        retries_made: 0,
        steps_started: 0,
        started_tasks: 0,
        target_tasks: opts.tasks.or(w.tasks).unwrap_or(1000),
        c: Counters::default(),
        timeout_us: ms(w.client.timeout_ms.unwrap_or(30_000.0)),
        deadlines: w.task_deadline_ms.is_some() || w.steps.iter().any(|s| s.deadline_ms.is_some()),
        gates: None,
        stop_at_breach: opts.stop_at_breach,
        sessions: opts.sessions,
        timing_out: false,
        budget: opts.budget.clone(),
        stopped_by: None,
        events: 0,
        held: None,
        tail: false,
        deferred: None,
    };
    sim.c.chain.policy = w.client.agent.policy;
    if !opts.gates.is_empty() {
        sim.gates = Some(gates::SimGates::new(opts.gates.clone(), &sim.names));
    }
    sim
}
