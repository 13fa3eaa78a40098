//! Work spread over threads: a shared queue of jobs (not fixed chunks, so a thread that drew
//! quick jobs takes more), each answer put back in its job's place. What a job computes
//! depends only on the job, never on which thread ran it or when: the searches built on this
//! give the same result on one thread or many.

use std::sync::atomic::{AtomicUsize, Ordering};

/// `f` over `jobs` on `threads` threads (at least one), answers in the jobs' order. A job
/// whose `f` answers `None` (it gave up: a deadline) is `None` in its place.
pub fn map<J: Sync, R: Send>(
    jobs: &[J],
    threads: usize,
    f: &(dyn Fn(&J) -> Option<R> + Sync),
) -> Vec<Option<R>> {
    let threads = threads.clamp(1, jobs.len().max(1));
    let mut out: Vec<Option<R>> = (0..jobs.len()).map(|_| None).collect();
    if threads == 1 {
        for (slot, j) in out.iter_mut().zip(jobs) {
            *slot = f(j);
        }
        return out;
    }
    let next = AtomicUsize::new(0);
    let done: Vec<(usize, R)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let next = &next;
                s.spawn(move || {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(j) = jobs.get(i) else { break };
                        if let Some(r) = f(j) {
                            mine.push((i, r));
                        }
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    for (i, r) in done {
        out[i] = Some(r);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn answers_come_back_in_the_jobs_order_whatever_the_threads() {
        let jobs: Vec<u64> = (0..50).collect();
        let f = |j: &u64| (j % 7 != 3).then_some(j * j);
        let one = super::map(&jobs, 1, &f);
        let four = super::map(&jobs, 4, &f);
        assert_eq!(one, four);
        assert_eq!(one[3], None);
        assert_eq!(one[9], Some(81));
    }
}
