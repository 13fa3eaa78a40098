//! Request/response correlation: a bounded, expiring table of pending requests.
//!
//! The engine records each request it lets through (id → what the call was and when it was
//! sent) so that a response is known to answer, say, `tools/call` of tool X, and its latency
//! is known. The table is bounded (oldest entries are evicted first) and entries older than a
//! time-to-live expire, so a peer that never answers cannot grow memory without limit.

use crate::jsonrpc::Id;
use crate::time::Time;
use std::collections::{HashMap, VecDeque};

/// Default bound on pending requests per session.
pub const DEFAULT_CAPACITY: usize = 10_000;
/// Default time-to-live of a pending request: ten minutes.
pub const DEFAULT_TTL: Time = Time(600_000_000);

/// An entry that left the table without an answer.
#[derive(Debug)]
pub struct Unanswered<T> {
    pub id: Id,
    pub sent_at: Time,
    pub entry: T,
    pub reason: &'static str,
}

/// A bounded, expiring map from request id to `T`, in insertion order.
#[derive(Debug)]
pub struct Pending<T> {
    map: HashMap<Id, (Time, u64, T)>,
    order: VecDeque<(Id, u64)>,
    next_gen: u64,
    capacity: usize,
    ttl: Time,
}

impl<T> Pending<T> {
    pub fn new(capacity: usize, ttl: Time) -> Pending<T> {
        Pending {
            map: HashMap::new(),
            order: VecDeque::new(),
            next_gen: 0,
            capacity: capacity.max(1),
            ttl,
        }
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Record a request. Returns what had to leave to make room (a replaced entry with the
    /// same id, or the oldest one when the table is full).
    pub fn insert(&mut self, id: Id, sent_at: Time, entry: T) -> Vec<Unanswered<T>> {
        let mut out = Vec::new();
        let gen = self.next_gen;
        self.next_gen += 1;
        if let Some((t, _, old)) = self.map.insert(id.clone(), (sent_at, gen, entry)) {
            out.push(Unanswered {
                id: id.clone(),
                sent_at: t,
                entry: old,
                reason: "id reused",
            });
        }
        self.order.push_back((id, gen));
        while self.map.len() > self.capacity {
            match self.pop_oldest() {
                Some(u) => out.push(Unanswered {
                    reason: "evicted",
                    ..u
                }),
                None => break,
            }
        }
        self.compact();
        out
    }

    /// Take the entry a response answers.
    pub fn take(&mut self, id: &Id) -> Option<(Time, T)> {
        let (t, _, e) = self.map.remove(id)?;
        self.compact();
        Some((t, e))
    }

    pub fn get(&self, id: &Id) -> Option<&T> {
        self.map.get(id).map(|(_, _, e)| e)
    }

    /// The entry for `id` and when its request was sent.
    pub fn get_sent(&self, id: &Id) -> Option<(Time, &T)> {
        self.map.get(id).map(|(t, _, e)| (*t, e))
    }

    /// Remove and return entries older than the time-to-live.
    pub fn expire(&mut self, now: Time) -> Vec<Unanswered<T>> {
        let mut out = Vec::new();
        while let Some((id, gen)) = self.order.front() {
            match self.map.get(id) {
                Some((t, g, _)) if g == gen => {
                    if now.saturating_sub(*t) < self.ttl {
                        break;
                    }
                    if let Some(u) = self.pop_oldest() {
                        out.push(Unanswered {
                            reason: "expired",
                            ..u
                        });
                    }
                }
                _ => {
                    self.order.pop_front();
                }
            }
        }
        out
    }

    /// Remove everything (the peer went away), oldest first.
    pub fn drain(&mut self) -> Vec<Unanswered<T>> {
        let mut out = Vec::new();
        while let Some(u) = self.pop_oldest() {
            out.push(u);
        }
        self.order.clear();
        out
    }

    fn pop_oldest(&mut self) -> Option<Unanswered<T>> {
        while let Some((id, gen)) = self.order.pop_front() {
            if matches!(self.map.get(&id), Some((_, g, _)) if *g == gen) {
                let (sent_at, _, entry) = self.map.remove(&id)?;
                return Some(Unanswered {
                    id,
                    sent_at,
                    entry,
                    reason: "closed",
                });
            }
        }
        None
    }

    /// Drop stale order entries so the queue stays proportional to the map.
    fn compact(&mut self) {
        if self.order.len() > 2 * self.map.len() + 64 {
            let map = &self.map;
            self.order
                .retain(|(id, gen)| matches!(map.get(id), Some((_, g, _)) if g == gen));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u32) -> Id {
        Id::Num(n.to_string())
    }

    #[test]
    fn answers_find_their_request() {
        let mut p = Pending::new(10, Time(1000));
        p.insert(id(1), Time(5), "tools/call echo");
        assert_eq!(p.take(&id(1)), Some((Time(5), "tools/call echo")));
        assert_eq!(p.take(&id(1)), None);
    }

    #[test]
    fn bounded_evicts_oldest() {
        let mut p = Pending::new(3, Time(1000));
        for i in 0..3 {
            assert!(p.insert(id(i), Time(0), i).is_empty());
        }
        let out = p.insert(id(3), Time(0), 3);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].id, id(0));
        assert_eq!(p.len(), 3);
        for _ in 0..10_000 {
            p.insert(id(9), Time(0), 9);
            p.take(&id(9));
        }
        assert!(
            p.order.len() < 200,
            "order queue stays compact: {}",
            p.order.len()
        );
    }

    #[test]
    fn entries_expire() {
        let mut p = Pending::new(10, Time(100));
        p.insert(id(1), Time(0), ());
        p.insert(id(2), Time(50), ());
        let gone = p.expire(Time(120));
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].id, id(1));
        assert_eq!(p.len(), 1);
        assert_eq!(p.drain().len(), 1);
        assert!(p.is_empty());
    }
}
