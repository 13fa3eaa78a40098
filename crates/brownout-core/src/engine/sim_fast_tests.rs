//! The precompiled simulator entry against the engine's own: every call decided the same,
//! the same injections counted, over a plan that uses every selector and every kind with a
//! simulated effect.

use super::*;
use crate::faults::simulated::SimulatedCall;

const PLAN: &str = "seed: 99
faults:
  - {id: lat, kind: latency, tools: [\"get_*\"], probability: 0.3, distribution: pareto, scale_ms: 20, max_ms: 900}
  - {id: err, kind: error, servers: [inventory], sessions: 0.4, after_calls: 1, probability: 0.2, phase: response}
  - {id: lost, kind: timeout, tools: [get_traces], every_nth: 2, max_injections: 2, probability: 0.6}
  - {id: drift, kind: schema_drift, tools: [describe], mutation: retype, path: /x, probability: 0.3}
  - {id: wrong, kind: corrupt, tools: [describe], path: /x, probability: 0.2}
  - {id: cut, kind: partial_result, mode: truncate_text, every_nth: 3}
  - {id: burst, kind: error, probability: 0.05, correlation: {mode: burst, mean_burst_calls: 6}, window: {start: 1s, duration: 5s}}
  - {id: episodes, kind: drop, probability: 0.1, correlation: {mode: episodes, episode_ms: 500, intensity: 0.5}}
  - {id: cold, kind: cold_start, tools: [get_metrics], added_ms: 40, jitter_ms: 10}
  - {id: throttle, kind: rate_limit, rate: 50, burst: 5, scope: global}
  - {id: own-bucket, kind: rate_limit, rate: 2, burst: 2, tools: [check]}
  - {id: ghost, kind: registry, action: phantom, phantom_name: check}
  - {id: args, kind: error, arguments: {\"/env\": prod}}
  - {id: other-method, kind: error, methods: [\"resources/read\"]}
  - {id: off, kind: error, enabled: false}
  - {id: fail-fast, kind: error, phase: request, tools: [\"*_metrics\"], probability: 0.1}
  - {id: hang, kind: latency, direction: to_server, added_ms: 5, probability: 0.5, servers: [\"obs*\"]}
  - {id: never, kind: error, probability: 0}
";

const SITES: [(Option<&str>, &str); 6] = [
    (Some("observability"), "get_metrics"),
    (Some("observability"), "get_traces"),
    (Some("inventory"), "describe"),
    (Some("inventory"), "check"),
    (None, "get_metrics"),
    (None, "unknown_tool"),
];

fn engine() -> Engine {
    let plan = Plan::from_str_named(PLAN, "plan.yaml").unwrap_or_else(|e| panic!("{e}"));
    let config = EngineConfig {
        record_events: false,
        ..EngineConfig::default()
    };
    Engine::new(plan, config)
}

/// Drive both engines through the same calls: sessions that start, interleave and end,
/// reusing the fast path's session objects as the simulator does.
fn both(sessions: usize, calls: usize) -> (Vec<SimulatedCall>, Vec<SimulatedCall>, Engine, Engine) {
    let (mut slow, mut fast) = (engine(), engine());
    let mut sites: Vec<_> = SITES
        .iter()
        .map(|(server, tool)| fast.sim_call_site(*server, tool))
        .collect();
    let mut live: Vec<(String, SimSession)> = Vec::new();
    let mut spare: Vec<SimSession> = Vec::new();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut x: u64 = 0x1234_5678;
    let mut next = 0;
    for step in 0..sessions * calls {
        x = crate::rng::mix(x);
        let now = Time((step as u64) * 3_000);
        if live.len() < 8 && next < sessions {
            let key = if next % 3 == 0 {
                format!("label:load-{next}")
            } else {
                format!("task-{next}")
            };
            next += 1;
            let s = match spare.pop() {
                Some(mut s) => {
                    fast.sim_session_reset(&mut s, &key);
                    s
                }
                None => fast.sim_session(&key),
            };
            live.push((key, s));
        }
        if live.is_empty() {
            break;
        }
        let k = (x % live.len() as u64) as usize;
        let site = ((x >> 20) % SITES.len() as u64) as usize;
        let (server, tool) = SITES[site];
        let (key, session) = &mut live[k];
        a.push(slow.on_simulated_call_to(server, key, tool, now));
        b.push(fast.on_simulated_call_at(&mut sites[site], session, now));
        if (x >> 40).is_multiple_of(17) {
            let (key, s) = live.swap_remove(k);
            slow.end_session(&key, now);
            spare.push(s);
        }
    }
    (a, b, slow, fast)
}

#[test]
fn the_fast_entry_decides_every_call_as_the_engine_does() {
    let (a, b, slow, fast) = both(400, 40);
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(x, y, "call {i}");
    }
    let injected = |e: &Engine| -> Vec<(String, u64)> {
        e.summary()
            .report()
            .injections
            .into_iter()
            .map(|(k, v)| (k, v.count))
            .collect()
    };
    assert_eq!(injected(&slow), injected(&fast));
    // Every fault that can act on a simulated call did, so the comparison covered it.
    let hit: Vec<String> = injected(&fast).into_iter().map(|(k, _)| k).collect();
    for id in [
        "lat",
        "err",
        "lost",
        "drift",
        "wrong",
        "cut",
        "burst",
        "episodes",
        "cold",
        "throttle",
        "own-bucket",
        "ghost",
        "fail-fast",
        "hang",
    ] {
        assert!(hit.iter().any(|h| h == id), "{id} never hit: {hit:?}");
    }
    for id in ["args", "other-method", "off"] {
        assert!(
            !hit.iter().any(|h| h == id),
            "{id} cannot hit a simulated call"
        );
    }
}

#[test]
fn a_site_no_fault_can_reach_is_quiet_and_a_plan_change_recompiles_it() {
    let mut e = engine();
    let mut site = e.sim_call_site(Some("elsewhere"), "nothing_matches");
    // `partial_result`, the burst, the episodes and the global bucket match every tool.
    assert!(!site.is_quiet());
    let quiet = Plan::from_str_named(
        "seed: 1\nfaults:\n  - {id: only, kind: error, tools: [x]}\n",
        "p.yaml",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut s = e.sim_session("task-1");
    e.set_plan(quiet);
    let out = e.on_simulated_call_at(&mut site, &mut s, Time::ZERO);
    assert!(site.is_quiet(), "recompiled for the new plan");
    assert_eq!(out, SimulatedCall::default());
    let mut hit = e.sim_call_site(None, "x");
    let out = e.on_simulated_call_at(&mut hit, &mut s, Time::ZERO);
    assert_eq!(out.injected, 1);
}
