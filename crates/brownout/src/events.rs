//! The event log: engine events written as JSON Lines by a background task, so the relay's
//! hot path only queues a line.

use brownout_core::event::Event;
use std::path::Path;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};

enum Msg {
    Line(Vec<u8>),
    /// Events to encode here, off the caller's path (the relay drains them under its engine
    /// lock; encoding them there would hold the lock longer).
    Events(Vec<Event>),
    Close(oneshot::Sender<()>),
}

pub struct EventSink {
    tx: mpsc::UnboundedSender<Msg>,
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
        let (tx, mut rx) = mpsc::unbounded_channel::<Msg>();
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
        Ok(EventSink { tx })
    }

    pub fn write(&self, e: &Event) {
        self.write_record(e);
    }

    /// Write any record (an engine event, a coverage warning) as one line.
    pub fn write_record<T: serde::Serialize>(&self, e: &T) {
        if let Ok(mut line) = serde_json::to_vec(e) {
            line.push(b'\n');
            let _ = self.tx.send(Msg::Line(line));
        }
    }

    /// Queue events in order; they are encoded by the writer task.
    pub fn write_all(&self, events: Vec<Event>) {
        if !events.is_empty() {
            let _ = self.tx.send(Msg::Events(events));
        }
    }

    /// Flush everything written so far.
    pub async fn close(&self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Msg::Close(tx)).is_ok() {
            let _ = rx.await;
        }
    }
}
