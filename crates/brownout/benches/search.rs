//! Benchmark: `brownout search` on the seed's cascade (examples/sim/cascade.yaml with its
//! 1 % SLO, `error_rate < 1% over 10s`).
//!
//! Run: `cargo bench -p brownout --bench search` (release build). It measures
//! 1. one dimension (examples/search/cascade-search.yaml: the burst's probability in
//!    [0, 0.2]), 8 seeds, default precision (1/32 of the range): wall time, simulations, the interval's half
//!    width — five searches with different first seeds, medians;
//! 2. the reference: the same search with 32 seeds and 4× the precision, and how far each
//!    8-seed search's boundary is from it (the seeds' spread, not the bisection, dominates);
//! 3. two dimensions (examples/search/cascade-2d.yaml: probability × added latency, 5 rays).
//!
//! It prints a table and writes `target/bench/search.json`.

use brownout::search::{search, Problem, SearchArgs};
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn args(plan: &str, seeds: u64, seed: u64, tol: f64, max_evals: u64) -> SearchArgs {
    SearchArgs {
        experiment: None,
        plan: Some(repo().join(plan)),
        workload: Some(repo().join("examples/sim/cascade.yaml")),
        gates: vec!["error_rate < 1% over 10s".parse().expect("gate")],
        seeds,
        seed,
        tol,
        rays: 5,
        tasks: None,
        max_evals: Some(max_evals),
        time: None,
        out: None,
        chart: None,
        json: false,
        live: false,
        live_runs: 8,
        live_start: 0.6,
        policy: None,
        store: None,
        wide: Default::default(),
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let quiet = |_: &str| {};
    // 2. The reference first (it is the slow one).
    let a = args(
        "examples/search/cascade-search.yaml",
        32,
        1000,
        1.0 / 256.0,
        5000,
    );
    let p = Problem::load(&a).expect("problem");
    let t = Instant::now();
    let r = search(&p, &a, &quiet);
    let ref_s = t.elapsed().as_secs_f64();
    let (seg, c) = &r.segments[0];
    let reference = c
        .boundary
        .map(|b| seg.at(b)[0])
        .expect("a reference boundary");
    println!(
        "reference (32 seeds, tol 1/256): probability {reference:.4} ({}, {} simulations, {ref_s:.1}s)",
        c.method, c.evals
    );
    // 1. Five 8-seed searches.
    let (mut times, mut evals, mut halves, mut errors) = (vec![], vec![], vec![], vec![]);
    for k in 0..5u64 {
        let a = args(
            "examples/search/cascade-search.yaml",
            8,
            1 + 8 * k,
            1.0 / 32.0,
            500,
        );
        let p = Problem::load(&a).expect("problem");
        let t = Instant::now();
        let r = search(&p, &a, &quiet);
        let secs = t.elapsed().as_secs_f64();
        let (seg, c) = &r.segments[0];
        let b = c.boundary.map(|b| seg.at(b)[0]).unwrap_or(f64::NAN);
        let half = c
            .interval
            .map(|(x, y)| (seg.at(y)[0] - seg.at(x)[0]) / 2.0)
            .unwrap_or(f64::NAN);
        println!(
            "1-D seeds {}..{}: probability {b:.4} ±{half:.4} ({}), {} simulations, {secs:.2}s, |Δ reference| {:.4}",
            1 + 8 * k,
            8 + 8 * k,
            c.method,
            c.evals,
            (b - reference).abs()
        );
        times.push(secs);
        evals.push(c.evals as f64);
        halves.push(half);
        errors.push((b - reference).abs());
    }
    // 3. Two dimensions.
    let a = args("examples/search/cascade-2d.yaml", 8, 1, 1.0 / 32.0, 500);
    let p = Problem::load(&a).expect("problem");
    let t = Instant::now();
    let r2 = search(&p, &a, &quiet);
    let secs2 = t.elapsed().as_secs_f64();
    let evals2: u64 = r2.segments.iter().map(|(_, c)| c.evals).sum();
    let found2 = r2
        .segments
        .iter()
        .filter(|(_, c)| c.boundary.is_some())
        .count();
    println!(
        "2-D (5 rays, 8 seeds): {found2}/5 rays with a boundary, {evals2} simulations, {secs2:.2}s"
    );
    let out = json!({
        "one_dimension": {
            "median_seconds": median(&mut times),
            "median_simulations": median(&mut evals),
            "median_interval_half_width": median(&mut halves),
            "median_error_vs_reference": median(&mut errors),
            "max_error_vs_reference": errors.iter().cloned().fold(0.0, f64::max),
        },
        "reference": {"boundary": reference, "seconds": ref_s, "simulations": c.evals, "method": c.method},
        "two_dimensions": {"seconds": secs2, "simulations": evals2, "rays_with_boundary": found2},
    });
    let dir = repo().join("target/bench");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join("search.json"), out.to_string());
    println!("{out:#}");
}
