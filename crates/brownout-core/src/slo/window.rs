//! Sliding windows over samples (calls or tasks), with bounded memory whatever the rate.
//!
//! **Time windows** are cut into 100 slots (a 10 s window: 100 ms slots). Each slot keeps
//! counts, a latency sum, its largest latency and — when a percentile gate needs them — its
//! samples' latency buckets (a list merged to one entry per distinct bucket as it grows:
//! `hist::BucketLog`). The window's aggregate is updated as samples come in and as whole
//! slots fall off the back, so memory is O(slots × distinct buckets) at any rate, and an
//! evaluation is O(1) (a percentile: a walk from the last one, see `hist`; O(slots) for
//! `max`). The price: membership is decided per slot, so the window spans between 99 % and
//! 100 % of its length. Precisely: with slot width `w = length / 100` and slot index
//! `s(t) = ⌊t / w⌋`, the *head* is the largest slot index of every evaluation time and every
//! sample seen so far, and the window holds the samples whose slot is in `(head − 100, head]`.
//! A sample that arrives after its slot has left is ignored.
//!
//! **Count windows** keep the last N samples exactly in a ring (N ≤ 100 000).

use super::hist::{bucket, BucketLog, Hist};
use std::collections::VecDeque;

/// Slots per time window.
pub const SLOTS: i64 = 100;

pub(crate) const OK: u8 = 1;
pub(crate) const ANSWERED: u8 = 2;
pub(crate) const CORRECT: u8 = 4;
pub(crate) const TIMED_OUT: u8 = 8;
/// A result a fault changed (the silent-failure SLIs' denominator).
pub(crate) const ALTERED: u8 = 16;
/// The agent acted on a value a fault introduced.
pub(crate) const PROPAGATED: u8 = 32;
/// The agent noticed a changed result.
pub(crate) const NOTICED: u8 = 64;

/// One call or task, as a window keeps it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sample {
    pub flags: u8,
    pub attempts: u32,
    /// Latency in nanoseconds (sums stay exact integers, so removal is exact).
    pub latency_ns: u64,
    pub bucket: u16,
}

impl Sample {
    /// A sample; its latency bucket (a logarithm) is computed only when `histogram`.
    pub(crate) fn new(flags: u8, attempts: u32, latency_ms: f64, histogram: bool) -> Sample {
        let ms = if latency_ms.is_finite() {
            latency_ms.max(0.0)
        } else {
            0.0
        };
        Sample {
            flags,
            attempts,
            latency_ns: round_nonneg(ms * 1e6).min(u64::MAX as f64 / 2.0) as u64,
            bucket: if histogram { bucket(ms) } else { 0 },
        }
    }
}

/// `x.round()` for `x ≥ 0` (or +∞) without the library call x86-64's baseline makes for it
/// (a sample per call is rounded): below 2⁵² truncate and compare the exact remainder,
/// above it every float is an integer already.
#[inline]
fn round_nonneg(x: f64) -> f64 {
    if x < 4_503_599_627_370_496.0 {
        let t = x as i64 as f64;
        if x - t >= 0.5 {
            t + 1.0
        } else {
            t
        }
    } else {
        x
    }
}

/// Counts over a set of samples.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub n: u64,
    pub ok: u64,
    pub answered: u64,
    pub correct: u64,
    pub timed_out: u64,
    pub altered: u64,
    pub propagated: u64,
    pub noticed: u64,
    pub attempts: u64,
    pub latency_ns: u128,
}

impl Totals {
    #[inline]
    pub(crate) fn add(&mut self, s: &Sample) {
        self.n += 1;
        self.ok += u64::from(s.flags & OK != 0);
        self.answered += u64::from(s.flags & ANSWERED != 0);
        self.correct += u64::from(s.flags & CORRECT != 0);
        self.timed_out += u64::from(s.flags & TIMED_OUT != 0);
        self.altered += u64::from(s.flags & ALTERED != 0);
        self.propagated += u64::from(s.flags & PROPAGATED != 0);
        self.noticed += u64::from(s.flags & NOTICED != 0);
        self.attempts += u64::from(s.attempts);
        self.latency_ns += u128::from(s.latency_ns);
    }

    fn sub(&mut self, s: &Sample) {
        self.n -= 1;
        self.ok -= u64::from(s.flags & OK != 0);
        self.answered -= u64::from(s.flags & ANSWERED != 0);
        self.correct -= u64::from(s.flags & CORRECT != 0);
        self.timed_out -= u64::from(s.flags & TIMED_OUT != 0);
        self.altered -= u64::from(s.flags & ALTERED != 0);
        self.propagated -= u64::from(s.flags & PROPAGATED != 0);
        self.noticed -= u64::from(s.flags & NOTICED != 0);
        self.attempts -= u64::from(s.attempts);
        self.latency_ns -= u128::from(s.latency_ns);
    }

