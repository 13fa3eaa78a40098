//! The event queue of virtual time: events ordered by (time, insertion), and beside them a
//! FIFO for client timeouts.
//!
//! Events sit on a **timing wheel** of 2¹² slots of 16 µs of virtual time each (65 ms) ahead
//! of the last event taken out; each slot is a list sorted by time, events at one time in
//! the order they were pushed (a slot rarely holds two: a push appends, or walks a step or
//! two), and a bitmap (with a word of its non-empty words) finds the next busy slot in a few
//! word operations. The wheel's tables are 32 KiB and a slot's two ends share a cache line:
//! they stay in the first-level cache (a wheel of one slot per microsecond spread every
//! push and pop over half a megabyte). Events further ahead wait in a binary heap on (time,
//! insertion) and move onto the wheel, in that order, as soon as their slot comes within
//! its reach — before anything can be pushed onto their slot — so the order is the binary
//! heap's (time, then insertion) exactly, which the simulator's replay depends on (a test
//! drives both side by side). Service times, backoffs and think times are mostly shorter
//! than the wheel: a push and a pop cost O(1) instead of the heap's O(log n) sifting.
//! Written by hand because that tie order is the point and no crate promises it.
//!
//! Client timeouts all have the same length, so they come due in the order they were set: a
//! FIFO beside the wheel keeps it small (most timeouts never fire). Events at one instant
//! run in the order they were scheduled; a timeout runs before an event only when it is
//! strictly earlier.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// What comes due next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Due<T> {
    /// An event scheduled with [`EventQueue::push`], at its time.
    Event(u64, T),
    /// A client timeout set with [`EventQueue::push_timeout`]: time, attempt, generation.
    Timeout(u64, u32, u32),
}

/// A slot spans 2^SHIFT microseconds.
const SHIFT: u32 = 4;
/// Slots on the wheel: 16 µs each, 65.5 ms ahead.
const SLOTS: usize = 1 << 12;
const MASK: u64 = SLOTS as u64 - 1;
/// Words of the slot bitmap (its summary is one word: a bit per word).
const WORDS: usize = SLOTS / 64;
const _: () = assert!(WORDS <= 64);
/// No entry.
const NIL: u32 = u32::MAX;

/// Where the earliest event is.
#[derive(Debug, Clone, Copy)]
enum Place {
    /// A wheel slot and its first entry.
    Slot(usize, u32),
    Far,
    Past,
}

#[derive(Clone, Copy)]
struct Entry<T> {
    at: u64,
    ev: T,
    next: u32,
}

#[derive(Clone)]
pub(super) struct EventQueue<T> {
    /// The time of the last event taken out: every event on the wheel is at `base` or later
    /// in a slot less than `SLOTS` after `base`'s, every later one in `far`.
    base: u64,
    /// Per slot, the first and last entry of its list (side by side: one cache line). Fixed
    /// sizes, indexed by masked slot numbers: no bounds check.
    ends: Box<[[u32; 2]; SLOTS]>,
    /// Bit per slot: its list is not empty; bit per word of `bits`: that word is not zero.
    bits: [u64; WORDS],
    summary: u64,
    /// Entries on the wheel, by index, reused through a free list threaded through their
    /// `next` (`free` its first, `NIL` when empty).
    entries: Vec<Entry<T>>,
    free: u32,
    /// Events beyond the wheel: (time, insertion, entry).
    far: BinaryHeap<Reverse<(u64, u64, u32)>>,
    seq: u64,
    /// [`EventQueue::next_event`] while no event was pushed or taken (a run of client
    /// timeouts, most of them stale, does not search the wheel again).
    next: Option<Option<(u64, Place)>>,
    /// Events scheduled before `base` (an attempt launched after its deadline passed times
    /// out at the deadline): (time, insertion, entry). They go first, in that order, as on a
    /// binary heap, and do not move the wheel.
    past: BinaryHeap<Reverse<(u64, u64, u32)>>,
    timeouts: VecDeque<(u64, u32, u32)>,
    /// The time of the first timeout, `u64::MAX` when there is none (one compare per pop).
    fifo_at: u64,
}

impl<T: Copy> EventQueue<T> {
    pub(super) fn new() -> Self {
        EventQueue {
            base: 0,
            ends: Box::new([[NIL; 2]; SLOTS]),
            bits: [0; WORDS],
            summary: 0,
            entries: Vec::new(),
            free: NIL,
            far: BinaryHeap::new(),
            seq: 0,
            next: None,
            past: BinaryHeap::new(),
            timeouts: VecDeque::new(),
            fifo_at: u64::MAX,
        }
    }

