//! The exporter: a bounded queue in front of a background thread that batches spans and
//! POSTs them to the collector as OTLP/HTTP protobuf (`/v1/traces`).
//!
//! Why our own small exporter over `opentelemetry-otlp` + the SDK's batch processor: the
//! relay needs (1) a queue whose overflow is *counted* and shown (a metric, the status, a
//! line at exit) — the SDK's batch processor drops silently but for an internal log line;
//! (2) spans whose times and parents are known only after the fact (a call's span is built
//! from the engine's call event, its parent from the request's `_meta`), and whose fault
//! details come from the engine's fault events, matched off the hot path; (3) no second
//! async runtime or blocking HTTP client of its own. The wire types are the official ones
//! (`opentelemetry-proto`, encoded with prost); the HTTP client is the reqwest brownout
//! already uses.
//!
//! What the caller pays: a push onto a bounded buffer under an uncontended lock — no
//! channel wake-up per call. The exporter's thread collects the buffer every [`TICK`]
//! (sooner when it is half full, or for a flush or metrics), so a relayed call never makes
//! the relay wake another thread: a wake-up (a futex call and a context switch) cost more
//! than the whole rest of the span's path (BENCHMARKS.md, `--otlp`). Everything else —
//! matching events, building spans, encoding, HTTP — happens on the exporter's own thread,
//! so a slow or dead collector never slows the relay: when the buffer is full, or an export
//! fails, the spans are dropped and counted, never held without bound.

use super::calls::CallSpans;
use super::context::Parent;
use super::span::{self, Span, Value};
use brownout_core::event::Event;
use prost::Message;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Items queued for the exporter at most; beyond, new spans are dropped (and counted).
pub const QUEUE_ITEMS: usize = 4096;
/// How often the exporter collects what the relay queued (sooner when the buffer is half
/// full).
pub const TICK: Duration = Duration::from_millis(50);
/// Spans per export request at most.
pub const MAX_BATCH: usize = 512;
/// A batch smaller than [`MAX_BATCH`] leaves at least this often.
pub const FLUSH_EVERY: Duration = Duration::from_millis(500);
/// One export request's deadline (connect included).
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(3);
/// After a failed export, batches are dropped without trying for this long (a dead
/// collector is not hammered; the spans are counted as dropped).
pub const BACKOFF: Duration = Duration::from_secs(1);

pub(super) enum Item {
    Span(Box<Span>),
    /// A relay's engine events, with the relay's start in Unix nanoseconds.
    Events(u64, Vec<Event>),
    /// A request's trace context, to parent its call's span.
    Parent {
        session: String,
        key: String,
        parent: Parent,
        state: Option<String>,
    },
    /// A snapshot of metrics, sent on its own (`/v1/metrics`).
    Metrics(Box<super::metrics::Snapshot>),
    /// Export what is held, then answer (a plain channel: the caller may be outside any
    /// runtime).
    Flush(std::sync::mpsc::Sender<()>),
}

/// Counters shared by the queue's producers and the exporter thread.
#[derive(Debug, Default)]
pub struct Counters {
    pub exported: AtomicU64,
    /// Spans lost: the queue was full, or the collector did not take them.
    pub dropped: AtomicU64,
    /// Export requests that failed.
    pub failed_exports: AtomicU64,
    /// Metric snapshots the collector took, and those lost (queue full, export failed).
    pub metrics_exported: AtomicU64,
    pub metrics_dropped: AtomicU64,
    /// Spans built and waiting in the exporter's batch (not sent yet).
    pub pending: AtomicU64,
    /// Of `dropped`: spans still waiting when the command ended (a collector too slow).
    pub unsent_at_exit: AtomicU64,
    /// Why the last export failed.
    pub last_error: Mutex<Option<String>>,
}

/// What the producers and the exporter thread share: the buffer and how to wake the
/// exporter early.
pub(super) struct Shared {
    held: Mutex<Vec<Item>>,
    wake: Notify,
    /// Set when the last producer is gone: export what is left, then stop.
    closed: std::sync::atomic::AtomicBool,
    pub counters: Arc<Counters>,
}

/// The producer side of the queue; dropping the last one stops the exporter (after it has
/// exported what was queued).
pub(super) struct Queue {
    shared: Arc<Shared>,
}

