//! One tolerance for comparing figures that went through floating point — a gate's `==`,
//! a share on a ladder of rungs, a stage's width against the widest allowed: two figures
//! are equal when they differ by at most [`REL`] of the larger (or of 1, below 1), so
//! `0.1 + 0.2` is `0.3` and a share read back from JSON is the share written.

/// The relative tolerance: well above float rounding, far below any figure that matters.
pub const REL: f64 = 1e-9;

/// `a` equals `b` within the tolerance.
pub fn eq(a: f64, b: f64) -> bool {
    (a - b).abs() <= REL * a.abs().max(b.abs()).max(1.0)
}

/// `a <= b`, or equal within the tolerance.
pub fn le(a: f64, b: f64) -> bool {
    a <= b || eq(a, b)
}

/// `a < b`, and not equal within the tolerance.
pub fn lt(a: f64, b: f64) -> bool {
    a < b && !eq(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_is_equal_and_a_real_difference_is_not() {
        assert!(eq(0.1 + 0.2, 0.3));
        assert!(!eq(0.3, 0.3001));
        assert!(eq(1e12 + 1e-3, 1e12), "relative above 1");
        assert!(!eq(1e-12, 2e-3), "absolute below 1");
        assert!(le(0.1 + 0.2, 0.3) && le(0.2, 0.3) && !le(0.31, 0.3));
        assert!(!lt(0.1 + 0.2, 0.3) && lt(0.2, 0.3));
        assert!(!eq(f64::NAN, f64::NAN));
    }
}
