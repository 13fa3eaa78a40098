//! Chained results in virtual time: what the agent's policy does with a result a later step
//! takes a value from, and what becomes of each result a fault changed, classified as the
//! relay's taint tracking classifies it live (`docs/silent.md`):
//!
//! - `trust`: an altered result is acted on: `propagated` when the step that takes from it
//!   starts (`unobserved` if the task ends first);
//! - `validate`: drift (`SimOutcome::Corrupt`) is `noticed` and read again once (a second
//!   drifted read fails the task, and is `unobserved`: the agent gave up without reading
//!   again); a wrong value that keeps the schema (`Wrong`) is acted on, as under `trust`;
//! - `verify`: every consumed result is read twice, a third time when the two disagree, and
//!   the value two reads agree on is taken (else the task fails). Two reads agree when both
//!   are clean or both altered the same way (a fault changes a value deterministically, so
//!   two corrupted reads can agree on the wrong value: both are then `propagated`); an
//!   altered read the agent set aside is `noticed`. The model assumes a fault's change
//!   reaches the value later steps take.
//!
//! A changed result no later step takes from is `unobserved` whatever the policy. Extra
//! reads are calls (counted in `calls`, TCAF and attempts), as live.

use super::{CallEnd, Sim};
use crate::chain::Policy;
use brownout_core::slo::TaintMark;

/// What one read of a result brought back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Read {
    #[default]
    Clean,
    /// Schema-valid and wrong (`corrupt`, a truncated `partial_result`).
    Wrong,
    /// Breaks the tool's `outputSchema` (`schema_drift`).
    Drift,
}

impl Sim<'_> {
    /// A read of `call` was answered: apply the policy.
    pub(super) fn read_done(&mut self, call: u32, read: Read) {
        let tool = self.calls.items[call as usize].tool;
        if read != Read::Clean {
            self.c.chain.altered += 1;
            self.taint(tool, TaintMark::Altered);
        }
        let c = &mut self.calls.items[call as usize];
        if !c.consumed || self.policy == Policy::Trust {
            return self.accept(call, read, 1);
        }
        let n = usize::from(c.reads.min(2));
        c.log[n] = read;
        c.reads = c.reads.saturating_add(1);
        let log = c.log;
        match self.policy {
            Policy::Trust => self.accept(call, read, 1),
            Policy::Validate => match read {
                Read::Drift if n == 0 => self.reread(call),
                Read::Drift => {
                    self.notice(tool, 1);
                    self.give_up(call, read)
                }
                _ => {
                    self.notice(tool, n);
                    self.accept(call, read, 1)
                }
            },
            // Two reads agree when both are clean, or both altered the same way: a fault
            // changes a value deterministically, so two corrupted reads can agree on the
            // wrong value (and both are then acted on).
            Policy::Verify => match n {
                0 => self.reread(call),
                1 if log[0] == log[1] => self.settle(call, &log[..2], read),
                1 => self.reread(call),
                _ if read == log[0] || read == log[1] => self.settle(call, &log[..3], read),
                _ => {
                    let earlier = log[..2].iter().filter(|r| **r != Read::Clean).count();
                    self.notice(tool, earlier);
                    self.give_up(call, read)
                }
            },
        }
    }

    /// Verify settled on `read`'s value: the reads that carried it are acted on, the other
    /// altered ones were noticed.
    fn settle(&mut self, call: u32, log: &[Read], read: Read) {
        let tool = self.calls.items[call as usize].tool;
        let other = log
            .iter()
            .filter(|r| **r != Read::Clean && **r != read)
            .count();
        self.notice(tool, other);
        let same = if read == Read::Clean {
            1
        } else {
            log.iter().filter(|r| **r == read).count()
        };
        self.accept(call, read, same);
    }

    fn notice(&mut self, tool: usize, n: usize) {
        for _ in 0..n {
            self.c.chain.noticed += 1;
            self.taint(tool, TaintMark::Noticed);
        }
    }

    /// The agent takes this read's value; `carriers` altered reads carried it.
    fn accept(&mut self, call: u32, read: Read, carriers: usize) {
        let (task, tool, consumed) = {
            let c = &self.calls.items[call as usize];
            (c.task, c.tool, c.consumed)
        };
        if consumed {
            if let Some(t) = self.tasks[task as usize].as_mut() {
                if !t.got.contains(&tool) {
                    t.got.push(tool);
                }
                if read != Read::Clean {
                    t.pending.extend(std::iter::repeat_n(tool, carriers));
                }
            }
        } else if read != Read::Clean {
            self.c.chain.unobserved += 1;
        }
        let end = match read {
            Read::Clean => CallEnd::Ok,
            _ => CallEnd::Corrupt,
        };
        self.end_call::<true>(call, end);
    }

    /// Read again with the same arguments: the read just answered ends as a call of its own.
    fn reread(&mut self, call: u32) {
        let last = {
            let c = &self.calls.items[call as usize];
            c.log[usize::from(c.reads.saturating_sub(1).min(2))]
        };
        self.record_end(
            call,
            if last == Read::Clean {
                CallEnd::Ok
            } else {
                CallEnd::Corrupt
            },
        );
        self.c.chain.rereads += 1;
        let now = self.now;
        let c = &mut self.calls.items[call as usize];
        c.attempts = 0;
        c.started = now;
        c.timed_out = false;
        self.c.calls += 1;
        self.c.second(now).offered += 1;
        self.try_attempt::<true>(call);
    }

    /// The policy found no value to act on: the call fails (and its task with it). The last
    /// read, altered or not, is not read again: the relay sees it unobserved.
    fn give_up(&mut self, call: u32, read: Read) {
        if read != Read::Clean {
            self.c.chain.unobserved += 1;
        }
        self.end_call::<true>(call, CallEnd::Fail);
    }

    /// A step starts: the altered values it takes are propagated; a value it takes that no
    /// earlier call delivered fails the task (true: the task was ended).
    pub(super) fn take_values(&mut self, t: u32) -> bool {
        let Some(task) = self.tasks[t as usize].as_mut() else {
            return false;
        };
        let Some(takes) = self.chain.takes.get(task.step) else {
            return false;
        };
        let mut missing = false;
        let mut propagated = Vec::new();
        for name in takes {
            let Some(tool) = self.names.iter().position(|n| n == name) else {
                continue;
            };
            if !task.got.contains(&tool) {
                missing = true;
            }
            while let Some(i) = task.pending.iter().position(|p| *p == tool) {
                task.pending.swap_remove(i);
                propagated.push(tool);
            }
        }
        for tool in propagated {
            self.c.chain.propagated += 1;
            self.taint(tool, TaintMark::Propagated);
        }
        if missing {
            self.c.chain.missing_values += 1;
            if let Some(task) = self.tasks[t as usize].as_mut() {
                task.failed = true;
            }
            self.end_task::<true>(t);
        }
        missing
    }

    /// A task ended: altered values no step took are unobserved.
    pub(super) fn untaken(&mut self, pending: usize) {
        self.c.chain.unobserved += pending as u64;
    }

    fn taint(&mut self, tool: usize, mark: TaintMark) {
        if self.gates.is_some() {
            self.gates_taint(tool, mark);
        }
    }
}