impl Queue {
    /// Queue `item`, or count the `spans` it would have made as dropped. Never wakes the
    /// exporter for a span or events unless the buffer is half full.
    pub fn offer(&self, item: Item, spans: u64) {
        if let Err(item) = self.push(item) {
            match item {
                Item::Metrics(_) => self
                    .counters()
                    .metrics_dropped
                    .fetch_add(1, Ordering::Relaxed),
                _ => self.counters().dropped.fetch_add(spans, Ordering::Relaxed),
            };
        }
    }

    /// Queue `item` unless the buffer is full (then it is handed back). Flushes and metrics
    /// wake the exporter at once.
    pub fn push(&self, item: Item) -> Result<(), Item> {
        let urgent = matches!(item, Item::Flush(_) | Item::Metrics(_));
        let len = {
            let mut held = self.shared.held.lock().unwrap_or_else(|p| p.into_inner());
            if held.len() >= QUEUE_ITEMS {
                return Err(item);
            }
            held.push(item);
            held.len()
        };
        if urgent || len == QUEUE_ITEMS / 2 {
            self.shared.wake.notify_one();
        }
        Ok(())
    }

    pub fn counters(&self) -> &Arc<Counters> {
        &self.shared.counters
    }

    /// Spans still held (queued or batched) and not sent: an estimate for the end of a
    /// command (queued items are counted as the spans they hold at most).
    pub fn unsent(&self) -> u64 {
        let queued: u64 = self
            .shared
            .held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|i| match i {
                Item::Span(_) => 1,
                Item::Events(_, e) => {
                    e.iter().filter(|e| matches!(e, Event::Call(_))).count() as u64
                }
                _ => 0,
            })
            .sum();
        queued + self.shared.counters.pending.load(Ordering::Relaxed)
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
        self.shared.wake.notify_one();
    }
}

