//! `Pipe`: one direction of a relay, carrying out the engine's verdicts (forward, delay,
//! replace, drop, duplicate, hold, answer the sender, signal the process).

use super::*;
/// A message held by a reorder fault, with the token of the hold that placed it.
type Held<D> = Option<(u64, D)>;

/// One direction of a relay: carries out verdicts toward `dest`, answers toward `origin`.
///
/// `D` and `O` are what the two outboxes carry: raw messages (`Vec<u8>`) between pipes and
/// lines, or a front's richer items (an HTTP answer also carries SSE events untouched).
pub struct Pipe<D = Vec<u8>, O = Vec<u8>> {
    pub dest: mpsc::Sender<D>,
    pub origin: mpsc::Sender<O>,
    pub process: Option<child::ProcessHandle>,
    held: Arc<Mutex<Held<D>>>,
    hold_token: Arc<AtomicU64>,
}

impl<D, O> Clone for Pipe<D, O> {
    fn clone(&self) -> Self {
        Pipe {
            dest: self.dest.clone(),
            origin: self.origin.clone(),
            process: self.process.clone(),
            held: Arc::clone(&self.held),
            hold_token: Arc::clone(&self.hold_token),
        }
    }
}

impl<D, O> Pipe<D, O>
where
    D: From<Vec<u8>> + Clone + Send + 'static,
    O: From<Vec<u8>> + Send + 'static,
{
    pub fn new(
        dest: mpsc::Sender<D>,
        origin: mpsc::Sender<O>,
        process: Option<child::ProcessHandle>,
    ) -> Self {
        Pipe {
            dest,
            origin,
            process,
            held: Arc::new(Mutex::new(None)),
            hold_token: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Whether no message of this direction is held by a reorder (a plain pass may then
    /// take a fast lane: nothing has to follow it out).
    pub fn holds_nothing(&self) -> bool {
        self.held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
    }

    fn take_held(&self) -> Option<D> {
        self.held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .map(|(_, b)| b)
    }

    /// Carry out a verdict for `original`. HTTP-level parts of the verdict (`http`,
    /// `stream`) are the front's to carry out; a pipe moves messages.
    pub async fn execute(&self, v: Verdict, original: Vec<u8>) {
        // Process faults land before the message that triggered them goes on.
        for a in &v.process {
            if let Some(p) = &self.process {
                p.apply(*a);
            }
        }
        for r in v.reply {
            send_after(&self.origin, O::from(r.bytes), to_duration(r.delay)).await;
        }
        let bytes = match v.forward {
            Forward::Original => original,
            Forward::Replace(b) => b,
            Forward::Drop => {
                for e in v.extra {
                    send_after(&self.dest, D::from(e.bytes), to_duration(e.delay)).await;
                }
                hold_then_drop(&self.dest, to_duration(v.delay));
                return;
            }
        };
        let item = D::from(bytes);
        let delay = to_duration(v.delay);
        if let Some(max) = v.hold {
            // Reorder: hold until the next message in this direction has gone, or `max`.
            let token = self.hold_token.fetch_add(1, Ordering::Relaxed) + 1;
            let previous = self
                .held
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .replace((token, item));
            if let Some((_, prev)) = previous {
                let _ = self.dest.send(prev).await;
            }
            let held = Arc::clone(&self.held);
            let dest = self.dest.clone();
            schedule(async move {
                tokio::time::sleep(delay + to_duration(max)).await;
                let mine = {
                    let mut h = held.lock().unwrap_or_else(|p| p.into_inner());
                    if h.as_ref().is_some_and(|(t, _)| *t == token) {
                        h.take().map(|(_, b)| b)
                    } else {
                        None
                    }
                };
                if let Some(b) = mine {
                    let _ = dest.send(b).await;
                }
            })
            .await;
            return;
        }
        let copies = v.duplicates;
        let gap = to_duration(v.duplicate_gap);
        if delay.is_zero() && copies == 0 {
            let _ = self.dest.send(item).await;
            if let Some(h) = self.take_held() {
                let _ = self.dest.send(h).await;
            }
        } else {
            let dest = self.dest.clone();
            let held = self.take_held();
            schedule(async move {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                let _ = dest.send(item.clone()).await;
                if let Some(h) = held {
                    let _ = dest.send(h).await;
                }
                for _ in 0..copies {
                    if !gap.is_zero() {
                        tokio::time::sleep(gap).await;
                    }
                    let _ = dest.send(item.clone()).await;
                }
            })
            .await;
        }
        for e in v.extra {
            send_after(
                &self.dest,
                D::from(e.bytes),
                to_duration(e.delay) + Duration::from_millis(1),
            )
            .await;
        }
    }
}

/// A message dropped after a hold (`timeout` with `hold_ms`, `then: drop`): the way to its
/// receiver stays open that long, so a front that answers when its queue closes (an HTTP
/// request with no answer) answers nothing until the hold is over.
fn hold_then_drop<T: Send + 'static>(out: &mpsc::Sender<T>, hold: Duration) {
    if hold.is_zero() {
        return;
    }
    let out = out.clone();
    tokio::spawn(async move {
        tokio::time::sleep(hold).await;
        drop(out);
    });
}

/// A sender whose receiver is gone: messages sent to it vanish. Used as the answer path of
/// server messages, which no fault answers in the server's place.
pub fn dead_end<T>() -> mpsc::Sender<T> {
    mpsc::channel(1).0
}

/// [`dead_end`] for raw messages, made once: a clone costs no allocation (it is taken per
/// message on some paths).
pub fn dead_bytes() -> mpsc::Sender<Vec<u8>> {
    static DEAD: std::sync::OnceLock<mpsc::Sender<Vec<u8>>> = std::sync::OnceLock::new();
    DEAD.get_or_init(dead_end).clone()
}

pub fn to_duration(t: Time) -> Duration {
    Duration::from_micros(t.as_micros())
}

async fn send_after<T: Send + 'static>(out: &mpsc::Sender<T>, item: T, delay: Duration) {
    if delay.is_zero() {
        let _ = out.send(item).await;
    } else {
        let out = out.clone();
        schedule(async move {
            tokio::time::sleep(delay).await;
            let _ = out.send(item).await;
        })
        .await;
    }
}