    fn sub_all(&mut self, o: &Totals) {
        self.n -= o.n;
        self.ok -= o.ok;
        self.answered -= o.answered;
        self.correct -= o.correct;
        self.timed_out -= o.timed_out;
        self.altered -= o.altered;
        self.propagated -= o.propagated;
        self.noticed -= o.noticed;
        self.attempts -= o.attempts;
        self.latency_ns -= o.latency_ns;
    }
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Slot {
    index: i64,
    totals: Totals,
    max_ns: u64,
    buckets: BucketLog,
}

/// A sliding window of time or of samples.
#[derive(Debug, Clone)]
pub(crate) enum Sliding {
    Time {
        width_ms: f64,
        /// Times known to fall in one slot: a call is pushed, then the window is evaluated,
        /// at one instant, and the next calls mostly fall in the same slot (no division).
        memo: SlotMemo,
        head: Option<i64>,
        slots: Vec<Slot>,
        totals: Totals,
        hist: Option<Hist>,
        /// A count per bucket for merging a slot's [`BucketLog`] (all zero between merges).
        scratch: Vec<u32>,
    },
    Count {
        size: usize,
        ring: VecDeque<Sample>,
        /// Sequence number of the next sample.
        seq: u64,
        /// (sequence, latency) with decreasing latencies: the window's max at the front
        /// (kept only for a `max` gate).
        maxes: Option<VecDeque<(u64, u64)>>,
        totals: Totals,
        hist: Option<Hist>,
    },
}

impl Sliding {
    pub(crate) fn time(length_ms: f64, histogram: bool) -> Sliding {
        Sliding::Time {
            width_ms: length_ms / SLOTS as f64,
            memo: SlotMemo::EMPTY,
            head: None,
            slots: vec![
                Slot {
                    index: i64::MIN,
                    ..Slot::default()
                };
                SLOTS as usize
            ],
            totals: Totals::default(),
            hist: histogram.then(Hist::new),
            scratch: Vec::new(),
        }
    }

    pub(crate) fn count(n: u32, histogram: bool, max: bool) -> Sliding {
        Sliding::Count {
            size: n.max(1) as usize,
            ring: VecDeque::new(),
            seq: 0,
            maxes: max.then(VecDeque::new),
            totals: Totals::default(),
            hist: histogram.then(Hist::new),
        }
    }

    /// Keep latency buckets (`histogram`) and the running max (`max`, count windows) from
    /// now on too: for a window shared by gates that read different things, made before
    /// any sample.
    pub(crate) fn keep(&mut self, histogram: bool, max: bool) {
        match self {
            Sliding::Time { hist, .. } => {
                if histogram && hist.is_none() {
                    *hist = Some(Hist::new());
                }
            }
            Sliding::Count { hist, maxes, .. } => {
                if histogram && hist.is_none() {
                    *hist = Some(Hist::new());
                }
                if max && maxes.is_none() {
                    *maxes = Some(VecDeque::new());
                }
            }
        }
    }

    /// Whether [`Sliding::advance`] to `at_ms` would move the window (a count window never
    /// moves with time).
    pub(crate) fn slides_at(&mut self, at_ms: f64) -> bool {
        match self {
            Sliding::Time {
                width_ms,
                memo,
                head,
                ..
            } => head.is_none_or(|h| slot_at(memo, at_ms, *width_ms) > h),
            Sliding::Count { .. } => false,
        }
    }

    /// Move a time window's head to `at_ms` (never backwards); count windows ignore time.
    /// Inline for the common case, a time within the head's slot; sliding is out of line.
    /// Whether it moved.
    #[inline]
    pub(crate) fn advance(&mut self, at_ms: f64) -> bool {
        if let Sliding::Time {
            width_ms,
            memo,
            head,
            ..
        } = self
        {
            let s = slot_at(memo, at_ms, *width_ms);
            if head.is_none_or(|h| s > h) {
                self.slide_to(s);
                return true;
            }
        }
        false
    }

    /// Move a time window's head to slot `s`, past its current head.
    #[inline(never)]
    fn slide_to(&mut self, s: i64) {
        if let Sliding::Time {
            head,
            slots,
            totals,
            hist,
            ..
        } = self
        {
            let from = match *head {
                Some(h) if s <= h => return,
                Some(h) => h,
                None => s - 1,
            };
            *head = Some(s);
            if s - from >= SLOTS {
                for slot in slots.iter_mut() {
                    reset(slot, None, i64::MIN);
                }
                *totals = Totals::default();
                if let Some(h) = hist {
                    h.clear();
                }
            }
            // Slots (s − SLOTS, s] are the window: the ring entries of from+1..=s are reused.
            let first = (from + 1).max(s - SLOTS + 1);
            for i in first..=s {
                let slot = &mut slots[i.rem_euclid(SLOTS) as usize];
                if slot.index != i64::MIN {
                    totals.sub_all(&slot.totals);
                }
                reset(slot, hist.as_mut(), i);
            }
        }
    }

