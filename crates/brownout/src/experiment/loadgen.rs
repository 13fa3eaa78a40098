//! The experiment's load: the workload's tasks played by many MCP sessions against the
//! target's URL until the runner stops it. Each completed call and task is sent to the
//! runner as it happens.

use super::mcp_http::Session;
use brownout_sim::Workload;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// What the load reports.
#[derive(Debug, Clone)]
pub enum Event {
    Call {
        tool: String,
        ok: bool,
        latency_ms: f64,
    },
    Task {
        ok: bool,
    },
    /// A session could not start or broke (brownout's own problem or the target's).
    Trouble(String),
}

/// A running load.
pub struct LoadRun {
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl LoadRun {
    /// Start `sessions` sessions playing `workload` at `url`.
    pub fn start(
        workload: &Workload,
        url: &str,
        sessions: u32,
        tx: mpsc::UnboundedSender<Event>,
    ) -> LoadRun {
        let stop = Arc::new(AtomicBool::new(false));
        let w = Arc::new(workload.clone());
        let tasks = (0..sessions)
            .map(|_| {
                let (w, url, tx, stop) = (
                    Arc::clone(&w),
                    url.to_string(),
                    tx.clone(),
                    Arc::clone(&stop),
                );
                tokio::spawn(async move { session(w, url, tx, stop).await })
            })
            .collect();
        LoadRun { stop, tasks }
    }

    /// Stop every session (calls in flight are abandoned after a short grace).
    pub async fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.tasks {
            if tokio::time::timeout(Duration::from_secs(2), &mut Box::pin(t))
                .await
                .is_err()
            {
                // Abandoned: its session ends with the relay.
            }
        }
    }
}

async fn session(
    w: Arc<Workload>,
    url: String,
    tx: mpsc::UnboundedSender<Event>,
    stop: Arc<AtomicBool>,
) {
    let timeout = Duration::from_secs_f64(w.client.timeout_ms.unwrap_or(10_000.0) / 1000.0);
    let mut s = match Session::open(&url, timeout).await {
        Ok(s) => s,
        Err(e) => {
            let _ = tx.send(Event::Trouble(e));
            return;
        }
    };
    let think = Duration::from_secs_f64(w.think_ms.unwrap_or(0.0).max(0.0) / 1000.0);
    let empty = Value::Object(Default::default());
    while !stop.load(Ordering::SeqCst) {
        let mut task_ok = true;
        for step in &w.steps {
            for call in &step.calls {
                for _ in 0..call.repeat.unwrap_or(1) {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let started = Instant::now();
                    let ok = match s.call_tool(&call.tool, &empty).await {
                        Ok(a) => a.ok,
                        Err(_) => false,
                    };
                    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
                    task_ok &= ok || call.critical == Some(false);
                    let _ = tx.send(Event::Call {
                        tool: call.tool.clone(),
                        ok,
                        latency_ms,
                    });
                }
            }
            if !think.is_zero() {
                tokio::time::sleep(think).await;
            }
        }
        let _ = tx.send(Event::Task { ok: task_ok });
        tokio::task::yield_now().await;
    }
    s.close().await;
}
