use super::*;
use crate::simulate;
use brownout_core::plan::source::Format;
use brownout_core::slo::Gate;

/// The seed's cascade (retries, pools, a rate limiter), shortened to 2,200 tasks (about 15 s
/// of virtual time: the burst at 10 s and its storm).
fn cascade() -> Workload {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/sim/cascade.yaml"
    );
    let text = std::fs::read_to_string(path).expect("examples/sim/cascade.yaml");
    let mut w = Workload::from_str_named(&text, "cascade.yaml").expect("workload");
    w.tasks = Some(2200);
    w
}

fn plan(text: &str) -> Plan {
    Plan::from_str_format(text, "plan.yaml", Format::Yaml).expect("plan")
}

/// The cascade's burst at probability `p`, and (the 4-D example's) latency beside it.
fn burst(p: f64, share: f64, secs: f64, added_ms: f64) -> Plan {
    plan(&format!(
        "seed: 3\nfaults:\n  - {{id: error-burst, kind: error, phase: response, probability: {p}, sessions: {share}, window: {{start: 10s, duration: {secs}}}}}\n  - {{id: slow-burst, kind: latency, added_ms: {added_ms}, window: {{start: 10s, duration: 3s}}}}\n"
    ))
}

fn opts(seed: u64, stop_at_breach: bool) -> SimOptions {
    SimOptions {
        seed: Some(seed),
        keep_series: true,
        gates: vec![Gate::parse("error_rate < 1% over 10s").expect("gate")],
        stop_at_breach,
        ..SimOptions::default()
    }
}

/// A report as text: byte for byte, NaN included.
fn text(r: &Report) -> String {
    serde_json::to_string(r).expect("json")
}

#[test]
fn a_resumed_run_is_the_run_from_the_start_byte_for_byte() {
    let w = cascade();
    let points = [
        (0.0, 1.0, 3.0, 0.0),
        (0.08, 1.0, 3.0, 0.0),
        (0.2, 1.0, 3.0, 0.0),
        (0.15, 0.4, 5.5, 120.0),
        (0.05, 0.1, 0.5, 300.0),
    ];
    let mut breached = 0;
    for seed in [1, 2] {
        for stop in [true, false] {
            let o = opts(seed, stop);
            // The prefix is made under one plan and resumed under every other.
            let mut first = burst(0.1, 1.0, 3.0, 0.0);
            first.seed = seed;
            let prefix = Prefix::new(&w, first, &o).expect("the faults start at 10 s");
            assert!(prefix.paused && prefix.at == 10_000_000);
            for &(p, share, secs, added) in &points {
                let mut pl = burst(p, share, secs, added);
                pl.seed = seed;
                let whole = simulate(&w, pl.clone(), &o);
                let resumed = prefix.resume(pl).expect("a plan quiet until 10 s");
                assert_eq!(text(&resumed), text(&whole), "seed {seed} p {p}");
                breached += usize::from(whole.robustness.is_some_and(|r| r < 0.0));
            }
        }
    }
    // Both verdicts were compared.
    assert!(breached > 0 && breached < 20, "{breached}");
}

#[test]
fn plans_that_could_act_before_the_pause_are_refused() {
    let w = cascade();
    let o = opts(1, true);
    let prefix = Prefix::new(&w, burst(0.1, 1.0, 3.0, 0.0), &o).expect("prefix");
    // A window that opens earlier.
    let early = plan("seed: 3\nfaults:\n  - {id: error-burst, kind: error, probability: 0.1, window: {start: 9s, duration: 3s}}\n  - {id: slow-burst, kind: latency, added_ms: 5, window: {start: 10s, duration: 3s}}\n");
    assert!(prefix.resume(early).is_none());
    // Other faults (their draw streams differ).
    let other = plan("seed: 3\nfaults:\n  - {id: another, kind: error, probability: 0.1, window: {start: 10s, duration: 3s}}\n");
    assert!(prefix.resume(other).is_none());
    // Another seed.
    let mut seeded = burst(0.1, 1.0, 3.0, 0.0);
    seeded.seed = 4;
    assert!(prefix.resume(seeded).is_none());
    // A fault with no window can act from the start: no prefix at all.
    let always = plan("seed: 3\nfaults:\n  - {id: e, kind: error, probability: 0.01}\n");
    assert_eq!(quiet_until(&w, &always), 0);
    assert!(Prefix::new(&w, always, &o).is_none());
}

#[test]
fn forks_give_the_runs_from_the_start_on_any_thread_in_any_order() {
    let w = cascade();
    let forks = Forks::new(&w, opts(0, true), 2);
    let jobs: Vec<(u64, f64)> = [3u64, 4, 5, 3, 4, 5]
        .iter()
        .zip([0.2, 0.05, 0.15, 0.0, 0.1, 0.12])
        .map(|(s, p)| (*s, p))
        .collect();
    let got: Vec<(usize, String)> = std::thread::scope(|s| {
        let hs: Vec<_> = [0usize, 1]
            .iter()
            .map(|&k| {
                let (forks, jobs) = (&forks, &jobs);
                s.spawn(move || {
                    (k..jobs.len())
                        .step_by(2)
                        .map(|i| {
                            let (seed, p) = jobs[i];
                            (i, text(&forks.simulate(burst(p, 1.0, 3.0, 0.0), seed)))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter()
            .flat_map(|h| h.join().expect("thread"))
            .collect()
    });
    for (i, r) in got {
        let (seed, p) = jobs[i];
        let mut pl = burst(p, 1.0, 3.0, 0.0);
        pl.seed = seed;
        assert_eq!(r, text(&simulate(&w, pl, &opts(seed, true))), "{seed} {p}");
    }
}
