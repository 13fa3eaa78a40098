//! The work one simulation may do: events handled, memory held, wall time, and a flag a
//! caller sets to cancel it. A run that reaches a bound stops where it is; its report
//! covers the run so far and names the bound (`stopped_by`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Bounds on one simulation (none by default: the CLI simulates what it is given).
#[derive(Debug, Clone, Default)]
pub struct Budget {
    /// The most events handled.
    pub max_events: Option<u64>,
    /// The most memory the simulation's state may hold, in bytes (an estimate from its
    /// queues, tables and series).
    pub max_bytes: Option<usize>,
    /// Stop at this wall-clock instant.
    pub deadline: Option<Instant>,
    /// Stop when this turns true (the caller went away).
    pub cancel: Option<Arc<AtomicBool>>,
}

/// Bounds are checked every this many events (a clock read and a size sum are not free).
pub(super) const EVERY: u64 = 4096;

impl Budget {
    /// Which bound, if any, stops a run that has handled `events` holding `bytes`.
    pub(super) fn exceeded(&self, events: u64, bytes: impl FnOnce() -> usize) -> Option<String> {
        if self
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
        {
            return Some("cancelled: the caller went away or cancelled the request".into());
        }
        if let Some(max) = self.max_events {
            if events >= max {
                return Some(format!("events: {max} events handled"));
            }
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Some("time: the wall-clock limit was reached".into());
        }
        if let Some(max) = self.max_bytes {
            let held = bytes();
            if held > max {
                return Some(format!(
                    "memory: the simulation's state reached {} MiB (at most {} MiB)",
                    held >> 20,
                    max >> 20
                ));
            }
        }
        None
    }
}