/// Start the exporter thread for `url` (the collector's `/v1/traces`; metrics go to its
/// sibling `/v1/metrics`).
pub(super) fn start(url: String, service: Vec<(String, Value)>) -> std::io::Result<Queue> {
    let counters = Arc::new(Counters::default());
    let shared = Arc::new(Shared {
        held: Mutex::new(Vec::new()),
        wake: Notify::new(),
        closed: std::sync::atomic::AtomicBool::new(false),
        counters: Arc::clone(&counters),
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let client = reqwest::Client::builder()
        .timeout(EXPORT_TIMEOUT)
        .connect_timeout(EXPORT_TIMEOUT)
        // A collector's redirect is not followed: the spans go where the user said or
        // nowhere (a redirect is a failed export, counted).
        .redirect(reqwest::redirect::Policy::none())
        // The collector is reached directly: an HTTP(S)_PROXY meant for the MCP traffic
        // does not see the telemetry.
        .no_proxy()
        .build()
        .map_err(std::io::Error::other)?;
    let metrics_url = match url.strip_suffix("/v1/traces") {
        Some(base) => format!("{base}/v1/metrics"),
        None => url.clone(),
    };
    let worker = Worker {
        url,
        metrics_url,
        service,
        client,
        counters,
        batch: Vec::new(),
        calls: CallSpans::default(),
        quiet_until: None,
    };
    let theirs = Arc::clone(&shared);
    std::thread::Builder::new()
        .name("brownout-otlp".into())
        .spawn(move || runtime.block_on(worker.run(theirs)))?;
    Ok(Queue { shared })
}

struct Worker {
    url: String,
    metrics_url: String,
    service: Vec<(String, Value)>,
    client: reqwest::Client,
    counters: Arc<Counters>,
    batch: Vec<Span>,
    calls: CallSpans,
    /// After a failure: batches are dropped unsent until then.
    quiet_until: Option<Instant>,
}

impl Worker {
    async fn run(mut self, shared: Arc<Shared>) {
        let mut last = Instant::now();
        let mut taken = Vec::new();
        loop {
            let closed = shared.closed.load(Ordering::Acquire);
            if !closed {
                // Woken early by a flush, metrics, a half-full buffer or the last producer.
                let _ = tokio::time::timeout(TICK, shared.wake.notified()).await;
            }
            std::mem::swap(
                &mut taken,
                &mut *shared.held.lock().unwrap_or_else(|p| p.into_inner()),
            );
            let mut done = Vec::new();
            for item in taken.drain(..) {
                match item {
                    Item::Metrics(m) => self.send_metrics(&m).await,
                    item => done.extend(self.take(item)),
                }
            }
            if !done.is_empty() || closed {
                self.export().await;
                last = Instant::now();
                for d in done {
                    let _ = d.send(());
                }
                if closed {
                    return;
                }
                continue;
            }
            if self.batch.len() >= MAX_BATCH || last.elapsed() >= FLUSH_EVERY {
                self.export().await;
                last = Instant::now();
            }
            self.counters
                .pending
                .store(self.batch.len() as u64, Ordering::Relaxed);
        }
    }

    /// Take one item in; a flush request is handed back to answer once exported.
    fn take(&mut self, item: Item) -> Option<std::sync::mpsc::Sender<()>> {
        match item {
            Item::Span(s) => self.batch.push(*s),
            // A dead collector: no span is built only to be dropped (the cost of a dead
            // collector is counting).
            Item::Events(_, events) if self.quiet() => {
                let n = self.calls.skip(&events);
                self.counters.dropped.fetch_add(n, Ordering::Relaxed);
            }
            Item::Events(epoch, events) => self.calls.on_events(epoch, events, &mut self.batch),
            Item::Parent {
                session,
                key,
                parent,
                state,
            } => self.calls.parent(session, key, parent, state),
            Item::Metrics(_) => {} // sent by `run`, never queued here
            Item::Flush(done) => return Some(done),
        }
        None
    }

    /// Whether an export failed less than [`BACKOFF`] ago.
    fn quiet(&self) -> bool {
        self.quiet_until.is_some_and(|t| Instant::now() < t)
    }

    async fn export(&mut self) {
        while !self.batch.is_empty() {
            let n = self.batch.len().min(MAX_BATCH);
            let spans: Vec<Span> = self.batch.drain(..n).collect();
            self.counters
                .pending
                .store(self.batch.len() as u64, Ordering::Relaxed);
            self.send(&spans).await;
        }
    }

    async fn send(&mut self, spans: &[Span]) {
        let n = spans.len() as u64;
        let ok = !self.quiet() && {
            let body = span::request(&self.service, spans).encode_to_vec();
            let url = self.url.clone();
            self.post(&url, body).await
        };
        let c = if ok {
            &self.counters.exported
        } else {
            &self.counters.dropped
        };
        c.fetch_add(n, Ordering::Relaxed);
    }

    async fn send_metrics(&mut self, m: &super::metrics::Snapshot) {
        let ok = !self.quiet() && {
            let body = super::metrics::request(&self.service, m).encode_to_vec();
            let url = self.metrics_url.clone();
            self.post(&url, body).await
        };
        let c = if ok {
            &self.counters.metrics_exported
        } else {
            &self.counters.metrics_dropped
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// POST one export; a failure is counted, remembered, and quiets the exporter for
    /// [`BACKOFF`].
    async fn post(&mut self, url: &str, body: Vec<u8>) -> bool {
        let sent = self
            .client
            .post(url)
            .header("content-type", "application/x-protobuf")
            .body(body)
            .send()
            .await;
        let failure = match sent {
            Ok(r) if r.status().is_success() => None,
            Ok(r) => Some(format!("the collector answered HTTP {}", r.status())),
            Err(e) => Some(describe(&e)),
        };
        let Some(failure) = failure else {
            self.quiet_until = None;
            return true;
        };
        self.quiet_until = Some(Instant::now() + BACKOFF);
        self.counters.failed_exports.fetch_add(1, Ordering::Relaxed);
        *self
            .counters
            .last_error
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(failure);
        false
    }
}

/// A reqwest error in a few words (its chain of causes: "connection refused").
fn describe(e: &reqwest::Error) -> String {
    let mut out = if e.is_timeout() {
        "timed out".to_string()
    } else if e.is_connect() {
        "cannot connect".to_string()
    } else {
        "request failed".to_string()
    };
    let mut source = std::error::Error::source(e);
    let mut last = None;
    while let Some(s) = source {
        last = Some(s.to_string());
        source = s.source();
    }
    if let Some(cause) = last {
        out.push_str(": ");
        out.push_str(&cause);
    }
    out
}
