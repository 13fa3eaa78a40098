//! The client's MCP handshake, kept so a restarted stdio server can be brought to the state
//! the client believes it is in: the `initialize` request is replayed under a fresh id (its
//! answer swallowed) and followed by `notifications/initialized`.

use brownout_core::jsonrpc::{self, classify, Kind, Message};
use std::sync::Mutex;
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;

/// The `initialize` request and, once sent, the `initialized` notification.
type Lines = (Vec<u8>, Option<Vec<u8>>);

/// The client's `initialize` request and, once sent, its `initialized` notification.
#[derive(Debug, Default)]
pub struct Handshake {
    slot: Mutex<Option<Lines>>,
}

impl Handshake {
    /// Keep the client's `initialize` request and `initialized` notification.
    pub fn remember(&self, bytes: &[u8]) {
        let Message::Single(v) = classify(bytes) else {
            return;
        };
        let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        match (v.kind, v.method.as_deref()) {
            (Kind::Request, Some("initialize")) => *slot = Some((bytes.to_vec(), None)),
            (Kind::Notification, Some("notifications/initialized")) => {
                if let Some((_, n)) = slot.as_mut() {
                    *n = Some(bytes.to_vec());
                }
            }
            _ => {}
        }
    }

    /// Replay the handshake to restarted server number `n` under a fresh id. Returns the id
    /// whose answer the client must not see.
    pub async fn replay(&self, n: u32, stdin: &mut ChildStdin) -> Option<jsonrpc::Id> {
        let (req, note) = self
            .slot
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()?;
        let mut v: serde_json::Value = serde_json::from_slice(&req).ok()?;
        let id = format!("brownout-restart-{n}");
        v["id"] = serde_json::Value::String(id.clone());
        let mut line = serde_json::to_vec(&v).ok()?;
        line.push(b'\n');
        if let Some(mut n) = note {
            n.push(b'\n');
            line.extend_from_slice(&n);
        }
        stdin.write_all(&line).await.ok()?;
        stdin.flush().await.ok()?;
        Some(jsonrpc::Id::Str(id))
    }
}

/// Whether `bytes` answer the request `id`.
pub fn is_response_to(bytes: &[u8], id: &jsonrpc::Id) -> bool {
    matches!(classify(bytes), Message::Single(v) if matches!(v.kind, Kind::Response | Kind::Error) && v.id.as_ref() == Some(id))
}
