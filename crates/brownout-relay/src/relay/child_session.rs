//! One session of the stdio back behind the HTTP front: one server process, and the
//! routes that carry its answers to the POSTs that asked.
//!
//! A route is keyed by the JSON-RPC id of the request as the client sent it, and an answer
//! is routed by the id of the server's message as the server wrote it, before any fault
//! changed its bytes: a `malformed` answer still reaches its caller, never another (and
//! the server's error with a null id, for a request a fault made unreadable, reaches the
//! oldest POST whose request was unreadable). Two requests with one id in flight at once
//! are refused (the second gets `-32600`), so an answer always has one caller. A route ends when its answer is delivered or dropped,
//! when its request never reached the server (the engine answered in the server's place,
//! or dropped the request), when its client went away, or after the pending TTL; a POST's
//! answer stream ends when its last route does (a batch's SSE stream ends once every
//! request of the batch is answered).

use super::child::ProcessHandle;
use super::http::{answered_ids, Down};
use super::{dead_end, Pipe};
use brownout_core::jsonrpc::{classify, Id, Kind, Message};
use brownout_core::verdict::{Forward, Verdict};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch, Notify};

/// Where one answer goes: the POST that asked, and whether it streams (SSE).
#[derive(Clone)]
pub struct Route {
    pub down: mpsc::Sender<Down>,
    pub sse: bool,
}

/// One request in flight: reserved when its POST arrives, opened when the POST is joined
/// to the session (its answer channel exists).
struct Slot {
    post: u64,
    since: Instant,
    route: Option<Route>,
}

