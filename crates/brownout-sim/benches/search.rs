//! Benchmark: the boundary search's wider modes on the seed's cascade
//! (examples/sim/cascade.yaml, gate `error_rate < 1% over 10s`), the same library code
//! `brownout search` runs (the marks are substituted as it does; each evaluation parses the
//! plan and simulates, each seed's run up to the burst shared through `sim::fork::Forks`).
//!
//! Run: `nice -n 5 cargo bench -p brownout-sim --bench search` (`SEARCH_BENCH=quick` for one
//! round of each and a reference from one long GP run; `SEARCH_BENCH_BUDGET` and
//! `SEARCH_BENCH_SEEDS`: the 4-D cascade's budget, default 2400 simulations, and seeds a
//! point, default 8). It measures
//! 1. seeds per second on 1 and 2 threads (32 seeds' bisections, alternating rounds, medians);
//! 2. adaptive seeds to ±0.01 on examples/search/cascade-search.yaml (`--precision 0.01`):
//!    wall time, seeds, simulations, half width reached, and how busy the threads were (the
//!    simulations' time over wall time × threads) — three first seeds, medians;
//! 3. the Gaussian-process level-set search against the genetic search with the same budget:
//!    simulations until the nearest breach is within 1 % of the reference boundary's distance
//!    — on a four-dimension plane with a known boundary (exact reference), and on
//!    examples/search/cascade-4d.yaml (reference: the nearest breach of a long run of each,
//!    three times the budget);
//! 4. the four-dimension cascade's wall time (the GP runs of 3).
//!
//! It prints a table and writes `target/bench/search-wide.json`.

