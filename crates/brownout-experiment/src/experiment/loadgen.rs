//! The experiment's load: [`crate::load`] playing the workload over streamable HTTP
//! against the target until the runner stops it; each ended call and task is passed on to
//! the runner as it happens.

use crate::load::{self, LoadEvent, LoadOptions, LoadTarget};
use brownout_core::slo::{CallObservation, TaskObservation};
use brownout_sim::Workload;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What the load reports.
#[derive(Debug, Clone)]
pub enum Event {
    Call(CallObservation),
    Task(TaskObservation),
    /// The load could not run (its sessions could not be set up).
    Trouble(String),
    /// The relay counted `n` results of `tool` changed, acted on or noticed (docs/silent.md).
    Taint {
        tool: String,
        mark: brownout_core::slo::TaintMark,
        n: u64,
    },
    /// A reading of the target's own health (`target_rss` bytes, `target_cpu` share).
    Reading {
        sli: brownout_core::slo::Sli,
        value: f64,
    },
}

/// A running load.
pub struct LoadRun {
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

/// Longer than any experiment may last: the runner stops the load itself.
const FOREVER: Duration = Duration::from_secs(7 * 24 * 3600);

impl LoadRun {
    /// Start `sessions` MCP sessions (agents) playing `workload` at `target`.
    pub fn start(
        workload: &Workload,
        target: LoadTarget,
        sessions: u32,
        trace: Option<crate::load::trace::CallTracer>,
        tx: mpsc::UnboundedSender<Event>,
    ) -> LoadRun {
        let cancel = CancellationToken::new();
        let opts = LoadOptions {
            sessions: sessions.max(1) as usize,
            duration: Some(FOREVER),
            seed: None,
            cancel: cancel.clone(),
            trace,
        };
        let workload = workload.clone();
        let task = tokio::spawn(async move {
            let (ltx, mut lrx) = mpsc::unbounded_channel();
            let forward = {
                let tx = tx.clone();
                tokio::spawn(async move {
                    while let Some(e) = lrx.recv().await {
                        let e = match e {
                            LoadEvent::Call(c) => Event::Call(c),
                            LoadEvent::Task(t) => Event::Task(t),
                        };
                        if tx.send(e).is_err() {
                            break;
                        }
                    }
                })
            };
            if let Err(e) = load::run(&workload, target, opts, ltx).await {
                let _ = tx.send(Event::Trouble(format!("the load could not run: {e}")));
            }
            let _ = forward.await;
        });
        LoadRun { cancel, task }
    }

    /// Stop the load: no new call starts; calls in flight get a short grace.
    pub async fn stop(self) {
        self.cancel.cancel();
        let _ = tokio::time::timeout(load::STOP_GRACE + Duration::from_secs(3), self.task).await;
    }
}
