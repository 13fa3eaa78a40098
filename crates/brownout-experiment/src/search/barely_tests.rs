//! The barely-violating point's confirming runs keep to `--time`: once the budget is spent
//! the point is given unchecked (review F6: they ran to their end after the deadline).

use super::*;

fn problem() -> Problem {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let a = SearchArgs {
        plan: Some(root.join("examples/search/cascade-search.yaml")),
        workload: Some(root.join("examples/sim/cascade.yaml")),
        gates: vec![crate::sim_args::parse_gate("error_rate < 1% over 10s").expect("gate")],
        seeds: 2,
        json: true,
        ..SearchArgs::default()
    };
    Problem::load(&a).expect("the example loads")
}

#[test]
fn the_barely_violating_check_is_skipped_once_the_budget_is_spent() {
    let mut p = problem();
    let seg = segments(&p, 5).remove(0);
    let seeds = [1, 2];
    // A spent budget: nothing more is run, and the point says it was not checked.
    p.deadline = Some(Instant::now());
    let started = Instant::now();
    let b = barely_at(&p, &seg, 0.9, &seeds, 1.0 / 32.0);
    assert!(!b.checked, "checked after the deadline");
    assert!(b.breaching.is_nan() && b.rho.is_nan() && b.margin_at_breach.is_none());
    assert_eq!(b.values, seg.at(0.9));
    assert!(confirm(&p, &seg.at(0.9), &seeds).is_none());
    // Generous: no simulation ran (each takes ~0.1 s in a debug build, 2 seeds × 11 steps).
    assert!(started.elapsed() < Duration::from_secs(30));
    // Without a deadline the runs are made.
    p.deadline = None;
    let b = barely_at(&p, &seg, 0.9, &seeds, 1.0 / 32.0);
    assert!(b.checked && b.breaching.is_finite(), "{b:?}");
}
