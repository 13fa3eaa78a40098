//! The work one tool call may cost the server, and its cancellation: a simulation's events,
//! memory and wall time ([`sim_budget`]), and a flag that turns true when the request is
//! cancelled (`notifications/cancelled`), its session ends, or the call is dropped
//! ([`Cancel`]) — so computing on a blocking thread stops with the request.

use brownout_sim::sim::budget::Budget;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The most events one simulation through MCP handles.
pub const SIM_MAX_EVENTS: u64 = 50_000_000;
/// The most memory one simulation through MCP holds (estimated from its state).
pub const SIM_MAX_BYTES: usize = 512 * 1024 * 1024;
/// The longest one simulation through MCP runs (wall time), unless `--max-sim-time`.
pub const SIM_MAX_TIME: Duration = Duration::from_secs(30);

static SIM_TIME: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();

/// The operator's `--max-sim-time` (set once, at start).
pub fn set_sim_time(d: Duration) {
    let _ = SIM_TIME.set(d.max(Duration::from_millis(100)));
}

/// A simulation's bounds through MCP, stopped early when `cancel` turns true.
pub fn sim_budget(cancel: &Arc<AtomicBool>) -> Budget {
    Budget {
        max_events: Some(SIM_MAX_EVENTS),
        max_bytes: Some(SIM_MAX_BYTES),
        deadline: Some(Instant::now() + *SIM_TIME.get().unwrap_or(&SIM_MAX_TIME)),
        cancel: Some(Arc::clone(cancel)),
    }
}

/// Holds a call's cancel flag: set when the request's token is cancelled, and when this is
/// dropped (the call answered, or its future dropped with the client gone).
pub struct Cancel {
    pub flag: Arc<AtomicBool>,
    watcher: tokio::task::JoinHandle<()>,
}

impl Cancel {
    pub fn new(ct: &tokio_util::sync::CancellationToken) -> Cancel {
        let flag = Arc::new(AtomicBool::new(false));
        let (f, ct) = (Arc::clone(&flag), ct.clone());
        let watcher = tokio::spawn(async move {
            ct.cancelled().await;
            f.store(true, Ordering::Relaxed);
        });
        Cancel { flag, watcher }
    }
}

impl Drop for Cancel {
    fn drop(&mut self) {
        self.flag.store(true, Ordering::Relaxed);
        self.watcher.abort();
    }
}
