//! Slabs with free lists, so memory stays flat over millions of calls and attempts. A slot's
//! owner keeps a generation in it; events carry the generation they were scheduled for and
//! are dropped when the slot has moved on.

#[derive(Clone)]
pub(super) struct Slab<T> {
    pub(super) items: Vec<T>,
    pub(super) free: Vec<u32>,
}

impl<T> Slab<T> {
    pub(super) fn new() -> Self {
        Slab {
            items: Vec::new(),
            free: Vec::new(),
        }
    }

    /// A slot for a new item: a freed one, refreshed by `reuse`, or a new one from `make`.
    pub(super) fn insert(
        &mut self,
        make: impl FnOnce(u32) -> T,
        reuse: impl FnOnce(&mut T),
    ) -> u32 {
        match self.free.pop() {
            Some(i) => {
                reuse(&mut self.items[i as usize]);
                i
            }
            None => {
                let i = self.items.len() as u32;
                self.items.push(make(i));
                i
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_slots_are_reused_last_freed_first() {
        let mut s: Slab<(u32, u32)> = Slab::new();
        let a = s.insert(|i| (i, 0), |_| unreachable!("nothing freed"));
        let b = s.insert(|i| (i, 0), |_| unreachable!("nothing freed"));
        assert_eq!((a, b), (0, 1));
        s.free.push(a);
        s.free.push(b);
        let c = s.insert(|_| unreachable!("a slot is free"), |x| x.1 += 1);
        assert_eq!(c, b);
        assert_eq!(s.items[b as usize], (1, 1));
        let d = s.insert(|_| unreachable!("a slot is free"), |x| x.1 += 1);
        assert_eq!(d, a);
        assert_eq!(s.insert(|i| (i, 0), |_| unreachable!()), 2);
    }
}