    /// Take a sample at `at_ms`. `true` when no sample left the window but by a count
    /// window's turnover: a time window took it into its newest slot without sliding.
    pub(crate) fn push(&mut self, at_ms: f64, sample: Sample) -> bool {
        match self {
            Sliding::Time { .. } => {
                let slid = self.advance(at_ms);
                let Sliding::Time {
                    width_ms,
                    memo,
                    head,
                    slots,
                    totals,
                    hist,
                    scratch,
                } = self
                else {
                    return false;
                };
                let s = slot_at(memo, at_ms, *width_ms);
                let Some(h) = *head else { return false };
                if s <= h - SLOTS {
                    return false; // its slot has already left the window
                }
                // (`memo` holds `s` now, and its place in the ring.)
                let slot = &mut slots[memo.ring];
                let kept = !slid && s == h && slot.index == s;
                if slot.index != s {
                    // A slot between the ones seen so far that nobody touched yet.
                    if slot.index != i64::MIN {
                        totals.sub_all(&slot.totals);
                    }
                    reset(slot, hist.as_mut(), s);
                }
                slot.totals.add(&sample);
                totals.add(&sample);
                slot.max_ns = slot.max_ns.max(sample.latency_ns);
                if let Some(hist) = hist {
                    slot.buckets.push(sample.bucket, scratch);
                    hist.add(sample.bucket, 1);
                }
                kept
            }
            Sliding::Count {
                size,
                ring,
                seq,
                maxes,
                totals,
                hist,
            } => {
                if ring.len() == *size {
                    if let Some(old) = ring.pop_front() {
                        totals.sub(&old);
                        if let Some(h) = hist.as_mut() {
                            h.sub(old.bucket, 1);
                        }
                    }
                }
                ring.push_back(sample);
                totals.add(&sample);
                if let Some(h) = hist.as_mut() {
                    h.add(sample.bucket, 1);
                }
                if let Some(maxes) = maxes {
                    while maxes.back().is_some_and(|&(_, v)| v <= sample.latency_ns) {
                        maxes.pop_back();
                    }
                    maxes.push_back((*seq, sample.latency_ns));
                    let oldest = *seq + 1 - ring.len() as u64;
                    while maxes.front().is_some_and(|&(q, _)| q < oldest) {
                        maxes.pop_front();
                    }
                }
                *seq += 1;
                true
            }
        }
    }

    pub(crate) fn totals(&self) -> &Totals {
        match self {
            Sliding::Time { totals, .. } | Sliding::Count { totals, .. } => totals,
        }
    }

    /// The nearest-rank percentile, in milliseconds (within 0.4 %).
    pub(crate) fn quantile(&mut self, ppm: u32) -> Option<f64> {
        match self {
            Sliding::Time { hist, .. } | Sliding::Count { hist, .. } => {
                hist.as_mut().and_then(|h| h.quantile(ppm))
            }
        }
    }

    /// The largest latency in the window, in milliseconds (exact).
    pub(crate) fn max_ms(&self) -> Option<f64> {
        if self.totals().n == 0 {
            return None;
        }
        let ns = match self {
            Sliding::Time { slots, head, .. } => {
                let h = (*head)?;
                slots
                    .iter()
                    .filter(|s| s.index > h - SLOTS && s.index <= h)
                    .map(|s| s.max_ns)
                    .max()
                    .unwrap_or(0)
            }
            Sliding::Count { maxes, .. } => maxes.as_ref()?.front().map_or(0, |&(_, v)| v),
        };
        Some(ns as f64 / 1e6)
    }
}

/// The slot a time falls in (NaN lands in slot 0; the range is clamped to ±2⁵², so slot
/// arithmetic cannot overflow).
pub fn slot_index(at_ms: f64, width_ms: f64) -> i64 {
    const LIMIT: i64 = 1 << 52;
    // `floor` without the library call (x86-64's baseline has no rounding instruction):
    // truncate, then step down when that rounded a negative quotient up. Exact for every
    // float (beyond 2⁵² a float is an integer), NaN → 0 and ±∞ saturate, as `floor` did.
    let q = at_ms / width_ms;
    let t = q as i64;
    let floor = if (t as f64) > q {
        t.saturating_sub(1)
    } else {
        t
    };
    floor.clamp(-LIMIT, LIMIT)
}

/// A range of times `[lo, hi]` whose [`slot_index`] is `s` (empty: `lo > hi`, or NaN).
/// [`slot_index`] never decreases as the time grows (a correctly rounded division by a
/// positive width, `floor` and a clamp all keep order), so every time between two times of
/// slot `s` is in slot `s`: a time in the range needs no division.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SlotMemo {
    lo: f64,
    hi: f64,
    s: i64,
    /// `s`'s place in the ring of slots.
    ring: usize,
}

