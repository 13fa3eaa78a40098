//! The event queue of virtual time: a heap ordered by (time, insertion), and beside it a FIFO
//! for client timeouts.
//!
//! Client timeouts all have the same length, so they come due in the order they were set: a
//! FIFO beside the heap keeps the heap small (most timeouts never fire). Events at one instant
//! run in the order they were scheduled; a timeout runs before a heap event only when it is
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

pub(super) struct EventQueue<T> {
    seq: u64,
    heap: BinaryHeap<Reverse<(u64, u64, usize)>>,
    /// Event payloads by slot, reused through `free`, so the heap holds small keys.
    events: Vec<T>,
    free: Vec<usize>,
    timeouts: VecDeque<(u64, u32, u32)>,
}

impl<T: Copy> EventQueue<T> {
    pub(super) fn new() -> Self {
        EventQueue {
            seq: 0,
            heap: BinaryHeap::new(),
            events: Vec::new(),
            free: Vec::new(),
            timeouts: VecDeque::new(),
        }
    }

    pub(super) fn push(&mut self, at: u64, ev: T) {
        let slot = match self.free.pop() {
            Some(i) => {
                self.events[i] = ev;
                i
            }
            None => {
                self.events.push(ev);
                self.events.len() - 1
            }
        };
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, slot)));
    }

    /// The bytes its tables hold (for a simulation's memory bound).
    pub(super) fn footprint(&self) -> usize {
        use std::mem::size_of;
        self.heap.capacity() * size_of::<Reverse<(u64, u64, usize)>>()
            + self.events.capacity() * size_of::<T>()
            + self.free.capacity() * size_of::<usize>()
            + self.timeouts.capacity() * size_of::<(u64, u32, u32)>()
    }

    /// A client timeout; timeouts must be pushed in the order they come due.
    pub(super) fn push_timeout(&mut self, at: u64, attempt: u32, gen: u32) {
        self.timeouts.push_back((at, attempt, gen));
    }

    pub(super) fn pop(&mut self) -> Option<Due<T>> {
        let heap_at = self.heap.peek().map(|Reverse((t, _, _))| *t);
        let fifo_at = self.timeouts.front().map(|(t, _, _)| *t);
        match (heap_at, fifo_at) {
            (None, None) => None,
            (Some(h), Some(f)) if f < h => self.pop_timeout(),
            (None, Some(_)) => self.pop_timeout(),
            _ => {
                let Reverse((at, _, slot)) = self.heap.pop()?;
                let ev = self.events[slot];
                self.free.push(slot);
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

    #[test]
    fn slots_are_reused_without_mixing_payloads() {
        let mut q = EventQueue::new();
        for round in 0..3u64 {
            q.push(round * 10 + 1, 'p');
            q.push(round * 10 + 2, 'q');
            assert_eq!(q.pop(), Some(Due::Event(round * 10 + 1, 'p')));
            q.push(round * 10 + 3, 'r');
            assert_eq!(q.pop(), Some(Due::Event(round * 10 + 2, 'q')));
            assert_eq!(q.pop(), Some(Due::Event(round * 10 + 3, 'r')));
        }
        assert!(q.events.len() <= 2, "{}", q.events.len());
    }
}
