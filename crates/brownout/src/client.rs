//! A small MCP client over stdio, used by `brownout demo` and the benchmarks: it starts a
//! command, sends JSON-RPC requests with timeouts and sorts out what came back, keeping
//! what a stricter SDK would hide (stray lines, duplicates, mismatched ids).

use crate::relay::framing::spawn_writer;
use crate::relay::framing::{Frame, LineReader, DEFAULT_MAX_MESSAGE};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::BufReader;
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot};

/// How one request ended, from the client's side.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Result(Value),
    Error {
        code: i64,
        message: String,
    },
    /// No answer within the timeout.
    Timeout,
    /// The connection closed before an answer.
    Closed,
}

#[derive(Default)]
struct Shared {
    pending: HashMap<u64, oneshot::Sender<Value>>,
    answered: std::collections::HashSet<u64>,
    stray: Vec<Vec<u8>>,
    duplicates: u64,
    notifications: Vec<Value>,
}

pub struct StdioClient {
    child: Child,
    tx: Option<mpsc::Sender<Vec<u8>>>,
    shared: Arc<Mutex<Shared>>,
    next_id: AtomicU64,
}

impl StdioClient {
    pub async fn spawn(
        program: &str,
        args: &[String],
        stderr: Stdio,
    ) -> anyhow::Result<StdioClient> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdin"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
        let (tx, rx) = mpsc::channel(1024);
        spawn_writer(stdin, rx, None);
        let shared = Arc::new(Mutex::new(Shared::default()));
        let s2 = Arc::clone(&shared);
        tokio::spawn(async move {
            let mut reader = LineReader::new(BufReader::new(stdout), DEFAULT_MAX_MESSAGE);
            while let Ok(Some(frame)) = reader.next().await {
                let Frame::Line(line) = frame else { continue };
                let mut s = s2.lock().unwrap_or_else(|p| p.into_inner());
                let Ok(v) = serde_json::from_slice::<Value>(&line) else {
                    s.stray.push(line);
                    continue;
                };
                let id = v.get("id").and_then(Value::as_u64);
                let is_answer = v.get("result").is_some() || v.get("error").is_some();
                match (id, is_answer) {
                    (Some(id), true) => match s.pending.remove(&id) {
                        Some(tx) => {
                            s.answered.insert(id);
                            let _ = tx.send(v);
                        }
                        None if s.answered.contains(&id) => s.duplicates += 1,
                        None => s.stray.push(line),
                    },
                    (None, false) if v.get("method").is_some() => s.notifications.push(v),
                    _ => s.stray.push(line),
                }
            }
            s2.lock().unwrap_or_else(|p| p.into_inner()).pending.clear();
        });
        Ok(StdioClient {
            child,
            tx: Some(tx),
            shared,
            next_id: AtomicU64::new(1),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub async fn request(&self, method: &str, params: Value, timeout: Duration) -> Reply {
        self.request_with_id(method, params, timeout).await.1
    }

    /// Like [`StdioClient::request`], also returning the JSON-RPC id it used.
    pub async fn request_with_id(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> (u64, Reply) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        (id, self.send_request(id, method, params, timeout).await)
    }

    async fn send_request(&self, id: u64, method: &str, params: Value, timeout: Duration) -> Reply {
        let (otx, orx) = oneshot::channel();
        self.lock().pending.insert(id, otx);
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let Some(tx) = &self.tx else {
            return Reply::Closed;
        };
        if tx
            .send(serde_json::to_vec(&msg).unwrap_or_default())
            .await
            .is_err()
        {
            return Reply::Closed;
        }
        match tokio::time::timeout(timeout, orx).await {
            Err(_) => {
                self.lock().pending.remove(&id);
                Reply::Timeout
            }
            Ok(Err(_)) => Reply::Closed,
            Ok(Ok(v)) => match v.get("error") {
                Some(e) => Reply::Error {
                    code: e.get("code").and_then(Value::as_i64).unwrap_or(0),
                    message: e
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                },
                None => Reply::Result(v.get("result").cloned().unwrap_or(Value::Null)),
            },
        }
    }

    pub async fn notify(&self, method: &str) {
        if let Some(tx) = &self.tx {
            let _ = tx
                .send(
                    serde_json::to_vec(&json!({"jsonrpc": "2.0", "method": method}))
                        .unwrap_or_default(),
                )
                .await;
        }
    }

    /// `initialize` + `notifications/initialized`.
    pub async fn initialize(&self, timeout: Duration) -> Reply {
        let r = self
            .request("initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "brownout-client", "version": env!("CARGO_PKG_VERSION")}}), timeout)
            .await;
        if matches!(r, Reply::Result(_)) {
            self.notify("notifications/initialized").await;
        }
        r
    }

    /// The process id of the command the client started.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Lines that were not an answer to anything we asked (malformed, mismatched ids).
    pub fn stray_count(&self) -> usize {
        self.lock().stray.len()
    }

    pub fn duplicate_count(&self) -> u64 {
        self.lock().duplicates
    }

    pub fn notification_count(&self) -> usize {
        self.lock().notifications.len()
    }

    /// Close stdin and wait for the process to exit.
    pub async fn close(mut self, wait: Duration) -> Option<std::process::ExitStatus> {
        self.tx = None;
        match tokio::time::timeout(wait, self.child.wait()).await {
            Ok(Ok(s)) => Some(s),
            _ => {
                let _ = self.child.kill().await;
                None
            }
        }
    }
}
