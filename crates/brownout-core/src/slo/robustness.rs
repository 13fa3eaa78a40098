//! Robustness ρ: how far a run stayed from breaking its gates, as one signed number — the
//! robustness degree of the temporal-logic falsification literature, on brownout's gates.
//!
//! A gate's **margin** at one evaluation is the distance of the window's value from the
//! limit, on the holding side, normalised so gates of different SLIs compare:
//!
//! - `<`, `<=`: (limit − value) / scale; `>`, `>=`: (value − limit) / scale;
//! - `=`: −|value − limit| / scale (0 at best: an equality has no room);
//! - scale: the room the SLI has on the holding side — for a ratio (a fraction in [0, 1]),
//!   `limit` below a `<` limit and `1 − limit` above a `>` limit; for a latency or a factor,
//!   `limit`; and 1 where that room is zero (a `< 0%` gate: margins in the SLI's unit).
//!
//! So `error_rate < 1%` at 0.5 % has margin 0.5, at 0 % margin 1, at 2 % margin −1;
//! `eta >= 99%` at 100 % has margin 1, at 98 % margin −1; `p99 < 800ms` at 400 ms has
//! margin 0.5. ρ of a run is the smallest margin over its gates and every evaluation with
//! enough samples: > 0 every gate held with room, < 0 some window breached (before any `for`
//! grace). Margins are clamped to [−100, 1].

use super::{Cmp, Gate, Kind};

/// The most negative margin reported (a value 100 × the room past the limit).
pub const FLOOR: f64 = -100.0;

/// The gate's margin at `value`.
pub fn margin(gate: &Gate, value: f64) -> f64 {
    let limit = gate.limit();
    let room = match (gate.sli.kind(), gate.cmp) {
        (Kind::Ratio, Cmp::Gt | Cmp::Ge) => 1.0 - limit,
        _ => limit.abs(),
    };
    let scale = if room > 0.0 { room } else { 1.0 };
    let m = match gate.cmp {
        Cmp::Lt | Cmp::Le => (limit - value) / scale,
        Cmp::Gt | Cmp::Ge => (value - limit) / scale,
        Cmp::Eq => -(value - limit).abs() / scale,
    };
    if m.is_nan() {
        FLOOR
    } else {
        m.clamp(FLOOR, 1.0)
    }
}

/// The smaller of two optional margins.
pub fn min(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(text: &str) -> Gate {
        Gate::parse(text).expect("gate")
    }

    #[test]
    fn margins_are_normalised_by_the_room_on_the_holding_side() {
        let e = g("error_rate < 1% over 10s");
        assert!((margin(&e, 0.005) - 0.5).abs() < 1e-12);
        assert!((margin(&e, 0.0) - 1.0).abs() < 1e-12);
        assert!((margin(&e, 0.02) + 1.0).abs() < 1e-12);
        let a = g("eta >= 99% over 10s");
        assert!((margin(&a, 1.0) - 1.0).abs() < 1e-9);
        assert!((margin(&a, 0.98) + 1.0).abs() < 1e-9);
        let p = g("p99 < 800ms over 10s");
        assert!((margin(&p, 400.0) - 0.5).abs() < 1e-12);
        assert!(margin(&p, 800.0).abs() < 1e-12, "at the limit: 0");
    }

    #[test]
    fn a_zero_room_gate_uses_the_unit_and_extremes_are_clamped() {
        let z = g("error_rate <= 0% over 10s");
        assert_eq!(margin(&z, 0.0), 0.0);
        assert!((margin(&z, 0.25) + 0.25).abs() < 1e-12);
        let p = g("p99 < 1ms over 10s");
        assert_eq!(margin(&p, 1e9), FLOOR);
        assert_eq!(margin(&p, f64::NAN), FLOOR);
    }

    #[test]
    fn the_sign_is_the_verdict_before_any_grace() {
        for (text, value) in [
            ("error_rate < 5% over 10s", 0.049),
            ("error_rate < 5% over 10s", 0.051),
            ("availability > 90% over 10s", 0.95),
            ("availability > 90% over 10s", 0.85),
            ("p95 <= 250ms over 10s", 240.0),
            ("p95 <= 250ms over 10s", 260.0),
            ("amplification < 1.5 over 10s", 1.2),
        ] {
            let gate = g(text);
            assert_eq!(
                margin(&gate, value) > 0.0,
                gate.cmp.holds(value, gate.limit()),
                "{text} at {value}"
            );
        }
    }
}