    /// An event at `at`.
    #[inline(always)]
    pub(super) fn push(&mut self, at: u64, ev: T) {
        self.next = None;
        let e = Entry { at, ev, next: NIL };
        let i = self.free;
        let i = match self.entries.get_mut(i as usize) {
            Some(slot) => {
                self.free = slot.next;
                *slot = e;
                i
            }
            None => {
                self.entries.push(e);
                (self.entries.len() - 1) as u32
            }
        };
        if at < self.base {
            self.seq += 1;
            self.past.push(Reverse((at, self.seq, i)));
        } else if reach(self.base, at) {
            self.link(i, at);
        } else {
            self.seq += 1;
            self.far.push(Reverse((at, self.seq, i)));
        }
    }

    /// Put entry `i` (at `at`, its `next` is `NIL`) into its slot's list, after every entry
    /// at its time or earlier.
    #[inline(always)]
    fn link(&mut self, i: u32, at: u64) {
        let s = ((at >> SHIFT) & MASK) as usize;
        let [head, tail] = self.ends[s];
        if tail == NIL {
            self.ends[s] = [i, i];
            self.bits[s / 64] |= 1 << (s % 64);
            self.summary |= 1 << (s / 64);
        } else if self.entries[tail as usize].at <= at {
            self.entries[tail as usize].next = i;
            self.ends[s][1] = i;
        } else {
            self.insert(s, head, i, at);
        }
    }

    /// Entry `i` goes before the slot's last: after the last entry at `at` or earlier.
    #[inline(never)]
    fn insert(&mut self, s: usize, head: u32, i: u32, at: u64) {
        if self.entries[head as usize].at > at {
            self.entries[i as usize].next = head;
            self.ends[s][0] = i;
            return;
        }
        let mut p = head;
        loop {
            let n = self.entries[p as usize].next;
            if n == NIL || self.entries[n as usize].at > at {
                self.entries[i as usize].next = n;
                self.entries[p as usize].next = i;
                return;
            }
            p = n;
        }
    }

    /// The first word of the bitmap at or after `w` that is not zero.
    fn word_from(&self, w: usize) -> Option<usize> {
        if w >= WORDS {
            return None;
        }
        let m = self.summary & (u64::MAX << w);
        (m != 0).then(|| m.trailing_zeros() as usize)
    }

    /// The next busy slot from the base's, going round the wheel once.
    #[inline(always)]
    fn next_slot(&self) -> Option<usize> {
        // (A bit per non-empty word: none, no event on the wheel.)
        if self.summary == 0 {
            return None;
        }
        let p = ((self.base >> SHIFT) & MASK) as usize;
        let w = p / 64;
        let m = self.bits[w] & (u64::MAX << (p % 64));
        if m != 0 {
            return Some(w * 64 + m.trailing_zeros() as usize);
        }
        // Later words, then round from the start (the part of word `w` before `p` is the
        // far end of the wheel: its high bits were found empty above).
        let x = self.word_from(w + 1).or_else(|| self.word_from(0))?;
        Some(x * 64 + self.bits[x % WORDS].trailing_zeros() as usize)
    }

    /// The time of the earliest event and where it is.
    #[inline(always)]
    fn next_event(&self) -> Option<(u64, Place)> {
        if let Some(Reverse((at, _, _))) = self.past.peek() {
            return Some((*at, Place::Past));
        }
        match self.next_slot() {
            Some(s) => {
                let first = self.ends[s % SLOTS][0];
                Some((self.entries[first as usize].at, Place::Slot(s, first)))
            }
            None => self.far.peek().map(|Reverse((at, _, _))| (*at, Place::Far)),
        }
    }

