//! The HTTP front's listener: accepts connections and serves each with hyper (HTTP/1.1),
//! with the timeouts a server facing untrusted clients needs.
//!
//! - **header**: a request's head must arrive within this time of its first byte, or of the
//!   connection opening (a client trickling half a header, slowloris-style, or opening
//!   connections and sending nothing, is disconnected);
//! - **idle**: a kept-alive connection with no request in flight and nothing sent for this
//!   long is closed;
//! - **body**: a request body must arrive within this time (enforced by the front when it
//!   reads the body; see [`super::http_front`]).
//!
//! With a connection cap ([`serve_capped`]), a connection accepted at the cap displaces
//! another ([`victim`]):
//! - when one client address holds at least two connections more than the newcomer's, that
//!   address gives one up — its connection with no request in flight that showed life
//!   longest ago, else its oldest, even with a request in flight (so a client holding every
//!   connection busy, e.g. trickling request bodies, cannot lock others out, and one
//!   keeping its connections "fresh" cannot have another client's idle one closed);
//! - else the open connection with no request in flight (one still sending its head, or
//!   idle) that showed life longest ago (its head began arriving, or it became idle,
//!   first); when every connection has a request in flight, the new one is closed at once.
//!
//! A response in flight (a long SSE stream) is never cut by these timers (only by the cap,
//! for a client holding more connections than others). On `stop`, the
//! listener closes, connections finish what is in flight, and what is left after the grace
//! period is closed.

use axum::body::Body;
use axum::body::Bytes;
use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::{Frame, Incoming, SizeHint};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};

/// Timeouts of the listener (see the module documentation).
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub header: Duration,
    pub body: Duration,
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            header: Duration::from_secs(10),
            body: Duration::from_secs(30),
            idle: Duration::from_secs(120),
        }
    }
}

/// Serve `router` on `listener` until `stop` resolves, then give connections `grace` to
/// finish.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    timeouts: Timeouts,
    grace: Duration,
    stop: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    serve_capped(listener, router, timeouts, usize::MAX, grace, stop).await
}

/// The open connections, for the cap: each one's activity and how to close it.
#[derive(Default)]
struct Open {
    next: u64,
    conns: std::collections::BTreeMap<u64, Held>,
}

/// One open connection, for the cap: its activity, how to close it, its client's address.
struct Held {
    activity: Arc<Activity>,
    close: Arc<tokio::sync::Notify>,
    ip: std::net::IpAddr,
}

/// Which connection makes room for a new one from `ip` at the cap (see the module
/// documentation); `None`: the new one is closed.
fn victim(conns: &std::collections::BTreeMap<u64, Held>, ip: std::net::IpAddr) -> Option<u64> {
    let mut per_ip: std::collections::BTreeMap<std::net::IpAddr, usize> = Default::default();
    for h in conns.values() {
        *per_ip.entry(h.ip).or_default() += 1;
    }
    let mine = per_ip.get(&ip).copied().unwrap_or(0);
    // The address holding the most (the lowest address of a tie, for a stable choice).
    let hog = per_ip
        .iter()
        .max_by_key(|(a, n)| (**n, std::cmp::Reverse(**a)))
        .filter(|(_, n)| **n >= mine + 2)
        .map(|(a, _)| *a);
    let quietest = |of: Option<std::net::IpAddr>| {
        conns
            .iter()
            .filter(|(_, h)| of.is_none_or(|a| h.ip == a))
            .filter_map(|(id, h)| h.activity.quiet_since().map(|t| (t, *id)))
            .min()
            .map(|(_, id)| id)
    };
    match hog {
        Some(a) => {
            quietest(Some(a)).or_else(|| conns.iter().find(|(_, h)| h.ip == a).map(|(id, _)| *id))
        }
        None => quietest(None),
    }
}

/// Removes a connection from [`Open`] when it ends.
struct Registered {
    open: Arc<Mutex<Open>>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        lock(&self.open).conns.remove(&self.id);
    }
}

fn lock(open: &Mutex<Open>) -> std::sync::MutexGuard<'_, Open> {
    open.lock().unwrap_or_else(|p| p.into_inner())
}

