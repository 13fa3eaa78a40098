//! The stdio fast lane: a message no fault touches is written to its destination (a
//! server's stdin, the client's stdout) by the task that read it, in the same turn, instead
//! of going through the destination's queue and writer task.
//!
//! A destination is written by one writer task draining its queue ([`spawn`], the loop
//! every stdio side uses, see [`super::framing::spawn_writer`]) and, for a message whose
//! verdict is a plain pass, by the reader through its [`Lane`]. Order is kept: the lane
//! writes only when nothing is queued and no write is under way (the writer holds the sink
//! from the moment it takes a message until that message is written), else the message is
//! queued behind the others as before. Both share the sink, so a close (EOF to a server) or
//! a broken pipe is seen by both: what comes after is dropped, as a queued message is.
//!
//! The check "nothing queued, sink free" and the write's start happen in one poll, which
//! keeps order only when the writer task cannot run in between: the lane writes directly on
//! a current-thread runtime (every stdio relay) and queues on any other.

use super::{Outbox, Pipe};
use brownout_core::verdict::Verdict;
use std::sync::Arc;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::{mpsc, oneshot, Mutex};
use tokio::task::JoinHandle;

/// A writer, boxed so the lane does not carry its type.
type Sink = Box<dyn AsyncWrite + Unpin + Send>;

/// Whether a message no fault can touch may be written before the engine records it: only
/// on the current-thread runtime `proxy stdio` builds, where nothing else of the relay (a
/// reader, the watcher, a timer) can run between its first write and its record. On any
/// other, it is recorded first.
pub fn writes_first() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread)
}

/// A copy of a line to pass on while the original is still read (written first, recorded
/// after), with room for the line ending [`Lane::pass`] adds: one allocation, no growing.
pub fn line_copy(line: &[u8]) -> Vec<u8> {
    let mut copy = Vec::with_capacity(line.len() + 1);
    copy.extend_from_slice(line);
    copy
}

/// Carry out verdict `v` on `msg`: a plain pass goes by `lane` when nothing is ahead of it
/// (nothing queued, nothing held by a reorder); anything else through `pipe`.
pub async fn carry(pipe: &Pipe, lane: &Lane, v: Verdict, msg: Vec<u8>) {
    let msg = if v.is_pass() && pipe.holds_nothing() {
        match lane.pass(msg).await {
            Ok(()) => return,
            Err(msg) => msg,
        }
    } else {
        msg
    };
    pipe.execute(v, msg).await;
}

/// The destination's writer, shared by its writer task and its lane; `None` once closed
/// or broken.
type Shared = Arc<Mutex<Option<Sink>>>;

/// A batch is written once it is this big, even if more is queued.
const BATCH: usize = 1 << 20;

/// The reader's direct way to a destination (see the module doc).
#[derive(Clone)]
pub struct Lane {
    sink: Shared,
    /// The destination's queue: the lane writes only when it is empty.
    queue: Outbox,
    /// Whether direct writes keep order on this runtime (current-thread only).
    direct: bool,
}

impl Lane {
    /// Write `line` (a message without its line ending) now if nothing is ahead of it;
    /// gives it back otherwise, to be queued. A message for a closed or broken destination
    /// is dropped, as a queued one would be.
    pub async fn pass(&self, mut line: Vec<u8>) -> Result<(), Vec<u8>> {
        if !self.direct || self.queue.capacity() < self.queue.max_capacity() {
            return Err(line);
        }
        let Ok(mut sink) = self.sink.try_lock() else {
            return Err(line);
        };
        let Some(w) = sink.as_mut() else {
            return Ok(());
        };
        // One write for the message and its line ending.
        line.push(b'\n');
        if w.write_all(&line).await.is_err() || w.flush().await.is_err() {
            *sink = None;
        }
        Ok(())
    }
}

/// The writer of a destination, shared with the [`Lane`]s made from it.
#[derive(Clone)]
pub struct Writer(Shared);

impl Writer {
    /// A lane to this writer past `queue`, the sender of the queue it drains.
    pub fn lane(&self, queue: &Outbox) -> Lane {
        Lane {
            sink: Arc::clone(&self.0),
            queue: queue.clone(),
            direct: Handle::try_current()
                .is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::CurrentThread),
        }
    }
}