    /// Take the earliest event, found by [`EventQueue::next_event`].
    #[inline(always)]
    fn take(&mut self, at: u64, place: Place) -> Option<(u64, T)> {
        self.next = None;
        if let Place::Past = place {
            let Reverse((_, _, i)) = self.past.pop()?;
            let e = self.release(i)?;
            return Some((e.at, e.ev));
        }
        self.base = at;
        // Everything the wheel now reaches moves onto it, in (time, insertion) order,
        // before anything else can be pushed onto those slots.
        while let Some(&Reverse((far_at, _, i))) = self.far.peek() {
            if !reach(self.base, far_at) {
                break;
            }
            self.far.pop();
            self.link(i, far_at);
        }
        // A slot's first entry stays first: what moved in from `far` is later than it.
        let (s, i) = match place {
            Place::Slot(s, i) => (s % SLOTS, i),
            _ => {
                let s = ((at >> SHIFT) & MASK) as usize;
                (s, self.ends[s][0])
            }
        };
        let e = self.release(i)?;
        debug_assert_eq!(self.ends[s][0], i);
        self.ends[s][0] = e.next;
        if e.next == NIL {
            self.ends[s][1] = NIL;
            self.bits[s / 64] &= !(1 << (s % 64));
            if self.bits[s / 64] == 0 {
                self.summary &= !(1 << (s / 64));
            }
        }
        Some((e.at, e.ev))
    }

    /// Entry `i`, its slot put on the free list (`None` for no entry).
    #[inline(always)]
    fn release(&mut self, i: u32) -> Option<Entry<T>> {
        let slot = self.entries.get_mut(i as usize)?;
        let e = *slot;
        slot.next = self.free;
        self.free = i;
        Some(e)
    }

    /// The bytes its tables hold (for a simulation's memory bound).
    pub(super) fn footprint(&self) -> usize {
        use std::mem::size_of;
        2 * SLOTS * size_of::<u32>()
            + WORDS * size_of::<u64>()
            + self.entries.capacity() * size_of::<Entry<T>>()
            + (self.far.capacity() + self.past.capacity()) * size_of::<Reverse<(u64, u64, u32)>>()
            + self.timeouts.capacity() * size_of::<(u64, u32, u32)>()
    }

    /// A client timeout; timeouts must be pushed in the order they come due.
    pub(super) fn push_timeout(&mut self, at: u64, attempt: u32, gen: u32) {
        if self.timeouts.is_empty() {
            self.fifo_at = at;
        }
        self.timeouts.push_back((at, attempt, gen));
    }

    /// Some event or client timeout comes due at or before `t` (the earliest event is kept
    /// for the next pop).
    pub(super) fn due_by(&mut self, t: u64) -> bool {
        let event = match self.next {
            Some(known) => known,
            None => self.next_event(),
        };
        self.next = Some(event);
        self.fifo_at <= t || event.is_some_and(|(at, _)| at <= t)
    }

    #[inline(always)]
    pub(super) fn pop(&mut self) -> Option<Due<T>> {
        let event = match self.next {
            Some(known) => known,
            None => self.next_event(),
        };
        match event {
            // Kept for the next pop: no event was pushed or taken.
            Some((h, _)) if self.fifo_at < h => {
                self.next = Some(event);
                self.pop_timeout()
            }
            Some((at, place)) => {
                let (at, ev) = self.take(at, place)?;
                Some(Due::Event(at, ev))
            }
            None => {
                self.next = Some(event);
                self.pop_timeout()
            }
        }
    }

    /// The first timeout (`None` when there is none).
    fn pop_timeout(&mut self) -> Option<Due<T>> {
        let (at, a, gen) = self.timeouts.pop_front()?;
        self.fifo_at = self.timeouts.front().map_or(u64::MAX, |t| t.0);
        Some(Due::Timeout(at, a, gen))
    }
}

