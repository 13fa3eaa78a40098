//! A load session over stdio: one process, its stdin and stdout, many requests in flight.
//!
//! Hand-written rather than on an SDK client (rmcp's): the hot path is one formatted line
//! out, one partial parse in, and a oneshot hand-off per call, which is what lets a single
//! generator drive tens of thousands of calls a second through the relay on two cores. An
//! SDK client adds typed (de)serialisation of every message and its own task per request.

use super::wire::{self, Answer, Incoming};
use brownout_relay::relay::framing::{spawn_writer, Frame, LineReader, DEFAULT_MAX_MESSAGE};
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot};

/// The last bytes of a server's stderr kept for error messages.
const STDERR_TAIL: usize = 2048;

/// Who waits for an answer: a call (classified, checked against its tool's output schema,
/// its result's value kept when asked) or a request that wants the whole message
/// (`tools/list`).
enum Waiter {
    Call(
        oneshot::Sender<(Answer, Option<serde_json::Value>)>,
        Option<Arc<jsonschema::Validator>>,
        bool,
    ),
    Raw(oneshot::Sender<Vec<u8>>),
}

type Pending = Arc<Mutex<HashMap<u64, Waiter>>>;

pub struct StdioSession {
    child: Mutex<Option<Child>>,
    tx: mpsc::Sender<Vec<u8>>,
    pending: Pending,
    next_id: AtomicU64,
    closed: Arc<AtomicBool>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl StdioSession {
    /// Start `command` (program and arguments).
    pub fn spawn(command: &[String]) -> std::io::Result<StdioSession> {
        let (program, args) = command
            .split_first()
            .ok_or_else(|| std::io::Error::other("empty command"))?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let (Some(stdin), Some(stdout), Some(mut err)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(std::io::Error::other("the child's pipes are missing"));
        };
        let (tx, rx) = mpsc::channel(4096);
        spawn_writer(stdin, rx, None);
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let tail = Arc::clone(&stderr);
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                let mut t = lock(&tail);
                t.extend_from_slice(&buf[..n]);
                let excess = t.len().saturating_sub(STDERR_TAIL);
                t.drain(..excess);
            }
        });
        let pending: Pending = Arc::new(Mutex::new(HashMap::new()));
        let closed = Arc::new(AtomicBool::new(false));
        let (p2, c2, tx2) = (Arc::clone(&pending), Arc::clone(&closed), tx.clone());
        tokio::spawn(async move {
            let mut reader = LineReader::new(BufReader::new(stdout), DEFAULT_MAX_MESSAGE);
            while let Ok(Some(frame)) = reader.next().await {
                let Frame::Line(line) = frame else { continue };
                match wire::read(&line) {
                    Incoming::Answer {
                        id,
                        answer,
                        structured,
                    } => match lock(&p2).remove(&id) {
                        Some(Waiter::Call(tx, schema, keep)) => {
                            let answer = wire::checked(answer, structured, schema.as_deref());
                            let value = (keep && matches!(answer, Answer::Ok | Answer::Wrong))
                                .then(|| wire::kept(&line))
                                .flatten();
                            let _ = tx.send((answer, value));
                        }
                        Some(Waiter::Raw(tx)) => {
                            let _ = tx.send(line);
                        }
                        None => {}
                    },
                    Incoming::Request { id } => {
                        let _ = tx2.send(wire::refuse(id).into_bytes()).await;
                    }
                    Incoming::Other => {}
                }
            }
            c2.store(true, Ordering::SeqCst);
            // Waiters see their sender dropped: `Closed`.
            lock(&p2).clear();
        });
        Ok(StdioSession {
            child: Mutex::new(Some(child)),
            tx,
            pending,
            next_id: AtomicU64::new(1),
            closed,
            stderr,
        })
    }

    /// Send a request and wait for its answer, at most `timeout`; an `ok` answer is
    /// checked against `schema`, and its result's value returned when `keep`.
    pub async fn request(
        &self,
        method: &str,
        params: &str,
        timeout: Duration,
        schema: Option<Arc<jsonschema::Validator>>,
        keep: bool,
    ) -> (Answer, Option<serde_json::Value>) {
        if self.closed.load(Ordering::Relaxed) {
            return (Answer::Closed, None);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (otx, orx) = oneshot::channel();
        lock(&self.pending).insert(id, Waiter::Call(otx, schema, keep));
        if self
            .tx
            .send(wire::request(id, method, params).into_bytes())
            .await
            .is_err()
        {
            lock(&self.pending).remove(&id);
            return (Answer::Closed, None);
        }
        match tokio::time::timeout(timeout, orx).await {
            Ok(Ok(got)) => got,
            Ok(Err(_)) => (Answer::Closed, None),
            Err(_) => {
                lock(&self.pending).remove(&id);
                let _ = self.tx.try_send(wire::cancelled(id).into_bytes());
                (Answer::Timeout, None)
            }
        }
    }

    /// Send a request and return the whole answer message (None: no answer in time).
    pub async fn request_raw(
        &self,
        method: &str,
        params: &str,
        timeout: Duration,
    ) -> Option<Vec<u8>> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (otx, orx) = oneshot::channel();
        lock(&self.pending).insert(id, Waiter::Raw(otx));
        let sent = self
            .tx
            .send(wire::request(id, method, params).into_bytes())
            .await;
        let got = match sent {
            Ok(()) => tokio::time::timeout(timeout, orx)
                .await
                .ok()
                .and_then(Result::ok),
            Err(_) => None,
        };
        lock(&self.pending).remove(&id);
        got
    }

    pub async fn notify(&self, method: &str) {
        let _ = self
            .tx
            .send(wire::notification(method, None).into_bytes())
            .await;
    }

    /// Has the process closed its stdout (exited)?
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// What the server last wrote on stderr (for error messages).
    pub fn stderr_tail(&self) -> String {
        String::from_utf8_lossy(&lock(&self.stderr))
            .trim()
            .to_string()
    }

    /// Stop the process: SIGKILL after `wait` if closing its stdin did not end it. The
    /// writer still holds stdin while the session lives; dropping the session closes it.
    pub async fn close(&self, wait: Duration) {
        let child = lock(&self.child).take();
        if let Some(mut child) = child {
            #[cfg(unix)]
            if let Some(pid) = child.id() {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGTERM,
                );
            }
            if tokio::time::timeout(wait, child.wait()).await.is_err() {
                let _ = child.kill().await;
            }
        }
    }
}