impl SlotMemo {
    const EMPTY: SlotMemo = SlotMemo {
        lo: f64::NAN,
        hi: f64::NAN,
        s: 0,
        ring: 0,
    };
}

/// [`slot_index`] through the memo.
#[inline]
fn slot_at(memo: &mut SlotMemo, at_ms: f64, width_ms: f64) -> i64 {
    if memo.lo <= at_ms && at_ms <= memo.hi {
        return memo.s;
    }
    slot_miss(memo, at_ms, width_ms)
}

/// A time outside the memo's range: its slot, and the range from it up to a time near the
/// slot's end that is checked to be in the slot too (only the range's two ends are known
/// to be in it; the slot's exact edges are not needed).
#[inline(never)]
fn slot_miss(memo: &mut SlotMemo, at_ms: f64, width_ms: f64) -> i64 {
    let s = slot_index(at_ms, width_ms);
    let end = (s as f64 + 1.0) * width_ms * (1.0 - 1e-9);
    let hi = if width_ms > 0.0 && end >= at_ms && slot_index(end, width_ms) == s {
        end
    } else {
        at_ms
    };
    *memo = SlotMemo {
        lo: at_ms,
        hi,
        s,
        ring: s.rem_euclid(SLOTS) as usize,
    };
    s
}

/// Empty a slot for reuse as slot `index`, taking its buckets out of the histogram.
fn reset(slot: &mut Slot, hist: Option<&mut Hist>, index: i64) {
    match hist {
        Some(h) if slot.index != i64::MIN => slot.buckets.drain_from(h),
        _ => slot.buckets.clear(),
    }
    slot.totals = Totals::default();
    slot.max_ns = 0;
    slot.index = index;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_nonneg_is_round_for_every_non_negative_float() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut values = vec![
            0.0,
            0.5,
            1.5,
            2.5,
            0.49999999999999994,
            4503599627370495.5,
            4503599627370496.0,
            9007199254740993.0,
            1e300,
            f64::MAX,
            f64::INFINITY,
            f64::MIN_POSITIVE,
        ];
        for _ in 0..50_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(f64::from_bits(x >> 1)); // any non-negative bit pattern
            values.push((x % 100_000_000) as f64 / 64.0); // halves and quarters
            values.push((x % 1_000_000_000) as f64 * 1e-3 * 1e6); // latencies as sampled
        }
        for &v in values.iter().filter(|v| !v.is_nan()) {
            assert_eq!(round_nonneg(v).to_bits(), v.round().to_bits(), "{v:e}");
        }
    }

    #[test]
    fn slot_index_is_the_floor_of_the_quotient_for_every_float() {
        const LIMIT: i64 = 1 << 52;
        let reference = |at: f64, w: f64| ((at / w).floor() as i64).clamp(-LIMIT, LIMIT);
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut values = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            -1.0,
            -1e-300,
            1e300,
            -1e300,
            4503599627370496.5,
            -4503599627370497.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MAX,
            f64::MIN,
        ];
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(f64::from_bits(x)); // any bit pattern: subnormals, huge, NaN
            values.push((x % 2_000_000) as f64 / 7.0 - 100_000.0); // times near slot edges
        }
        for &at in &values {
            for w in [100.0, 10.0, 0.1, 1.0 / 3.0, 1e-300, 1e300] {
                assert_eq!(slot_index(at, w), reference(at, w), "{at} / {w}");
            }
        }
    }

    /// The memo's ranges give `slot_index` for every time: rising times (as a run's), jumps
    /// back, times on and near slot edges, NaN, negatives, tiny and huge widths.
    #[test]
    fn the_slot_memo_gives_slot_index_for_every_time() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for w in [100.0, 10.0, 0.1, 1.0 / 3.0, 1e-300, 1e300] {
            let mut memo = SlotMemo::EMPTY;
            let mut t = -250.0;
            for i in 0..40_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                t = match i % 7 {
                    0 => t - (x % 500) as f64,          // back
                    1 => (t / w).round() * w,           // on an edge
                    2 => f64::from_bits(x),             // any float, NaN too
                    3 => t + f64::EPSILON * t.abs(),    // an ulp or so on
                    _ => t + (x % 1_000) as f64 / 17.0, // on, as a run goes
                };
                let want = slot_index(t, w);
                assert_eq!(slot_at(&mut memo, t, w), want, "{t} / {w}");
                assert_eq!(memo.ring, want.rem_euclid(SLOTS) as usize);
            }
        }
    }
}