/// One session: one server process.
pub struct ChildSession {
    pub(super) id: String,
    /// The engine's key for this session (see `http_sessions`).
    key: String,
    pub(super) to_server: mpsc::Sender<Vec<u8>>,
    slots: Mutex<HashMap<Id, Slot>>,
    stream: Mutex<Option<mpsc::Sender<Down>>>,
    pub(super) process: ProcessHandle,
    last_active: Mutex<Instant>,
    posts: AtomicU64,
    /// POSTs whose request reached the server unreadable (a `malformed` request), oldest
    /// first, with their ids: the server's error with a null id answers the oldest.
    unreadable: Mutex<VecDeque<(u64, Vec<Id>)>>,
    /// Asks the process's keeper to stop it (TERM, then KILL).
    pub(super) stop: Notify,
    /// How the process ended, once it has.
    pub(super) ended: watch::Receiver<Option<String>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The refusal of a request whose id is already in flight in the session.
pub fn duplicate_id_error(id: &Id) -> Vec<u8> {
    brownout_core::splice::error_response(
        Some(id),
        -32600,
        &format!(
            "brownout: a request with id {id} is already in flight in this session; ids must be unique among requests in flight"
        ),
        None,
    )
}

impl ChildSession {
    pub fn new(
        id: String,
        key: String,
        to_server: mpsc::Sender<Vec<u8>>,
        process: ProcessHandle,
        ended: watch::Receiver<Option<String>>,
    ) -> ChildSession {
        ChildSession {
            id,
            key,
            to_server,
            slots: Mutex::new(HashMap::new()),
            stream: Mutex::new(None),
            process,
            last_active: Mutex::new(Instant::now()),
            posts: AtomicU64::new(0),
            unreadable: Mutex::new(VecDeque::new()),
            stop: Notify::new(),
            ended,
        }
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    /// The client did something in this session.
    pub fn touch(&self) {
        *lock(&self.last_active) = Instant::now();
    }

    /// Requests in flight (routes waiting for an answer).
    pub fn route_count(&self) -> usize {
        lock(&self.slots).len()
    }

    /// How long the session has been idle: nothing in flight, no GET stream open, no
    /// request for this long. `None` while it is in use.
    pub fn idle_for(&self) -> Option<Duration> {
        if !lock(&self.slots).is_empty() {
            return None;
        }
        if lock(&self.stream).as_ref().is_some_and(|s| !s.is_closed()) {
            return None;
        }
        Some(lock(&self.last_active).elapsed())
    }

    /// Reserve the ids of a POST's requests; refuses an id already in flight (or twice in
    /// one batch). Returns the POST's token.
    pub fn reserve(&self, ids: &[Id]) -> Result<u64, Id> {
        let post = self.posts.fetch_add(1, Ordering::Relaxed);
        let mut slots = lock(&self.slots);
        let mut seen = HashSet::new();
        if let Some(dup) = ids
            .iter()
            .find(|id| slots.contains_key(*id) || !seen.insert(*id))
        {
            return Err(dup.clone());
        }
        let now = Instant::now();
        for id in ids {
            slots.insert(
                id.clone(),
                Slot {
                    post,
                    since: now,
                    route: None,
                },
            );
        }
        Ok(post)
    }

    /// The POST is joined: its answers go to `route`.
    pub fn open(&self, post: u64, route: &Route) {
        for slot in lock(&self.slots).values_mut() {
            if slot.post == post {
                slot.route = Some(route.clone());
            }
        }
    }

    /// The POST was answered before it was joined (an HTTP-level fault): drop its ids.
    pub fn unreserve(&self, post: u64) {
        lock(&self.slots).retain(|_, s| s.post != post || s.route.is_some());
    }

    /// These requests of a POST never reached the server: nobody will answer them.
    pub fn forget(&self, post: u64, ids: &[Id]) {
        let mut slots = lock(&self.slots);
        for id in ids {
            if slots.get(id).is_some_and(|s| s.post == post) {
                slots.remove(id);
            }
        }
    }

    /// End the routes of these answered ids; returns where the answer goes (the first
    /// route whose client is still there).
    pub fn take(&self, ids: &[Id]) -> Option<Route> {
        remove_routes(&mut lock(&self.slots), ids)
    }

    /// An error with a null id (the server could not read a request): the route of the
    /// oldest POST whose request reached it unreadable and is still unanswered.
    fn take_unreadable(&self) -> Option<Option<Route>> {
        loop {
            let (post, ids) = lock(&self.unreadable).pop_front()?;
            let mut slots = lock(&self.slots);
            let mine: Vec<Id> = ids
                .into_iter()
                .filter(|id| slots.get(id).is_some_and(|s| s.post == post))
                .collect();
            if !mine.is_empty() {
                return Some(remove_routes(&mut slots, &mine));
            }
        }
    }

    /// Forget routes whose client went away, or older than `ttl` (the engine has given up
    /// on their calls by then).
    pub fn sweep(&self, ttl: Duration) {
        let mut slots = lock(&self.slots);
        slots.retain(|_, s| {
            s.since.elapsed() < ttl && s.route.as_ref().is_none_or(|r| !r.down.is_closed())
        });
        lock(&self.unreadable).retain(|(post, ids)| {
            ids.iter()
                .any(|id| slots.get(id).is_some_and(|s| s.post == *post))
        });
    }

    /// The process is gone: no answer will come.
    pub fn clear(&self) {
        lock(&self.slots).clear();
        lock(&self.stream).take();
    }

    /// GET: server-initiated messages go here from now on.
    pub fn set_stream(&self, tx: mpsc::Sender<Down>) {
        *lock(&self.stream) = Some(tx);
    }

    /// Carry out the engine's verdict on one server message. An answer goes to the POST
    /// that asked, found by the ids in `original` (the bytes the server wrote); anything
    /// else goes through `unrouted`.
    pub async fn deliver(
        &self,
        mut v: Verdict,
        original: Vec<u8>,
        unrouted: &Pipe<Vec<u8>, Vec<u8>>,
    ) {
        let ids = answered_ids(&original);
        let route = if !ids.is_empty() {
            self.take(&ids)
        } else if is_anonymous_error(&original) {
            match self.take_unreadable() {
                Some(route) => route,
                None => return unrouted.execute(v, original).await,
            }
        } else {
            return unrouted.execute(v, original).await;
        };
        let Some(route) = route else {
            // Nobody waits for it (the caller went away, or it was given up on); the
            // extra messages a fault adds still go out.
            let rest = Verdict {
                forward: Forward::Drop,
                ..v
            };
            return unrouted.execute(rest, original).await;
        };
        if !route.sse && !v.extra.is_empty() {
            // A JSON answer carries one message: extra ones go where server messages go.
            let extra = Verdict {
                forward: Forward::Drop,
                extra: std::mem::take(&mut v.extra),
                ..Verdict::pass()
            };
            unrouted.execute(extra, Vec::new()).await;
        }
        // The answer's own pipe: a delay or a duplicate keeps the POST's stream open until
        // the last copy is sent, then the stream ends.
        Pipe::<Down, Vec<u8>>::new(route.down, dead_end(), None)
            .execute(v, original)
            .await;
    }

    /// A server message that answers no request: the GET stream, else an open SSE answer.
    pub async fn send_unrouted(&self, bytes: Vec<u8>) {
        let stream = lock(&self.stream).clone();
        if let Some(s) = stream {
            if s.send(Down::Msg(bytes.clone())).await.is_ok() {
                return;
            }
            lock(&self.stream).take();
        }
        let open = lock(&self.slots)
            .values()
            .filter_map(|s| s.route.as_ref())
            .find(|r| r.sse && !r.down.is_closed())
            .map(|r| r.down.clone());
        if let Some(d) = open {
            let _ = d.send(Down::Msg(bytes)).await;
        }
    }

    /// Carry what a POST's pipe forwards to the process; once the pipe is done, forget
    /// the requests that never went (the engine answered in the server's place, or dropped
    /// them).
    pub async fn forward_post(
        self: Arc<Self>,
        post: u64,
        owed: Vec<Id>,
        mut up: mpsc::Receiver<Vec<u8>>,
    ) {
        let mut sent: HashSet<Id> = HashSet::new();
        // A message whose ids cannot be read (a `malformed` request) may still be answered.
        let mut unknown = false;
        while let Some(m) = up.recv().await {
            match classify(&m) {
                Message::Invalid(_) if !unknown => {
                    // Noted before the server can answer it.
                    lock(&self.unreadable).push_back((post, owed.clone()));
                    unknown = true;
                }
                Message::Invalid(_) => {}
                _ => sent.extend(super::http::request_ids(&m)),
            }
            if self.to_server.send(m).await.is_err() {
                break;
            }
        }
        if !unknown {
            let never: Vec<Id> = owed.into_iter().filter(|id| !sent.contains(id)).collect();
            self.forget(post, &never);
        }
    }
}

/// End the routes of `ids`; returns the first whose client is still there.
fn remove_routes(slots: &mut HashMap<Id, Slot>, ids: &[Id]) -> Option<Route> {
    let mut to = None;
    for id in ids {
        if let Some(Slot { route: Some(r), .. }) = slots.remove(id) {
            if to.is_none() && !r.down.is_closed() {
                to = Some(r);
            }
        }
    }
    to
}

/// An error response with a null id: the server could not read a request.
fn is_anonymous_error(bytes: &[u8]) -> bool {
    matches!(classify(bytes), Message::Single(v) if v.kind == Kind::Error && v.id.is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> ChildSession {
        let (to_server, _) = mpsc::channel(1);
        let (_, ended) = watch::channel(None);
        ChildSession::new(
            "s".into(),
            "http-1".into(),
            to_server,
            ProcessHandle::default(),
            ended,
        )
    }

    fn num(n: u64) -> Id {
        Id::Num(n.to_string())
    }

    #[test]
    fn an_id_in_flight_is_refused_until_its_route_ends() {
        let s = session();
        let post = s.reserve(&[num(1)]).expect("free");
        assert_eq!(s.reserve(&[num(1)]), Err(num(1)));
        assert_eq!(
            s.reserve(&[num(2), num(2)]),
            Err(num(2)),
            "twice in one batch"
        );
        let (tx, _rx) = mpsc::channel(1);
        s.open(
            post,
            &Route {
                down: tx,
                sse: false,
            },
        );
        assert!(s.take(&[num(1)]).is_some());
        assert_eq!(s.route_count(), 0);
        assert!(s.reserve(&[num(1)]).is_ok(), "free again");
    }

    #[test]
    fn routes_end_with_their_post() {
        let s = session();
        let early = s.reserve(&[num(1)]).expect("free");
        s.unreserve(early);
        assert_eq!(s.route_count(), 0, "a POST answered before it was joined");
        let post = s.reserve(&[num(2), num(3)]).expect("free");
        let (tx, rx) = mpsc::channel(1);
        s.open(
            post,
            &Route {
                down: tx,
                sse: true,
            },
        );
        s.forget(post + 1, &[num(2)]);
        assert_eq!(s.route_count(), 2, "another POST cannot forget them");
        s.forget(post, &[num(2)]);
        assert_eq!(s.route_count(), 1);
        drop(rx);
        s.sweep(Duration::from_secs(600));
        assert_eq!(s.route_count(), 0, "the client went away");
    }

    #[test]
    fn a_null_id_error_answers_the_oldest_unreadable_post() {
        let s = session();
        let post = s.reserve(&[num(4)]).expect("free");
        let (tx, _rx) = mpsc::channel(1);
        s.open(
            post,
            &Route {
                down: tx,
                sse: false,
            },
        );
        lock(&s.unreadable).push_back((post, vec![num(4)]));
        assert!(is_anonymous_error(
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#
        ));
        assert!(matches!(s.take_unreadable(), Some(Some(_))));
        assert_eq!(s.route_count(), 0);
        assert!(s.take_unreadable().is_none());
    }
}
