//! Progress notifications for long tools (`find_boundary`, `design_experiments`), sent only
//! when the client asked for them with a progress token. Work on a blocking thread reports
//! through a channel; a task forwards each report as `notifications/progress`.

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RequestContext};
use rmcp::RoleServer;
use tokio::sync::mpsc;

/// Where a tool reports its progress (a no-op without a progress token).
#[derive(Clone)]
pub struct Progress {
    tx: Option<mpsc::UnboundedSender<(f64, Option<f64>, String)>>,
}

impl Progress {
    /// A reporter for this request: forwards to the client if it sent a progress token.
    pub fn for_request(context: &RequestContext<RoleServer>) -> Progress {
        let Some(token) = context.meta.get_progress_token() else {
            return Progress { tx: None };
        };
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(forward(context.peer.clone(), token, rx));
        Progress { tx: Some(tx) }
    }

    /// No reporting (a tool called without a request, in tests).
    pub fn none() -> Progress {
        Progress { tx: None }
    }

    /// Report `done` out of `total` (when known), with a message.
    pub fn report(&self, done: f64, total: Option<f64>, message: impl Into<String>) {
        if let Some(tx) = &self.tx {
            let _ = tx.send((done, total, message.into()));
        }
    }
}

async fn forward(
    peer: Peer<RoleServer>,
    token: ProgressToken,
    mut rx: mpsc::UnboundedReceiver<(f64, Option<f64>, String)>,
) {
    let mut last = f64::NEG_INFINITY;
    while let Some((done, total, message)) = rx.recv().await {
        // Progress must increase: a report that does not is folded into the next one.
        if done <= last {
            continue;
        }
        last = done;
        let mut p = ProgressNotificationParam::new(token.clone(), done);
        if let Some(t) = total {
            p = p.with_total(t);
        }
        p.message = Some(message);
        if peer.notify_progress(p).await.is_err() {
            return;
        }
    }
}