/// As [`serve`], with at most `max_connections` open at once (see the module documentation).
pub async fn serve_capped(
    listener: TcpListener,
    router: Router,
    timeouts: Timeouts,
    max_connections: usize,
    grace: Duration,
    stop: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let open = Arc::new(Mutex::new(Open::default()));
    let (closing_tx, closing_rx) = watch::channel(false);
    // Each connection holds a sender: when all are gone, every connection has ended.
    let (alive_tx, mut alive_rx) = mpsc::channel::<()>(1);
    let (stop_tx, mut stop_rx) = oneshot::channel::<()>();
    tokio::spawn(async move {
        stop.await;
        let _ = stop_tx.send(());
    });
    loop {
        let (tcp, peer) = tokio::select! {
            _ = &mut stop_rx => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // Out of file descriptors and the like: wait a little, keep serving.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // No Nagle: an SSE answer is written in pieces, and waiting for ACKs between them
        // costs a delayed-ACK period (~40 ms) per answer.
        let _ = tcp.set_nodelay(true);
        let activity = Arc::new(Activity::opened());
        let close = Arc::new(tokio::sync::Notify::new());
        let registered = {
            let mut o = lock(&open);
            if o.conns.len() >= max_connections {
                // Quiet longest, not oldest: a client's pool hands out the connection it used
                // last, so the one idle longest is the one least likely to carry a request
                // the relay has not read yet.
                match victim(&o.conns, peer.ip()).and_then(|id| o.conns.remove(&id)) {
                    Some(h) => h.close.notify_one(),
                    None => continue,
                }
            }
            o.next += 1;
            let id = o.next;
            o.conns.insert(
                id,
                Held {
                    activity: Arc::clone(&activity),
                    close: Arc::clone(&close),
                    ip: peer.ip(),
                },
            );
            Registered {
                open: Arc::clone(&open),
                id,
            }
        };
        tokio::spawn(connection(
            Conn {
                tcp,
                peer,
                activity,
                close,
                _registered: registered,
            },
            router.clone(),
            timeouts,
            closing_rx.clone(),
            alive_tx.clone(),
        ));
    }
    drop(listener);
    let _ = closing_tx.send(true);
    drop(alive_tx);
    if tokio::time::timeout(grace, alive_rx.recv()).await.is_err() {
        eprintln!(
            "brownout: streams still open after the grace period of {}s; closing them",
            grace.as_secs()
        );
    }
    Ok(())
}

/// What a connection's watchdog knows.
#[derive(Debug)]
struct Activity {
    /// Requests whose response has not been fully sent.
    in_flight: AtomicUsize,
    /// When the connection last became idle, and when the first byte of the next request
    /// head arrived (if it did).
    marks: Mutex<(Instant, Option<Instant>)>,
}

impl Activity {
    /// A new connection owes its first request's head at once: the header timeout runs.
    fn opened() -> Activity {
        let now = Instant::now();
        Activity {
            in_flight: AtomicUsize::new(0),
            marks: Mutex::new((now, Some(now))),
        }
    }

    fn marks(&self) -> std::sync::MutexGuard<'_, (Instant, Option<Instant>)> {
        self.marks.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn start(&self) {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
    }

    fn end(&self) {
        if self.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            *self.marks() = (Instant::now(), None);
        }
    }

    fn read_some(&self) {
        if self.in_flight.load(Ordering::Acquire) == 0 {
            let mut m = self.marks();
            if m.1.is_none() {
                m.1 = Some(Instant::now());
            }
        }
    }

    /// With nothing in flight, when the connection last showed life: when its pending head
    /// began arriving, or else when it became idle.
    fn quiet_since(&self) -> Option<Instant> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let (idle_since, head_started) = *self.marks();
        Some(head_started.unwrap_or(idle_since))
    }

    /// When the connection is due to be closed, if nothing happens before.
    fn deadline(&self, t: &Timeouts) -> Option<Instant> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let (idle_since, head_started) = *self.marks();
        Some(match head_started {
            Some(at) => at + t.header,
            None => idle_since + t.idle,
        })
    }
}

/// An accepted connection: the stream, its peer, its activity, and the signal that closes
/// it to make room under the cap.
struct Conn {
    tcp: TcpStream,
    peer: SocketAddr,
    activity: Arc<Activity>,
    close: Arc<tokio::sync::Notify>,
    _registered: Registered,
}

async fn connection(
    c: Conn,
    router: Router,
    timeouts: Timeouts,
    mut closing: watch::Receiver<bool>,
    _alive: mpsc::Sender<()>,
) {
    let Conn {
        tcp,
        peer,
        activity,
        close,
        _registered,
    } = c;
    let io = hyper_util::rt::TokioIo::new(Watched {
        tcp,
        activity: Arc::clone(&activity),
    });
    let service = Service {
        router,
        peer,
        activity: Arc::clone(&activity),
    };
    let conn = hyper::server::conn::http1::Builder::new()
        // The watchdog below times headers out; hyper's own timer is not used.
        .header_read_timeout(None)
        .serve_connection(io, service)
        .with_upgrades();
    tokio::pin!(conn);
    let mut closing_seen = *closing.borrow();
    if closing_seen {
        conn.as_mut().graceful_shutdown();
    }
    loop {
        let deadline = activity.deadline(&timeouts);
        // Checked again at least every second: a request may start or end meanwhile.
        let wake = deadline.map_or(Duration::from_secs(1), |d| {
            d.saturating_duration_since(Instant::now())
                .min(Duration::from_secs(1))
        });
        tokio::select! {
            _ = conn.as_mut() => return,
            // Displaced under the connection cap.
            _ = close.notified() => return,
            changed = closing.changed(), if !closing_seen => {
                closing_seen = true;
                if changed.is_ok() {
                    conn.as_mut().graceful_shutdown();
                }
            }
            _ = tokio::time::sleep(wake) => {
                if activity.deadline(&timeouts).is_some_and(|d| d <= Instant::now()) {
                    // A head that never completes, or a connection idle too long: close.
                    return;
                }
            }
        }
    }
}

/// The TCP stream, telling the watchdog when bytes arrive.
struct Watched {
    tcp: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.tcp).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.read_some();
        }
        r
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }
}

/// The router as a hyper service: gives handlers the peer's address and counts the
/// request as in flight until its response body is done.
#[derive(Clone)]
struct Service {
    router: Router,
    peer: SocketAddr,
    activity: Arc<Activity>,
}

type Reply = Pin<Box<dyn Future<Output = Result<axum::response::Response, Infallible>> + Send>>;

impl hyper::service::Service<hyper::Request<Incoming>> for Service {
    type Response = axum::response::Response;
    type Error = Infallible;
    type Future = Reply;

    fn call(&self, mut req: hyper::Request<Incoming>) -> Self::Future {
        req.extensions_mut().insert(ConnectInfo(self.peer));
        let mut router = self.router.clone();
        self.activity.start();
        let guard = InFlight(Arc::clone(&self.activity));
        Box::pin(async move {
            let resp = tower_service::Service::call(&mut router, req.map(Body::new)).await?;
            Ok(resp.map(|body| {
                Body::new(Tracked {
                    inner: body,
                    _guard: guard,
                })
            }))
        })
    }
}

/// Ends a request's time in flight when dropped (its body done, or the client gone).
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// A response body that holds its request in flight.
struct Tracked {
    inner: Body,
    _guard: InFlight,
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
