//! One seed's simulations in the adaptive search ([`super::adaptive`]): a bisection for the
//! first round's seeds, and for every later seed only the simulations that place it against
//! the two **cut points** the median's interval is being certified at.
//!
//! A seed's knowledge is a bracket `[lo, hi]` that holds one of its crossings: it held at
//! `lo` and breached at `hi` (each end either simulated or still the segment's end, not
//! simulated). Every simulation is inside the bracket and keeps one crossing in it, as a
//! bisection step does, so a bracket is honest whatever order its points were chosen in.

use super::{Objective, SeedCrossing};
use std::time::Instant;

/// What is known of one seed.
#[derive(Debug, Clone)]
pub struct Bracket {
    pub seed: u64,
    pub lo: f64,
    pub hi: f64,
    /// `lo` held in a simulation (not just the segment's start).
    pub held: bool,
    /// `hi` breached in a simulation (not just the segment's end).
    pub broke: bool,
    /// ρ at the segment's ends, where simulated (NaN: not).
    pub rho_start: f64,
    pub rho_end: f64,
    /// The monotonicity check's extra points agreed with one crossing (or were not run).
    pub monotone: bool,
}

impl Bracket {
    pub fn new(seed: u64) -> Bracket {
        Bracket {
            seed,
            lo: 0.0,
            hi: 1.0,
            held: false,
            broke: false,
            rho_start: f64::NAN,
            rho_end: f64::NAN,
            monotone: true,
        }
    }

    /// Breaks at the segment's start (simulated).
    pub fn always_breaks(&self) -> bool {
        self.rho_start < 0.0
    }

    /// Holds at the segment's end (simulated).
    pub fn always_holds(&self) -> bool {
        !self.always_breaks() && self.rho_end >= 0.0
    }

    /// Its crossing's bracket for the median's summary: seeds that never cross are
    /// censored at the end they are on.
    pub fn span(&self) -> (f64, f64) {
        if self.always_breaks() {
            (0.0, 0.0)
        } else if self.always_holds() {
            (1.0, 1.0)
        } else {
            (self.lo, self.hi)
        }
    }

    /// Whether `t` lies strictly inside the bracket (the seed's side of it is unknown).
    pub fn straddles(&self, t: f64) -> bool {
        self.span().0 < t && t < self.span().1
    }

    /// As reported: a hold and a break only where simulated.
    pub fn crossing(&self) -> SeedCrossing {
        let cross = !self.always_breaks() && !self.always_holds();
        SeedCrossing {
            seed: self.seed,
            hold: (cross && self.held).then_some(self.lo),
            brk: (cross && self.broke).then_some(self.hi),
            rho_start: self.rho_start,
            rho_end: self.rho_end,
            monotone: self.monotone,
        }
    }

    /// One simulation at `t` inside the bracket; `None`: no answer (a deadline).
    fn probe(&mut self, obj: &dyn Objective, t: f64, evals: &mut u64) -> Option<()> {
        *evals += 1;
        let r = obj.rho(t, self.seed, false);
        if r.is_nan() {
            return None;
        }
        if t <= 0.0 {
            self.rho_start = r;
        }
        if t >= 1.0 {
            self.rho_end = r;
        }
        if r >= 0.0 {
            (self.lo, self.held) = (t, true);
        } else {
            (self.hi, self.broke) = (t, true);
        }
        Some(())
    }
}

fn late(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// The first round's seeds: bisection of the whole segment to `tol`, the ends where the
/// bisection never saw that side, then the monotonicity check (halfway below the hold
/// holds, halfway above the break breaks). `None`: a deadline stopped it. The second value
/// is the simulations it took.
pub fn bisect(
    obj: &dyn Objective,
    seed: u64,
    tol: f64,
    deadline: Option<Instant>,
) -> Option<(Bracket, u64)> {
    let mut b = Bracket::new(seed);
    let mut evals = 0;
    while b.hi - b.lo > tol {
        if late(deadline) {
            return None;
        }
        b.probe(obj, (b.lo + b.hi) / 2.0, &mut evals)?;
    }
    if !b.held {
        b.probe(obj, 0.0, &mut evals)?;
    }
    if !b.broke && !b.always_breaks() {
        b.probe(obj, 1.0, &mut evals)?;
    }
    if !b.always_breaks() && !b.always_holds() {
        if late(deadline) {
            return None;
        }
        let (h, k) = (b.lo, b.hi);
        let mut extra = |t: f64| {
            evals += 1;
            obj.rho(t, seed, false)
        };
        // (A NaN, no answer, says nothing either way.)
        if h > 0.0 && extra(h * 0.5) < 0.0 {
            b.monotone = false;
        }
        if k < 1.0 && extra(k + (1.0 - k) * 0.5) >= 0.0 {
            b.monotone = false;
        }
    }
    Some((b, evals))
}

/// Place a seed against the cut points `cuts` (`lo ≤ hi`): a simulation at each cut inside
/// its bracket, the `first` one first (a seed beyond it then needs no second). `None`: a
/// deadline stopped it. The second value is the simulations it took.
pub fn place(
    obj: &dyn Objective,
    mut b: Bracket,
    cuts: (f64, f64),
    low_first: bool,
    deadline: Option<Instant>,
) -> Option<(Bracket, u64)> {
    let mut evals = 0;
    let order = if low_first {
        [cuts.0, cuts.1]
    } else {
        [cuts.1, cuts.0]
    };
    for t in order {
        if b.straddles(t) {
            if late(deadline) {
                return None;
            }
            b.probe(obj, t, &mut evals)?;
        }
    }
    Some((b, evals))
}