/// Write messages from `rx` as lines, in batches, flushing whenever the queue runs dry;
/// returns the writer task and the [`Writer`] to make lanes from. When `close` fires (or
/// its sender is dropped), what is queued is written and the writer ends, closing `w` (EOF
/// to a server's stdin). After a failed write (the reader is gone) the writer ends; what
/// still comes is dropped.
pub fn spawn<W: AsyncWrite + Unpin + Send + 'static>(
    w: W,
    mut rx: mpsc::Receiver<Vec<u8>>,
    mut close: Option<oneshot::Receiver<()>>,
) -> (JoinHandle<()>, Writer) {
    let sink: Shared = Arc::new(Mutex::new(Some(Box::new(w))));
    let writer = Writer(Arc::clone(&sink));
    let task = tokio::spawn(async move {
        loop {
            let mut batch = Vec::new();
            let closing = tokio::select! {
                biased;
                m = rx.recv() => match m {
                    Some(m) => {
                        batch.extend_from_slice(&m);
                        batch.push(b'\n');
                        false
                    }
                    None => break,
                },
                _ = closed(&mut close) => true,
            };
            // Taken in the same poll as the message when free: no lane passes it.
            let mut guard = sink.lock().await;
            while closing || batch.len() <= BATCH {
                let Ok(more) = rx.try_recv() else { break };
                batch.extend_from_slice(&more);
                batch.push(b'\n');
            }
            let Some(w) = guard.as_mut() else { break };
            if !batch.is_empty() && (w.write_all(&batch).await.is_err() || w.flush().await.is_err())
            {
                break;
            }
            if closing {
                break;
            }
        }
        // Closed, broken or without senders: the writer goes (EOF to its reader), and the
        // lanes drop what still comes.
        *sink.lock().await = None;
    });
    (task, writer)
}

/// Resolves when `close` fires or its sender is dropped; never without one.
async fn closed(close: &mut Option<oneshot::Receiver<()>>) {
    match close {
        Some(c) => {
            let _ = c.await;
        }
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// What the writer has written once everything is closed.
    async fn written(mut r: tokio::io::DuplexStream) -> Vec<u8> {
        let mut out = Vec::new();
        r.read_to_end(&mut out).await.expect("EOF once closed");
        out
    }

    #[tokio::test]
    async fn a_pass_with_nothing_ahead_is_written_at_once_by_the_lane() {
        let (w, mut r) = tokio::io::duplex(1 << 16);
        let (tx, rx) = mpsc::channel(8);
        let (_task, writer) = spawn(w, rx, None);
        let lane = writer.lane(&tx);
        assert!(
            lane.pass(b"{\"a\":1}".to_vec()).await.is_ok(),
            "nothing ahead: written now"
        );
        // Written before this task yields to the writer task: no queue, no hop.
        let mut buf = [0u8; 8];
        r.read_exact(&mut buf).await.expect("the line");
        assert_eq!(&buf, b"{\"a\":1}\n");
    }

    #[tokio::test]
    async fn a_pass_behind_queued_messages_is_given_back_and_keeps_its_place() {
        let (w, r) = tokio::io::duplex(1 << 16);
        let (tx, rx) = mpsc::channel(8);
        let (task, writer) = spawn(w, rx, None);
        let lane = writer.lane(&tx);
        // Queued (a delayed or replaced message), not yet written: the writer task has not
        // run since.
        tx.send(b"first".to_vec()).await.expect("queued");
        let back = lane.pass(b"second".to_vec()).await;
        assert_eq!(back, Err(b"second".to_vec()), "must not overtake the queue");
        tx.send(back.unwrap_err()).await.expect("queued behind");
        drop((tx, lane));
        task.await.expect("writer ends with its senders");
        assert_eq!(written(r).await, b"first\nsecond\n");
    }

    #[tokio::test]
    async fn after_the_close_the_lane_drops_what_comes_as_the_queue_does() {
        let (w, r) = tokio::io::duplex(1 << 16);
        let (tx, rx) = mpsc::channel(8);
        let (close, close_rx) = oneshot::channel();
        let (task, writer) = spawn(w, rx, Some(close_rx));
        let lane = writer.lane(&tx);
        tx.send(b"queued".to_vec()).await.expect("queued");
        close.send(()).expect("writer alive");
        task.await.expect("writer ends");
        // Written nowhere: given back, it finds the queue closed; passed, the sink gone.
        let _ = lane.pass(b"late".to_vec()).await;
        assert!(tx.is_closed(), "nothing is taken after the close");
        drop((tx, lane));
        assert_eq!(written(r).await, b"queued\n", "EOF after what was queued");
    }

    #[test]
    fn on_a_multi_thread_runtime_the_lane_always_queues() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .expect("runtime");
        rt.block_on(async {
            let (w, _r) = tokio::io::duplex(1 << 16);
            let (tx, rx) = mpsc::channel(8);
            let (_task, writer) = spawn(w, rx, None);
            let lane = writer.lane(&tx);
            assert_eq!(lane.pass(b"x".to_vec()).await, Err(b"x".to_vec()));
        });
    }
}
