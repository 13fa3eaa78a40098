//! OpenTelemetry export (`--otlp URL`, `BROWNOUT_OTLP`): spans over OTLP/HTTP protobuf.
//!
//! - [`calls`]: a span per relayed call, from the engine's events, continuing the client's
//!   W3C trace context (`params._meta.traceparent`);
//! - [`context`]: reading `traceparent`, making ids;
//! - [`span`]: brownout's spans and their encoding into the official protobuf types;
//! - [`metrics`]: metric families over OTLP (the relay's figures, `/metrics`'s);
//! - [`export`]: the bounded queue and the background exporter (why it is our own: there).
//!
//!
//! `--otlp [URL]` itself is `brownout_experiment::otlp_args` (this layer parses no command
//! line).
//!
//! [`Otlp`] is the handle a command holds: it starts the exporter, gives relays their
//! [`CallHook`], takes the spans of experiments, load and probes ([`Otlp::send`]), and says
//! at the end how many spans went out and how many were dropped. What is exported and the
//! drop policy: docs/otel.md.

pub mod calls;
pub mod context;
pub mod export;
pub mod metrics;
pub mod span;

pub use calls::CallHook;
pub use context::Parent;
pub use span::{unix_nanos, Span, Value};

use export::{Counters, Item, Queue};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The collector `--otlp` names when given without a value: a local OpenTelemetry
/// Collector's OTLP/HTTP port (loopback).
pub const DEFAULT_COLLECTOR: &str = "http://127.0.0.1:4318";

/// How long the end of a command waits for the last spans to leave, at most.
pub const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// A collector URL brownout cannot use.
#[derive(Debug, thiserror::Error)]
pub enum OtlpError {
    #[error("--otlp {url}: not a URL ({why}); give the collector's OTLP/HTTP address, e.g. {DEFAULT_COLLECTOR}")]
    NotAUrl { url: String, why: String },
    #[error("--otlp {url}: only http:// collectors are supported (OTLP/HTTP protobuf without TLS); put a local OpenTelemetry Collector in between for TLS")]
    Scheme { url: String },
    #[error("--otlp: a user name or password in the URL is refused (it would travel with every export); use a collector that needs none, e.g. a local one")]
    Credentials,
    #[error("--otlp: cannot start the exporter: {0}")]
    Start(#[from] std::io::Error),
}

/// The traces endpoint of a collector URL: `http://host:4318` → `http://host:4318/v1/traces`;
/// a URL already ending in `/v1/traces` is used as given (as OpenTelemetry's
/// `OTEL_EXPORTER_OTLP_ENDPOINT` and `…_TRACES_ENDPOINT` do).
pub fn traces_endpoint(url: &str) -> Result<String, OtlpError> {
    let parsed = reqwest::Url::parse(url).map_err(|e| OtlpError::NotAUrl {
        url: url.to_string(),
        why: e.to_string(),
    })?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(OtlpError::Credentials);
    }
    if parsed.scheme() != "http" {
        return Err(OtlpError::Scheme {
            url: url.to_string(),
        });
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(OtlpError::NotAUrl {
            url: url.to_string(),
            why: "no host".into(),
        });
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(OtlpError::NotAUrl {
            url: format!(
                "{}://{}{}",
                parsed.scheme(),
                parsed.authority(),
                parsed.path()
            ),
            why: "a query or fragment is not sent to a collector; give its address alone".into(),
        });
    }
    let mut out = parsed;
    let path = out.path().trim_end_matches('/').to_string();
    if !path.ends_with("/v1/traces") {
        out.set_path(&format!("{path}/v1/traces"));
    }
    Ok(out.to_string())
}

/// The handle on a running exporter (cheap to clone).
#[derive(Clone)]
pub struct Otlp {
    queue: Arc<Queue>,
    endpoint: String,
}

impl std::fmt::Debug for Otlp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Otlp")
            .field("endpoint", &self.endpoint)
            .finish()
    }
}

impl Otlp {
    /// Start exporting to the collector at `url`; `command` (`proxy`, `run`, `load`,
    /// `probe`) is said in the resource (`brownout.command`).
    pub fn start(url: &str, command: &str) -> Result<Otlp, OtlpError> {
        let endpoint = traces_endpoint(url)?;
        let service = vec![
            ("service.name".to_string(), Value::from("brownout")),
            (
                "service.version".to_string(),
                Value::from(env!("CARGO_PKG_VERSION")),
            ),
            ("brownout.command".to_string(), Value::from(command)),
        ];
        let queue = export::start(endpoint.clone(), service)?;
        Ok(Otlp {
            queue: Arc::new(queue),
            endpoint,
        })
    }

    /// [`Otlp::start`] when `url` is given.
    pub fn start_if(url: Option<&str>, command: &str) -> Result<Option<Otlp>, OtlpError> {
        url.map(|u| Otlp::start(u, command)).transpose()
    }

    /// The hook of a relay whose time 0 is `start`.
    pub fn hook(&self, start: Instant) -> CallHook {
        let since = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        CallHook {
            otlp: self.clone(),
            epoch: unix_nanos().saturating_sub(since),
        }
    }

    /// Queue a finished span (dropped and counted when the queue is full).
    pub fn send(&self, span: Span) {
        self.queue.offer(Item::Span(Box::new(span)), 1);
    }