/// Whether an event at `at` (not before `base`) belongs on the wheel: its slot is less than
/// `SLOTS` after `base`'s.
#[inline(always)]
fn reach(base: u64, at: u64) -> bool {
    (at >> SHIFT) - (base >> SHIFT) < SLOTS as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use brownout_core::rng::SplitMix;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    fn drain(q: &mut EventQueue<char>) -> Vec<Due<char>> {
        std::iter::from_fn(|| q.pop()).collect()
    }

    #[test]
    fn events_come_in_time_order_and_ties_in_insertion_order() {
        let mut q = EventQueue::new();
        q.push(30, 'c');
        q.push(10, 'a');
        q.push(30, 'd');
        q.push(10, 'b');
        q.push(20, 'x');
        assert_eq!(
            drain(&mut q),
            vec![
                Due::Event(10, 'a'),
                Due::Event(10, 'b'),
                Due::Event(20, 'x'),
                Due::Event(30, 'c'),
                Due::Event(30, 'd'),
            ]
        );
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn timeouts_interleave_and_yield_ties_to_events() {
        let mut q = EventQueue::new();
        q.push(10, 'a');
        q.push(20, 'b');
        q.push_timeout(5, 1, 0);
        q.push_timeout(20, 2, 0);
        q.push_timeout(25, 3, 7);
        assert_eq!(
            drain(&mut q),
            vec![
                Due::Timeout(5, 1, 0),
                Due::Event(10, 'a'),
                // At one instant, the event scheduled on the heap goes first.
                Due::Event(20, 'b'),
                Due::Timeout(20, 2, 0),
                Due::Timeout(25, 3, 7),
            ]
        );
    }

    /// The queue this one replaced: a binary heap on (time, insertion number), and the
    /// timeout FIFO beside it.
    #[derive(Default)]
    struct Reference {
        seq: u64,
        heap: BinaryHeap<Reverse<(u64, u64, u32)>>,
        timeouts: VecDeque<(u64, u32, u32)>,
    }

    impl Reference {
        fn pop(&mut self) -> Option<Due<u32>> {
            let heap_at = self.heap.peek().map(|Reverse((t, _, _))| *t);
            let fifo_at = self.timeouts.front().map(|(t, _, _)| *t);
            match (heap_at, fifo_at) {
                (None, None) => None,
                (Some(h), Some(f)) if f < h => self
                    .timeouts
                    .pop_front()
                    .map(|(t, a, g)| Due::Timeout(t, a, g)),
                (None, Some(_)) => self
                    .timeouts
                    .pop_front()
                    .map(|(t, a, g)| Due::Timeout(t, a, g)),
                _ => self.heap.pop().map(|Reverse((t, _, e))| Due::Event(t, e)),
            }
        }
    }

    #[test]
    fn the_order_is_the_binary_heaps_over_a_long_random_run() {
        // A simulation's pattern: every popped item schedules 0–3 events from its instant
        // (many at the same instant or a few microseconds on, some far), and timeouts of one
        // length; the two queues must agree on every item.
        for seed in 0..20u64 {
            let mut rng = SplitMix::new(seed);
            let (mut q, mut r) = (EventQueue::new(), Reference::default());
            let mut id = 0u32;
            let mut now: u64;
            let mut schedule =
                |q: &mut EventQueue<u32>, r: &mut Reference, now: u64, rng: &mut SplitMix| {
                    for _ in 0..rng.below(4) {
                        let at = match rng.below(6) {
                            0 => now,
                            1 => now + rng.below(4) as u64,
                            2 => now + rng.below(50_000) as u64,
                            3 => now + (1 << rng.below(40)),
                            // Now and then in the past (a deadline already gone).
                            4 if rng.below(8) == 0 => now.saturating_sub(rng.below(300) as u64),
                            _ => now + 30_000 + rng.below(20) as u64,
                        };
                        id += 1;
                        q.push(at, id);
                        r.seq += 1;
                        r.heap.push(Reverse((at, r.seq, id)));
                        if rng.below(3) == 0 {
                            q.push_timeout(now + 250_000, id, 1);
                            r.timeouts.push_back((now + 250_000, id, 1));
                        }
                    }
                };
            for _ in 0..8 {
                schedule(&mut q, &mut r, 0, &mut rng);
            }
            let mut popped = 0;
            while popped < 30_000 {
                let (a, b) = (q.pop(), r.pop());
                assert_eq!(a, b, "seed {seed}, item {popped}");
                let Some(due) = a else { break };
                // As the simulation does: the clock is the time of what it handles, which
                // an event scheduled in the past sets back.
                now = match due {
                    Due::Event(t, _) | Due::Timeout(t, _, _) => t,
                };
                schedule(&mut q, &mut r, now, &mut rng);
                popped += 1;
            }
            assert!(
                popped > 1_000,
                "seed {seed}: the run went on ({popped} items)"
            );
        }
    }

    #[test]
    fn memory_stays_flat_over_a_long_run() {
        let mut q = EventQueue::new();
        for i in 0..200u64 {
            q.push(i * 7, 0u32);
        }
        let mut high = 0;
        for i in 0..200_000u64 {
            let Some(Due::Event(t, _)) = q.pop() else {
                panic!("the queue never empties")
            };
            q.push(t + 1 + (i * 7919) % 40_000, 0);
            if i == 10_000 {
                high = q.footprint();
            }
        }
        assert!(q.footprint() <= high * 2, "{} > 2 × {high}", q.footprint());
    }
}
