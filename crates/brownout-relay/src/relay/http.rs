//! What HTTP fronts and backs share: the items an answer is made of ([`Down`]), which
//! headers a proxy must not pass on, and the shaped body that carries an answer to the
//! client (slow events, throttled bytes, a stream cut after N events or bytes, a reset).

use super::sse::Event;
use super::{dead_bytes, dead_end, to_duration};
use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, HeaderName};
use brownout_core::jsonrpc::{classify, Id, Kind, Message};
use brownout_core::verdict::StreamShape;
use std::time::Duration;
use tokio::sync::mpsc;

/// Queue depth of one answer on its way to the client.
pub const DOWN_DEPTH: usize = 256;

/// Carry out a verdict on a server message toward `down`. A message that came as an SSE
/// event (`template`) goes out as that event rebuilt from its bytes, with only its data
/// swapped: its id, its other fields and its spacing stay; bytes that are not UTF-8 stay.
/// A verdict that sends several messages sends them as [`Down::Event`]s even for a JSON
/// answer: the front then answers as SSE (the only way to deliver them all).
pub async fn execute_down(
    v: brownout_core::verdict::Verdict,
    bytes: Vec<u8>,
    template: Option<Event>,
    down: &mpsc::Sender<Down>,
) {
    // More than one message for one answer (copies, a notification after it): as events,
    // which tells a plain JSON answer to become an SSE stream (see `respond`).
    let several = v.duplicates > 0 || !v.extra.is_empty();
    let template = match template {
        Some(t) => t,
        None if several => Event::default(),
        None => {
            return super::Pipe::new(down.clone(), dead_bytes(), None)
                .execute(v, bytes)
                .await
        }
    };
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(DOWN_DEPTH);
    super::Pipe::new(tx, dead_bytes(), None)
        .execute(v, bytes)
        .await;
    loop {
        match rx.try_recv() {
            Ok(m) => {
                if down
                    .send(Down::Event(template.with_data(&m)))
                    .await
                    .is_err()
                {
                    return;
                }
            }
            Err(mpsc::error::TryRecvError::Disconnected) => return,
            Err(mpsc::error::TryRecvError::Empty) => break,
        }
    }
    // Copies or a message sent later (a delay, a duplicate): passed on as they come.
    let down = down.clone();
    tokio::spawn(async move {
        while let Some(m) = rx.recv().await {
            if down
                .send(Down::Event(template.with_data(&m)))
                .await
                .is_err()
            {
                return;
            }
        }
    });
}

/// One piece of an answer on its way to the client.
#[derive(Debug, Clone)]
pub enum Down {
    /// A JSON-RPC message: one SSE event, or the whole JSON body.
    Msg(Vec<u8>),
    /// An SSE event passed on as it came (an untouched message keeps its event id; priming
    /// events, `retry:` fields and comments pass too).
    Event(Event),
    /// Body bytes brownout does not interpret (an error page, a 202's body).
    Chunk(Bytes),
}

impl From<Vec<u8>> for Down {
    fn from(bytes: Vec<u8>) -> Down {
        Down::Msg(bytes)
    }
}

impl Down {
    /// The bytes of this item in an SSE stream.
    pub fn sse_bytes(&self) -> Vec<u8> {
        match self {
            Down::Msg(m) => Event::message(m).encode(),
            Down::Event(e) => e.encode(),
            Down::Chunk(b) => b.to_vec(),
        }
    }

    /// The JSON-RPC message this item carries, if any.
    pub fn message(&self) -> Option<&[u8]> {
        match self {
            Down::Msg(m) => Some(m),
            Down::Event(e) => e.data.as_deref().filter(|d| !d.is_empty()),
            Down::Chunk(_) => None,
        }
    }
}