    /// Queue a snapshot of metrics (dropped and counted when the queue is full).
    pub fn send_metrics(&self, m: metrics::Snapshot) {
        self.queue.offer(Item::Metrics(Box::new(m)), 0);
    }

    /// Spans exported and dropped so far, and the last export error.
    pub fn status(&self) -> serde_json::Value {
        status_of(self.queue.counters())
    }

    /// Spans dropped so far (queue full, or not taken by the collector).
    pub fn dropped(&self) -> u64 {
        self.queue.counters().dropped.load(Ordering::Relaxed)
    }

    /// Spans the collector took so far.
    pub fn exported(&self) -> u64 {
        self.queue.counters().exported.load(Ordering::Relaxed)
    }

    /// Export what is queued (waiting [`CLOSE_WAIT`] at most) and say on stderr how many
    /// spans went out and how many were dropped. Blocks the calling thread (the exporter
    /// has its own): call it at the end of a command.
    pub fn close(&self) {
        let deadline = Instant::now() + CLOSE_WAIT;
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let mut item = Item::Flush(done_tx);
        loop {
            match self.queue.push(item) {
                Ok(()) => {
                    let waited =
                        done_rx.recv_timeout(deadline.saturating_duration_since(Instant::now()));
                    if waited.is_err() {
                        // The collector is too slow to take the rest in time: what is left is
                        // lost with the process, and counted so.
                        let left = self.queue.unsent();
                        let c = self.queue.counters();
                        c.dropped.fetch_add(left, Ordering::Relaxed);
                        c.unsent_at_exit.fetch_add(left, Ordering::Relaxed);
                    }
                    break;
                }
                // The buffer is full: the exporter is taking it (it was woken at half).
                Err(back) if Instant::now() < deadline => {
                    item = back;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(_) => break,
            }
        }
        eprintln!("brownout: {}", self.summary());
    }

    /// `otlp: 120 span(s) exported to URL, 3 dropped (last error: …)`.
    pub fn summary(&self) -> String {
        let c = &self.queue.counters();
        let exported = c.exported.load(Ordering::Relaxed);
        let dropped = c.dropped.load(Ordering::Relaxed);
        let mut line = format!(
            "otlp: {exported} span(s) exported to {}, {dropped} dropped",
            self.endpoint
        );
        let unsent = c.unsent_at_exit.load(Ordering::Relaxed);
        if unsent > 0 {
            line.push_str(&format!(
                " ({unsent} not sent: the collector took too long at exit)"
            ));
        } else if dropped > 0 {
            if let Some(e) = c
                .last_error
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
            {
                line.push_str(&format!(" (last export error: {e})"));
            } else {
                line.push_str(" (the queue was full)");
            }
        }
        line
    }
}

pub(crate) fn status_of(c: &Counters) -> serde_json::Value {
    serde_json::json!({
        "spans_exported": c.exported.load(Ordering::Relaxed),
        "spans_dropped": c.dropped.load(Ordering::Relaxed),
        "spans_pending": c.pending.load(Ordering::Relaxed),
        "failed_exports": c.failed_exports.load(Ordering::Relaxed),
        "metric_exports": c.metrics_exported.load(Ordering::Relaxed),
        "metric_exports_dropped": c.metrics_dropped.load(Ordering::Relaxed),
        "last_error": *c.last_error.lock().unwrap_or_else(|p| p.into_inner()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collector_urls_become_traces_endpoints_and_bad_ones_are_refused() {
        let ok = |u: &str| traces_endpoint(u).expect(u);
        assert_eq!(
            ok("http://127.0.0.1:4318"),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            ok("http://127.0.0.1:4318/"),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(ok("http://c:4318/v1/traces"), "http://c:4318/v1/traces");
        assert_eq!(ok("http://c/otel/"), "http://c/otel/v1/traces");
        assert!(matches!(
            traces_endpoint("https://c:4318"),
            Err(OtlpError::Scheme { .. })
        ));
        assert!(matches!(
            traces_endpoint("http://u:p@c:4318"),
            Err(OtlpError::Credentials)
        ));
        assert!(matches!(
            traces_endpoint("http://c:4318/v1/traces?key=secret"),
            Err(OtlpError::NotAUrl { url, .. }) if !url.contains("secret")
        ));
        assert!(matches!(
            traces_endpoint("127.0.0.1:4318"),
            Err(OtlpError::NotAUrl { .. }) | Err(OtlpError::Scheme { .. })
        ));
    }

    #[test]
    fn a_dead_collector_drops_and_counts_and_never_blocks() {
        // A port nothing listens on: bind one, then let it go.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("port")
            .port();
        let otlp = Otlp::start(&format!("http://127.0.0.1:{port}"), "test").expect("start");
        let n = export::QUEUE_ITEMS as u64 + 100;
        for _ in 0..n {
            otlp.send(Span::new("x", None, 1, 2));
        }
        otlp.close();
        assert_eq!(otlp.exported(), 0);
        assert_eq!(
            otlp.dropped(),
            n,
            "every span is counted: queued then refused, or never queued"
        );
        assert!(
            otlp.summary().contains(&format!("{n} dropped")),
            "{}",
            otlp.summary()
        );
    }
}
