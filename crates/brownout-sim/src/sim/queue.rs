//! The event queue of virtual time: events ordered by (time, insertion), and beside them a
//! FIFO for client timeouts.
//!
//! Events sit in a **radix heap**: bucket b ≥ 1 holds the events whose time first differs
//! from the last time taken out (`last`) at bit b − 1, bucket 0 those at `last` itself. A
//! discrete-event simulation never schedules before the event it is handling, so times only
//! grow; when bucket 0 runs dry, the lowest non-empty bucket is spread over the buckets below
//! it around its earliest time. Each event moves a few times at most, with no comparison of
//! two events, where a binary heap sifts through log n levels on every push and pop. Events
//! at one time stay in the order they were pushed: they always share a bucket, and every
//! bucket keeps its order when it is filled or spread — so the order is the binary heap's
//! (time, then insertion) exactly, which the simulator's replay depends on (a test drives
//! both side by side). Written by hand because that tie order is the point and no crate
//! promises it.
//!
//! Client timeouts all have the same length, so they come due in the order they were set: a
//! FIFO beside the heap keeps it small (most timeouts never fire). Events at one instant
//! run in the order they were scheduled; a timeout runs before an event only when it is
//! strictly earlier.

use std::collections::VecDeque;

/// What comes due next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Due<T> {
    /// An event scheduled with [`EventQueue::push`], at its time.
    Event(u64, T),
    /// A client timeout set with [`EventQueue::push_timeout`]: time, attempt, generation.
    Timeout(u64, u32, u32),
}

/// Bucket 0 and one per bit of a time.
const BUCKETS: usize = 65;

pub(super) struct EventQueue<T> {
    /// The time of the last event taken out: no event held is earlier.
    last: u64,
    buckets: Vec<Vec<(u64, T)>>,
    /// The next event to take from bucket 0.
    head: usize,
    /// Bit b set: bucket b holds events (bucket 0: beyond `head`).
    nonempty: u128,
    /// The earliest time held while bucket 0 is empty, once computed (kept up to date by
    /// pushes, so a timeout that goes first does not cost a second scan).
    min: Option<u64>,
    timeouts: VecDeque<(u64, u32, u32)>,
}

/// The bucket of an event at `at` when the last time taken out is `last`.
fn bucket(last: u64, at: u64) -> usize {
    (u64::BITS - (at ^ last).leading_zeros()) as usize
}

impl<T: Copy> EventQueue<T> {
    pub(super) fn new() -> Self {
        EventQueue {
            last: 0,
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            head: 0,
            nonempty: 0,
            min: None,
            timeouts: VecDeque::new(),
        }
    }

    /// An event at `at`, which is never before the last event taken out (the simulation
    /// schedules from the instant it handles; a time in the past runs at once).
    pub(super) fn push(&mut self, at: u64, ev: T) {
        debug_assert!(at >= self.last, "an event scheduled in the past");
        let at = at.max(self.last);
        let b = bucket(self.last, at);
        self.buckets[b].push((at, ev));
        self.nonempty |= 1 << b;
        if let Some(m) = self.min {
            self.min = Some(m.min(at));
        }
    }

    /// The bytes its tables hold (for a simulation's memory bound).
    pub(super) fn footprint(&self) -> usize {
        use std::mem::size_of;
        self.buckets
            .iter()
            .map(|b| b.capacity() * size_of::<(u64, T)>())
            .sum::<usize>()
            + self.timeouts.capacity() * size_of::<(u64, u32, u32)>()
    }

    /// A client timeout; timeouts must be pushed in the order they come due.
    pub(super) fn push_timeout(&mut self, at: u64, attempt: u32, gen: u32) {
        self.timeouts.push_back((at, attempt, gen));
    }

    /// The time of the earliest event, without taking it.
    fn next_at(&mut self) -> Option<u64> {
        if self.nonempty & 1 != 0 {
            return Some(self.last);
        }
        if self.nonempty == 0 {
            return None;
        }
        if self.min.is_none() {
            let b = self.nonempty.trailing_zeros() as usize;
            self.min = self.buckets[b].iter().map(|(at, _)| *at).min();
        }
        self.min
    }

    /// Take the earliest event (the first pushed among the earliest).
    fn pop_event(&mut self) -> Option<(u64, T)> {
        if self.nonempty & 1 == 0 {
            let m = self.next_at()?;
            let b = self.nonempty.trailing_zeros() as usize;
            self.last = m;
            self.min = None;
            self.nonempty &= !(1 << b);
            let mut spread = std::mem::take(&mut self.buckets[b]);
            for &(at, ev) in &spread {
                let nb = bucket(m, at);
                self.buckets[nb].push((at, ev));
                self.nonempty |= 1 << nb;
            }
            spread.clear();
            self.buckets[b] = spread;
        }
        let zero = &mut self.buckets[0];
        let e = zero[self.head];
        self.head += 1;
        if self.head == zero.len() {
            zero.clear();
            self.head = 0;
            self.nonempty &= !1;
            self.min = None;
        }
        Some(e)
    }

    pub(super) fn pop(&mut self) -> Option<Due<T>> {
        let event_at = self.next_at();
        let fifo_at = self.timeouts.front().map(|(t, _, _)| *t);
        match (event_at, fifo_at) {
            (None, None) => None,
            (Some(h), Some(f)) if f < h => self.pop_timeout(),
            (None, Some(_)) => self.pop_timeout(),
            _ => {
                let (at, ev) = self.pop_event()?;
                Some(Due::Event(at, ev))
            }
        }
    }

    fn pop_timeout(&mut self) -> Option<Due<T>> {
        let (at, a, gen) = self.timeouts.pop_front()?;
        Some(Due::Timeout(at, a, gen))
    }
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
            let mut now = 0u64;
            let mut schedule =
                |q: &mut EventQueue<u32>, r: &mut Reference, now: u64, rng: &mut SplitMix| {
                    for _ in 0..rng.below(4) {
                        let delay = match rng.below(5) {
                            0 => 0,
                            1 => rng.below(4) as u64,
                            2 => rng.below(50_000) as u64,
                            3 => 1 << rng.below(40),
                            _ => 30_000 + rng.below(20) as u64,
                        };
                        id += 1;
                        q.push(now + delay, id);
                        r.seq += 1;
                        r.heap.push(Reverse((now + delay, r.seq, id)));
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
                now = match due {
                    Due::Event(t, _) | Due::Timeout(t, _, _) => t.max(now),
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