/// [`super::dead_end`] for answer items, made once: a clone costs no allocation (a POST
/// no fault touched takes one).
pub fn dead_down() -> mpsc::Sender<Down> {
    static DEAD: std::sync::OnceLock<mpsc::Sender<Down>> = std::sync::OnceLock::new();
    DEAD.get_or_init(dead_end).clone()
}

/// Headers that describe one hop, not the message (RFC 9110 §7.6.1), plus the ones the
/// proxy recomputes. `accept-encoding` is dropped on the way up so the server answers
/// uncompressed bytes the engine can read.
pub fn is_hop_header(name: &HeaderName) -> bool {
    HOP_HEADERS.contains(&name.as_str())
}

/// The headers [`is_hop_header`] names (as [`HOP_NAMES`]).
const HOP_HEADERS: [&str; 12] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
    "accept-encoding",
];

/// [`HOP_HEADERS`] as header names, parsed once.
const HOP_NAMES: [HeaderName; 12] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
    header::HOST,
    header::CONTENT_LENGTH,
    header::ACCEPT_ENCODING,
];

/// Drop hop-by-hop headers, in place, and the headers a `Connection` header names. It runs
/// twice per relayed call, so: one pass over the names present (a handful) marks the hop
/// headers among them, and only those are removed, by their parsed names (removing all twelve
/// by text parsed and hashed twelve names).
pub fn strip_hop_headers(headers: &mut HeaderMap) {
    let mut found = 0u16;
    for name in headers.keys() {
        if let Some(i) = HOP_NAMES.iter().position(|h| h == name) {
            found |= 1 << i;
        }
    }
    if found & 1 != 0 {
        // `Connection` names more headers that are this hop's only (RFC 9110 §7.6.1).
        let named: Vec<HeaderName> = headers
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|t| !t.eq_ignore_ascii_case("close") && !t.eq_ignore_ascii_case("keep-alive"))
            .filter_map(|t| HeaderName::from_bytes(t.as_bytes()).ok())
            .collect();
        for name in named {
            headers.remove(name);
        }
    }
    for (i, name) in HOP_NAMES.iter().enumerate() {
        if found & (1 << i) != 0 {
            // Every value of the name goes.
            headers.remove(name);
        }
    }
}

