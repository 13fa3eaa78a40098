//! When a gate need not be evaluated again: [`Guard`], the kind of sample that cannot make
//! a gate's value worse, and [`Mark`], where its last evaluation left its window.
//! [`super::GateWatch::tick`] skips such a gate; the summaries are the same (a test ticks
//! one watch and evaluates another on every sample).

use super::grammar::Gate;
use super::measure::{Cmp, Sli};
use super::window::{ANSWERED, CORRECT, OK, TIMED_OUT};

/// For a gate whose value cannot get worse when one kind of sample comes in (and none
/// leaves the window but by a count window's turnover), what that kind is. When exactly one
/// sample came in since the gate's last evaluation, it was of that kind and the window has
/// not moved, the gate's value is no worse than it was then, so not past its worst: a
/// holding gate still holds, and a breached one whose value still fails its limit stays
/// breached — evaluating it would change nothing its summary shows, so
/// [`super::GateWatch::tick`] skips it (and the next sample is judged against the same bound).
///
/// Why the value cannot get worse (counts are exact integers below 2⁵³; a correctly
/// rounded division is monotone): `error_rate`/`blast_radius` `(n − ok)/n` with an `OK`
/// sample; `task_success` `ok/n`, `availability` `answered/n`, `tcsr` `correct/n` with one
/// that has the property; `timeouts` `timed_out/n` with one that did not time out. A count
/// window's turnover drops one sample as it takes one: the numerator moves the right way
/// or not at all, `n` stays. `eta` is `answered/n × correct/answered`: three roundings (at
/// most 3·2⁻⁵³ of the value) around the exact `correct/n`, which a correct sample raises
/// by at least `1/(n(n+1))` of itself — more than the roundings while `n < 2²⁴` (checked).
/// A percentile below a limit is the smallest bucket whose count and those below reach the
/// rank `⌈q·n⌉`; a sample in that bucket or below adds one to that count while the rank
/// grows by one at most, so the percentile's bucket stays or falls.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Guard {
    /// A sample with one of these flags.
    Has(u8),
    /// A sample with none of these flags.
    Lacks(u8),
    /// `eta`: a `CORRECT` sample, while the window holds fewer than 2²⁴.
    Eta,
    /// A percentile below a limit: a sample in the bucket of the last value or below.
    Percentile,
}

impl Guard {
    pub(super) fn of(g: &Gate) -> Option<Guard> {
        let below = matches!(g.cmp, Cmp::Lt | Cmp::Le);
        let above = matches!(g.cmp, Cmp::Gt | Cmp::Ge);
        match g.sli {
            Sli::ErrorRate | Sli::BlastRadius if below => Some(Guard::Has(OK)),
            Sli::TaskSuccess if above => Some(Guard::Has(OK)),
            Sli::Availability if above => Some(Guard::Has(ANSWERED)),
            Sli::Tcsr if above => Some(Guard::Has(CORRECT)),
            Sli::Timeouts if below => Some(Guard::Lacks(TIMED_OUT)),
            Sli::Eta if above => Some(Guard::Eta),
            Sli::Percentile(_) if below => Some(Guard::Percentile),
            _ => None,
        }
    }

    /// Whether a sample with these flags and latency bucket, taken into a window that now
    /// holds `n`, cannot make the value worse than it was at `bound` (a percentile's bucket).
    #[inline]
    pub(super) fn passes(self, flags: u8, bucket: u16, n: u64, bound: u16) -> bool {
        match self {
            Guard::Has(m) => flags & m != 0,
            Guard::Lacks(m) => flags & m == 0,
            Guard::Eta => flags & CORRECT != 0 && n < 1 << 24,
            Guard::Percentile => bucket <= bound,
        }
    }
}

/// Where a guarded gate's last evaluation left its window ([`Guard`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Mark {
    pub(super) moved: u64,
    pub(super) version: u64,
    /// A percentile's bucket then.
    pub(super) bound: u16,
}