use brownout_core::plan::source::Format;
use brownout_core::rng::{mix, to_unit};
use brownout_core::slo::Gate;
use brownout_core::Plan;
use brownout_sim::search::space::{Field, Outcome, Settings};
use brownout_sim::search::{adaptive, genetic, levelset};
use brownout_sim::sim::fork::Forks;
use brownout_sim::{SimOptions, Workload};
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn load(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A marked plan: its text and the marks' (start, end, lo, hi, percent).
struct Marked {
    text: String,
    marks: Vec<(usize, usize, f64, f64, bool)>,
    workload: Workload,
    gate: Gate,
}

impl Marked {
    fn new(plan: &str) -> Marked {
        let text = load(plan);
        let mut marks = Vec::new();
        let mut from = 0;
        while let Some(i) = text[from..].find("{search:") {
            let start = from + i;
            let end = start + text[start..].find("]}").expect("a closed mark") + 2;
            let inner = &text[start + "{search:".len()..end - 1];
            let inner = inner.trim().trim_start_matches('[').trim_end_matches(']');
            let ends: Vec<&str> = inner.split(',').map(str::trim).collect();
            let pct = ends[0].ends_with('%');
            let num = |s: &str| s.trim_end_matches('%').parse::<f64>().expect("a number");
            marks.push((start, end, num(ends[0]), num(ends[1]), pct));
            from = end;
        }
        Marked {
            text,
            marks,
            workload: Workload::from_str_named(&load("examples/sim/cascade.yaml"), "cascade.yaml")
                .expect("workload"),
            gate: Gate::parse("error_rate < 1% over 10s").expect("gate"),
        }
    }

    /// The options of the search's simulations (the seed set per run).
    fn opts(&self) -> SimOptions {
        SimOptions {
            tasks: None,
            seed: None,
            keep_series: false,
            gates: vec![self.gate.clone()],
            stop_at_breach: true,
            sessions: None,
            budget: Default::default(),
        }
    }

    /// ρ at `x` (the unit cube) for `seed`, the run stopping at its first breach, through
    /// `forks` (each seed's run up to the burst simulated once), as `brownout search` does.
    fn rho(&self, forks: &Forks, x: &[f64], seed: u64) -> f64 {
        forks.simulate(self.plan(x), seed).robustness.unwrap_or(1.0)
    }

    /// The plan at `x`.
    fn plan(&self, x: &[f64]) -> Plan {
        let mut out = String::new();
        let mut at = 0;
        for (m, v) in self.marks.iter().zip(x) {
            out.push_str(&self.text[at..m.0]);
            let val = m.2 + (m.3 - m.2) * v;
            out.push_str(&format!("{}", if m.4 { val / 100.0 } else { val }));
            at = m.1;
        }
        out.push_str(&self.text[at..]);
        Plan::from_str_format(&out, "plan.yaml", Format::from_path("plan.yaml")).expect("plan")
    }
}

fn adaptive_settings(first: u64, threads: usize, precision: f64) -> adaptive::Settings {
    adaptive::Settings {
        first_seed: first,
        initial: 8,
        max_seeds: 400,
        precision,
        tol: precision / 2.0,
        max_evals: 20_000,
        deadline: None,
        threads,
    }
}

fn within(o: &Outcome, reference: f64) -> Option<u64> {
    o.trace
        .iter()
        .find(|t| t.1 <= 1.01 * reference)
        .map(|t| t.0)
}

fn nearest(o: &Outcome) -> f64 {
    o.nearest.map_or(f64::INFINITY, |i| o.samples[i].norm())
}

fn main() {
    let quick = std::env::var("SEARCH_BENCH").is_ok_and(|v| v == "quick");
    let rounds = if quick { 1 } else { 3 };
    let one = Marked::new("examples/search/cascade-search.yaml");
    let forks1 = Forks::new(&one.workload, one.opts(), 8);
    // Time spent simulating, summed over the threads (how busy they were).
    let busy = std::sync::atomic::AtomicU64::new(0);
    let obj = |t: f64, seed: u64, _full: bool| {
        let t0 = Instant::now();
        let r = one.rho(&forks1, &[t], seed);
        let ns = t0.elapsed().as_nanos() as u64;
        busy.fetch_add(ns, std::sync::atomic::Ordering::Relaxed);
        r
    };

    // 1. Seeds per second, 1 vs 2 threads: 32 seeds bisected to 1/32 (the first round only).
    let (mut s1, mut s2) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        for threads in [1usize, 2] {
            let mut s = adaptive_settings(100 + 32 * r as u64, threads, 1e-9);
            s.initial = 32;
            s.max_seeds = 32;
            s.tol = 1.0 / 32.0;
            let t = Instant::now();
            let o = adaptive::search(&obj, &s, &|_| {});
            let rate = o.seeds.len() as f64 / t.elapsed().as_secs_f64();
            println!(
                "seeds/s, {threads} thread(s), round {r}: {rate:.1} ({} simulations)",
                o.evals
            );
            if threads == 1 {
                s1.push(rate)
            } else {
                s2.push(rate)
            }
        }
    }
    let (r1, r2) = (median(s1), median(s2));
    println!(
        "seeds/s: 1 thread {r1:.1}, 2 threads {r2:.1}: ×{:.2}",
        r2 / r1
    );

    // 2. Adaptive seeds to ±0.01 (0.05 of the range [0, 0.2]).
    let (mut secs, mut seeds, mut sims, mut halves) = (vec![], vec![], vec![], vec![]);
    let mut busies = vec![];
    for first in [1u64, 1001, 2001].into_iter().take(rounds) {
        busy.store(0, std::sync::atomic::Ordering::Relaxed);
        let t = Instant::now();
        let o = adaptive::search(&obj, &adaptive_settings(first, 2, 0.05), &|_| {});
        let el = t.elapsed().as_secs_f64();
        let b = busy.load(std::sync::atomic::Ordering::Relaxed) as f64 / 1e9 / (2.0 * el);
        let h = o.half_width.unwrap_or(f64::NAN) * 0.2;
        println!(
            "adaptive from seed {first}: median {:.4} ±{h:.4}, reached {}, {} seeds, {} rounds, {} simulations, {el:.2}s, threads busy {:.0}%",
            o.median.unwrap_or(f64::NAN) * 0.2,
            o.reached,
            o.seeds.len(),
            o.rounds.len(),
            o.evals,
            b * 100.0
        );
        busies.push(b);
        secs.push(el);
        seeds.push(o.seeds.len() as f64);
        sims.push(o.evals as f64);
        halves.push(h);
    }

    // 3a. The plane: seed s breaches where w·x > 1.2 ± 0.05; the majority's boundary is the
    // median seed's plane, at distance c/‖w‖ from the origin.
    const W: [f64; 4] = [1.0, 0.5, 2.0, 1.0];
    let thr = |s: u64| 1.2 + 0.1 * (to_unit(mix(s)) - 0.5);
    let plane = |x: &[f64], s: u64| thr(s) - x.iter().zip(W).map(|(a, b)| a * b).sum::<f64>();
    let mut cs: Vec<f64> = (1..=5).map(thr).collect();
    cs.sort_by(f64::total_cmp);
    let plane_ref = cs[2] / W.iter().map(|w| w * w).sum::<f64>().sqrt();
    let settings = |seeds: u64, budget: u64, rng: u64| Settings {
        dims: 4,
        seeds: (1..=seeds).collect(),
        max_evals: budget,
        deadline: None,
        threads: 2,
        rng_seed: rng,
    };
    let (mut gp_plane, mut ga_plane) = (vec![], vec![]);
    for rng in 1..=5u64 {
        let s = settings(5, 5 * 300, rng);
        let g = levelset::search(&plane as &dyn Field, &s, &|_| {});
        let a = genetic::search(&plane as &dyn Field, &s, &|_| {});
        let (x, y) = (within(&g, plane_ref), within(&a, plane_ref));
        println!("plane, draws {rng}: to 1 %: gp {x:?}, ga {y:?} simulations (budget 1500)");
        gp_plane.push(x.map_or(f64::INFINITY, |v| v as f64));
        ga_plane.push(y.map_or(f64::INFINITY, |v| v as f64));
    }

    // 3b. The four-dimension cascade.
    let four = Marked::new("examples/search/cascade-4d.yaml");
    let forks4 = Forks::new(&four.workload, four.opts(), 16);
    let field = |x: &[f64], s: u64| four.rho(&forks4, x, s);
    let env = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let budget = env("SEARCH_BENCH_BUDGET", 2400);
    let seeds4 = env("SEARCH_BENCH_SEEDS", 8);
    let t = Instant::now();
    let long = if quick { 2 } else { 3 } * budget;
    let long_gp = levelset::search(&field as &dyn Field, &settings(seeds4, long, 99), &|_| {});
    let long_ga = if quick {
        long_gp.clone()
    } else {
        genetic::search(&field as &dyn Field, &settings(seeds4, long, 99), &|_| {})
    };
    let reference = nearest(&long_gp).min(nearest(&long_ga));
    println!(
        "cascade 4-D reference: distance {reference:.4} (long gp {:.4}, long ga {:.4}; {:.0}s)",
        nearest(&long_gp),
        nearest(&long_ga),
        t.elapsed().as_secs_f64()
    );
    let (mut gp4, mut ga4, mut gp_secs, mut ga_secs) = (vec![], vec![], vec![], vec![]);
    for rng in (1..=3u64).take(rounds) {
        let t = Instant::now();
        let g = levelset::search(
            &field as &dyn Field,
            &settings(seeds4, budget, rng),
            &|_| {},
        );
        gp_secs.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let a = genetic::search(
            &field as &dyn Field,
            &settings(seeds4, budget, rng),
            &|_| {},
        );
        ga_secs.push(t.elapsed().as_secs_f64());
        let (x, y) = (within(&g, reference), within(&a, reference));
        println!(
            "cascade 4-D, draws {rng}: gp nearest {:.4} ({x:?} simulations to 1 %, {:.1}s), ga nearest {:.4} ({y:?}, {:.1}s)",
            nearest(&g),
            gp_secs[gp_secs.len() - 1],
            nearest(&a),
            ga_secs[ga_secs.len() - 1]
        );
        gp4.push(x.map_or(f64::INFINITY, |v| v as f64));
        ga4.push(y.map_or(f64::INFINITY, |v| v as f64));
    }
    let out = json!({
        "seeds_per_second": {"one_thread": r1, "two_threads": r2, "ratio": r2 / r1},
        "adaptive_to_0_01": {"median_seconds": median(secs), "median_seeds": median(seeds),
            "median_simulations": median(sims), "median_half_width": median(halves),
            "median_threads_busy": median(busies)},
        "plane_4d": {"reference": plane_ref, "gp_median_simulations_to_1pct": median(gp_plane),
            "ga_median_simulations_to_1pct": median(ga_plane), "budget": 1500},
        "cascade_4d": {"reference": reference, "gp_median_simulations_to_1pct": median(gp4),
            "ga_median_simulations_to_1pct": median(ga4), "gp_median_seconds": median(gp_secs),
            "ga_median_seconds": median(ga_secs), "budget": budget, "seeds_a_point": seeds4,
            "reference_simulations": long},
    });
    let dir = repo().join("target/bench");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join("search-wide.json"), out.to_string());
    println!("{out:#}");
}