pub fn content_type(headers: &HeaderMap) -> &str {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

pub fn is_sse(headers: &HeaderMap) -> bool {
    content_type(headers).starts_with("text/event-stream")
}

pub fn is_json(headers: &HeaderMap) -> bool {
    content_type(headers).starts_with("application/json")
}

/// A queue that gives `first`, then what `rest` gives.
pub fn prepend(first: Down, mut rest: mpsc::Receiver<Down>) -> mpsc::Receiver<Down> {
    let (tx, rx) = mpsc::channel(DOWN_DEPTH);
    tokio::spawn(async move {
        if tx.send(first).await.is_err() {
            return;
        }
        while let Some(item) = rest.recv().await {
            if tx.send(item).await.is_err() {
                return;
            }
        }
    });
    rx
}

/// Whether a client's `Accept` takes an SSE answer.
pub fn accepts_sse(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .any(|v| lists_sse(v.as_bytes()))
}

/// Whether an `Accept` value lists `text/event-stream` (or a wildcard that covers it).
/// On the raw bytes: it runs on every POST, and `HeaderValue::to_str` plus `str` splitting
/// cost more than the rest of the header handling together (callgrind, 64 sessions).
fn lists_sse(value: &[u8]) -> bool {
    value.split(|&b| b == b',').any(|t| {
        let t = t
            .split(|&b| b == b';')
            .next()
            .unwrap_or_default()
            .trim_ascii();
        t.eq_ignore_ascii_case(b"text/event-stream") || t == b"*/*" || t == b"text/*"
    })
}

/// The request ids in a client message (one, or several in a batch): the answers owed.
pub fn request_ids(bytes: &[u8]) -> Vec<Id> {
    ids_of_requests(classify(bytes))
}

/// [`request_ids`] of a message already classified.
pub fn ids_of_requests(message: Message<'_>) -> Vec<Id> {
    match message {
        Message::Single(v) if v.kind == Kind::Request => v.id.into_iter().collect(),
        Message::Batch(items) => items
            .into_iter()
            .filter_map(|i| i.ok())
            .filter(|v| v.kind == Kind::Request)
            .filter_map(|v| v.id)
            .collect(),
        _ => Vec::new(),
    }
}

/// The ids a server message answers.
pub fn answered_ids(bytes: &[u8]) -> Vec<Id> {
    classify(bytes).answered_ids()
}

/// How the answer body is shaped on its way out.
#[derive(Debug, Clone, Default)]
pub struct Shape {
    pub stream: StreamShape,
    /// Cut the connection when the answer starts (a `connection: reset` fault).
    pub reset: bool,
}

impl Shape {
    pub fn is_plain(&self) -> bool {
        !self.reset && self.stream == StreamShape::default()
    }
}

/// The schedule [`body`] keeps for a paced answer (a gap before each item, then its bytes
/// throttled), kept by whoever feeds the body: it tells when an item queued now has reached
/// the client, so the call is recorded with the latency the client felt.
#[derive(Debug, Clone)]
pub struct Pacer {
    gap: Duration,
    bytes_per_sec: Option<u64>,
    busy_until: std::time::Instant,
}

impl Pacer {
    /// `None` when the shape does not pace (nothing to wait for).
    pub fn new(shape: &StreamShape) -> Option<Pacer> {
        let gap = to_duration(shape.event_gap);
        (!gap.is_zero() || shape.bytes_per_sec.is_some()).then(|| Pacer {
            gap,
            bytes_per_sec: shape.bytes_per_sec,
            busy_until: std::time::Instant::now(),
        })
    }

    /// An item of `len` bytes is queued now: how long until its last byte is written.
    pub fn push(&mut self, len: usize) -> Duration {
        let now = std::time::Instant::now();
        let send = self.bytes_per_sec.map_or(Duration::ZERO, |bps| {
            Duration::from_secs_f64(len as f64 / bps.max(1) as f64)
        });
        self.busy_until = self.busy_until.max(now) + self.gap + send;
        self.busy_until - now
    }
}

/// The body of an answer: the items of `rx`, as SSE events or as one JSON body, shaped.
/// Cutting the stream is done by failing the body, which makes the server drop the
/// connection: the client sees the stream end without its answer.
pub fn body(mut rx: mpsc::Receiver<Down>, sse: bool, shape: Shape) -> Body {
    if shape.is_plain() {
        let stream = futures::stream::poll_fn(move |cx| {
            rx.poll_recv(cx).map(|item| {
                item.map(|item| {
                    let bytes = if sse {
                        item.sse_bytes()
                    } else {
                        match item {
                            Down::Msg(m) => m,
                            Down::Chunk(b) => b.to_vec(),
                            Down::Event(e) => e.data.unwrap_or_default(),
                        }
                    };
                    Ok::<_, std::io::Error>(Bytes::from(bytes))
                })
            })
        });
        return Body::from_stream(stream);
    }
    let stream = async_stream(move |tx| async move {
        let s = shape.stream;
        let gap = to_duration(s.event_gap);
        let mut events = 0u64;
        let mut sent = 0u64;
        while let Some(item) = rx.recv().await {
            if shape.reset {
                let _ = tx.send(Err(cut("connection reset (fault)"))).await;
                return;
            }
            if s.drop_after_events.is_some_and(|n| events >= n) {
                let _ = tx.send(Err(cut("stream dropped (fault)"))).await;
                return;
            }
            if !gap.is_zero() {
                tokio::time::sleep(gap).await;
            }
            let bytes = if sse {
                item.sse_bytes()
            } else {
                item.message()
                    .map(<[u8]>::to_vec)
                    .unwrap_or_else(|| item.sse_bytes())
            };
            events += 1;
            let mut rest: &[u8] = &bytes;
            while !rest.is_empty() {
                let budget = s
                    .drop_after_bytes
                    .map_or(u64::MAX, |n| n.saturating_sub(sent));
                if budget == 0 {
                    let _ = tx.send(Err(cut("stream dropped (fault)"))).await;
                    return;
                }
                // Throttled: 20 slices a second.
                let slice = s
                    .bytes_per_sec
                    .map_or(rest.len(), |bps| (bps / 20).max(1) as usize)
                    .min(rest.len())
                    .min(budget.min(usize::MAX as u64) as usize);
                let (now, later) = rest.split_at(slice);
                if tx.send(Ok(Bytes::copy_from_slice(now))).await.is_err() {
                    return;
                }
                sent += now.len() as u64;
                rest = later;
                if let Some(bps) = s.bytes_per_sec {
                    let secs = now.len() as f64 / bps.max(1) as f64;
                    tokio::time::sleep(Duration::from_secs_f64(secs)).await;
                }
            }
        }
        // A reset whose answer never came (the engine dropped it) still cuts; a stream that
        // reached its cut-off point is cut rather than ended cleanly.
        let reached = s.drop_after_events.is_some_and(|n| events >= n)
            || s.drop_after_bytes.is_some_and(|n| sent >= n);
        if shape.reset || reached {
            let _ = tx.send(Err(cut("stream cut (fault)"))).await;
        }
    });
    Body::from_stream(stream)
}

fn cut(why: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::ConnectionReset, why.to_string())
}

