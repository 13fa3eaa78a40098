//! The event log: engine events written as JSON Lines by a background task, so the relay's
//! hot path only queues a line.
//!
//! The queue is bounded ([`QUEUE_LINES`]): when the disk cannot keep up, lines beyond it are
//! dropped rather than held in memory, never slowing traffic down; how many were dropped is
//! said on stderr when the log closes.

use brownout_core::event::Event;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};

/// Lines queued for the writer at most.
pub const QUEUE_LINES: usize = 65_536;

enum Msg {
    Line(Vec<u8>),
    /// Events to encode here, off the caller's path (the relay drains them under its engine
    /// lock; encoding them there would hold the lock longer).
    Events(Vec<Event>),
    Close(oneshot::Sender<()>),
}

pub struct EventSink {
    tx: mpsc::Sender<Msg>,
    /// Lines dropped because the queue was full.
    dropped: Arc<AtomicU64>,
}

impl EventSink {
    /// Create (truncate) the file and start the writer.
    pub async fn create(path: &Path) -> std::io::Result<EventSink> {
        let file = tokio::fs::File::create(path).await.map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("cannot write events to {}: {e}", path.display()),
            )
        })?;
        let (tx, mut rx) = mpsc::channel::<Msg>(QUEUE_LINES);
        tokio::spawn(async move {
            let mut w = tokio::io::BufWriter::new(file);
            while let Some(msg) = rx.recv().await {
                match msg {
                    Msg::Line(l) => {
                        if w.write_all(&l).await.is_err() {
                            break;
                        }
                        if rx.is_empty() && w.flush().await.is_err() {
                            break;
                        }
                    }
                    Msg::Events(events) => {
                        let mut lines = Vec::new();
                        for e in &events {
                            if serde_json::to_writer(&mut lines, e).is_ok() {
                                lines.push(b'\n');
                            }
                        }
                        if w.write_all(&lines).await.is_err() {
                            break;
                        }
                        if rx.is_empty() && w.flush().await.is_err() {
                            break;
                        }
                    }
                    Msg::Close(done) => {
                        let _ = w.flush().await;
                        let _ = done.send(());
                    }
                }
            }
        });
        Ok(EventSink {
            tx,
            dropped: Arc::default(),
        })
    }

    pub fn write(&self, e: &Event) {
        self.write_record(e);
    }

    /// Write any record (an engine event, a coverage warning) as one line.
    pub fn write_record<T: serde::Serialize>(&self, e: &T) {
        if let Ok(mut line) = serde_json::to_vec(e) {
            line.push(b'\n');
            if self.tx.try_send(Msg::Line(line)).is_err() {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Queue events in order; they are encoded by the writer task. A full queue drops
    /// them (and counts them), as [`EventSink::write_record`] does.
    pub fn write_all(&self, events: Vec<Event>) {
        if events.is_empty() {
            return;
        }
        let n = events.len() as u64;
        if self.tx.try_send(Msg::Events(events)).is_err() {
            self.dropped.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Flush everything written so far.
    pub async fn close(&self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Msg::Close(tx)).await.is_ok() {
            let _ = rx.await;
        }
        let dropped = self.dropped.load(Ordering::Relaxed);
        if dropped > 0 {
            eprintln!(
                "brownout: {dropped} events were not written: the event log could not keep up"
            );
        }
    }

    /// Lines dropped so far because the writer could not keep up.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brownout_core::event::FaultEvent;

    #[tokio::test]
    async fn a_log_that_cannot_keep_up_drops_lines_instead_of_growing() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("events.jsonl");
        let sink = EventSink::create(&path).await.expect("sink");
        let e = Event::Fault(FaultEvent {
            t_ms: 0.0,
            session: "s".into(),
            seq: 0,
            id: None,
            method: "tools/call".into(),
            tool: None,
            direction: "to_client",
            fault: "f".into(),
            kind: "latency",
            action: "x".into(),
        });
        // The writer gets no turn while this loop runs (one thread): the queue fills.
        let n = QUEUE_LINES + 1000;
        for _ in 0..n {
            sink.write(&e);
        }
        assert_eq!(sink.dropped(), 1000);
        sink.close().await;
        let lines = std::fs::read_to_string(&path).expect("log").lines().count();
        assert_eq!(lines, QUEUE_LINES);
    }
}
