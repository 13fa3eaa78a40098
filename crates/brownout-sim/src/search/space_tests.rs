//! The three-to-five-dimension searches on a field with a known boundary: seed `s` breaches
//! where `w·x > c(s)`, a plane, so the nearest breaching point is at distance `c/‖w‖`.

use super::space::{Field, Outcome, Settings};
use super::{genetic, levelset};
use brownout_core::rng::{mix, to_unit};

const W: [f64; 4] = [1.0, 0.5, 2.0, 1.0];

fn threshold(seed: u64) -> f64 {
    1.2 + 0.1 * (to_unit(mix(seed)) - 0.5)
}

fn plane(x: &[f64], seed: u64) -> f64 {
    threshold(seed) - x.iter().zip(W).map(|(a, b)| a * b).sum::<f64>()
}

fn seeds() -> Vec<u64> {
    (1..=5).collect()
}

/// The majority's boundary: the median seed's plane.
fn reference() -> f64 {
    let mut c: Vec<f64> = seeds().into_iter().map(threshold).collect();
    c.sort_by(f64::total_cmp);
    c[2] / W.iter().map(|w| w * w).sum::<f64>().sqrt()
}

fn settings(threads: usize, max_evals: u64) -> Settings {
    Settings {
        dims: 4,
        seeds: seeds(),
        max_evals,
        deadline: None,
        threads,
        rng_seed: 7,
    }
}

fn nearest(o: &Outcome) -> f64 {
    o.nearest.map_or(f64::INFINITY, |i| o.samples[i].norm())
}

/// Simulations until the nearest breach was within 1 % of the reference.
fn to_one_percent(o: &Outcome) -> Option<u64> {
    let r = reference();
    o.trace.iter().find(|t| t.1 <= 1.01 * r).map(|t| t.0)
}

#[test]
fn the_surrogate_finds_the_nearest_point_of_a_known_plane() {
    let o = levelset::search(&plane, &settings(2, 5 * 160), &|_| {});
    let r = reference();
    let got = nearest(&o);
    assert!(got >= r * 0.999 && got <= r * 1.01, "{got} vs {r}");
    let i = o.nearest.expect("a nearest point");
    assert!(o.samples[i].breaches());
    // It lies on the plane's breaching side, near the plane.
    let x = &o.samples[i].x;
    let along: f64 = x.iter().zip(W).map(|(a, b)| a * b).sum();
    assert!(along > 1.15 && along < 1.3, "{along}");
    // The map holds points on both sides near the boundary.
    let near = o
        .samples
        .iter()
        .filter(|s| (s.x.iter().zip(W).map(|(a, b)| a * b).sum::<f64>() - 1.2).abs() < 0.1)
        .count();
    assert!(near >= 20, "{near}");
    assert!(o.evals <= 5 * 160);
    assert_eq!(o.stopped, "max-evals");
}

#[test]
fn the_surrogate_needs_fewer_simulations_than_the_genetic_search() {
    let budget = 5 * 160;
    let gp = levelset::search(&plane, &settings(2, budget), &|_| {});
    let ga = genetic::search(&plane, &settings(2, budget), &|_| {});
    let (a, b) = (to_one_percent(&gp), to_one_percent(&ga));
    let a = a.expect("the surrogate gets within 1 %");
    assert!(b.is_none_or(|b| a < b), "gp {a:?} ga {b:?}");
    assert!(nearest(&ga) >= reference() * 0.999);
}

#[test]
fn both_searches_give_the_same_result_on_any_number_of_threads() {
    for f in [levelset::search, genetic::search] {
        let one = f(&plane, &settings(1, 5 * 60), &|_| {});
        let three = f(&plane, &settings(3, 5 * 60), &|_| {});
        assert_eq!(one, three);
        assert_eq!(one.evals, 300);
    }
}

#[test]
fn a_space_with_no_crossing_is_said() {
    let hold = |_: &[f64], _: u64| 1.0;
    let o = levelset::search(&hold as &dyn Field, &settings(2, 500), &|_| {});
    assert_eq!((o.stopped, o.nearest, o.evals), ("no crossing", None, 10));
    let o = genetic::search(&hold as &dyn Field, &settings(2, 500), &|_| {});
    assert_eq!(o.stopped, "no crossing");
}

/// The figures in BENCHMARKS.md: simulations to within 1 % of the plane's nearest point, the
/// surrogate against the genetic search, five draws each, budget 1,500 (counts, not times:
/// the same on any machine). `cargo test -p brownout-sim --lib -- --ignored --nocapture
/// gp_against_ga`.
#[test]
#[ignore = "slow in a debug build; the figures for BENCHMARKS.md"]
fn gp_against_ga_over_five_draws() {
    let (mut gp, mut ga) = (Vec::new(), Vec::new());
    for rng in 1..=5u64 {
        let mut s = settings(2, 5 * 300);
        s.rng_seed = rng;
        let a = to_one_percent(&levelset::search(&plane, &s, &|_| {}));
        let b = to_one_percent(&genetic::search(&plane, &s, &|_| {}));
        eprintln!("draws {rng}: gp {a:?}, ga {b:?} simulations to 1 %");
        gp.push(a.unwrap_or(u64::MAX));
        ga.push(b.unwrap_or(u64::MAX));
    }
    gp.sort_unstable();
    ga.sort_unstable();
    eprintln!("medians: gp {}, ga {}", gp[2], ga[2]);
    assert!(gp[2] < ga[2]);
}

#[test]
fn a_point_where_half_the_seeds_breach_has_a_median_rho_below_zero() {
    // Seeds 1 and 2 breach (margin −0.01), 3 and 4 hold with all room (+1): the map's
    // median ρ must agree with its breaching share (the upper median said +1 before).
    let field = |_x: &[f64], seed: u64| if seed <= 2 { -0.01 } else { 1.0 };
    let s = Settings {
        seeds: vec![1, 2, 3, 4],
        ..settings(1, 100)
    };
    let mut e = super::space::Evaluator::new(&field, &s);
    let got = e.eval(vec![vec![0.5; 4]]);
    assert!(got[0].breaches(), "{:?}", got[0]);
    assert!(got[0].rho < 0.0, "{:?}", got[0]);
}