type Chunk = Result<Bytes, std::io::Error>;

/// A body stream fed by a task: `f` gets the sending half. (A small stand-in for the
/// `async-stream` crate's macro, without a macro.)
fn async_stream<F, Fut>(f: F) -> impl futures::Stream<Item = Chunk> + Send
where
    F: FnOnce(mpsc::Sender<Chunk>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, mut rx) = mpsc::channel::<Chunk>(8);
    tokio::spawn(f(tx));
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

#[cfg(test)]
mod tests {
    use super::lists_sse;

    /// Review2 F3: a header a `Connection` header names is the hop's own and goes too (it was
    /// passed on); every value of every hop header goes, whatever the names' case.
    #[test]
    fn headers_named_by_connection_are_dropped_with_the_hop_headers() {
        use axum::http::{HeaderMap, HeaderName, HeaderValue};
        let mut h = HeaderMap::new();
        for (k, v) in [
            ("CONNECTION", "keep-alive, X-Hop-A"),
            ("connection", "close,x-hop-b , Upgrade"),
            ("X-HOP-A", "1"),
            ("x-hop-b", "2"),
            ("Keep-Alive", "timeout=5"),
            ("TE", "trailers"),
            ("Te", "gzip"),
            ("Mcp-Session-Id", "s1"),
            ("X-Plain", "yes"),
        ] {
            h.append(
                HeaderName::from_bytes(k.as_bytes()).expect("name"),
                HeaderValue::from_static(v),
            );
        }
        super::strip_hop_headers(&mut h);
        let mut left: Vec<&str> = h.keys().map(|k| k.as_str()).collect();
        left.sort_unstable();
        assert_eq!(left, ["mcp-session-id", "x-plain"]);
    }

    #[test]
    fn an_accept_value_lists_sse_by_type_or_wildcard_in_any_case_and_spacing() {
        for yes in [
            "application/json, text/event-stream",
            "TEXT/Event-Stream;q=0.5",
            "application/json,*/*",
            " text/* ; q=1",
        ] {
            assert!(lists_sse(yes.as_bytes()), "{yes}");
        }
        for no in [
            "application/json",
            "text/event-streams",
            "",
            "text/html, image/*",
        ] {
            assert!(!lists_sse(no.as_bytes()), "{no}");
        }
    }
}
