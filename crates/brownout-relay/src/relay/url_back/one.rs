//! The URL back's one session for the stdio front (`brownout proxy stdio --upstream URL`):
//! a stdio client (a desktop agent) reaches a remote streamable HTTP server through the
//! faults, brownout holding the HTTP session on its behalf.
//!
//! Each message from stdin passes the engine and is POSTed on its own (so a slow call never
//! holds up the others), with the session id the server gave at `initialize` and the
//! negotiated `MCP-Protocol-Version`. Answers (JSON or SSE) pass the engine message by
//! message to stdout (see [`crate::relay::upstream_answer`]: every call is answered, a stream
//! that ends early is resumed); after `notifications/initialized` the server's GET stream
//! is opened for server-initiated messages. A failed or non-2xx answer gives the caller a
//! clear JSON-RPC error. At most `max_in_flight` POSTs are in flight at once (then stdin
//! waits). An upstream that cannot be reached at start is reported on stderr; the relay
//! keeps going (each call gets an error until the server answers). EOF on stdin ends the
//! session (DELETE) and brownout.

use crate::relay::head::{Headers, ACCEPT, CONTENT_TYPE, SESSION_ID};
use crate::relay::http::Down;
use crate::relay::http_back::{describe, Pump, Upstream};
use crate::relay::layers::{Carrier, Client, ClientEnd, OneSession};
use crate::relay::stdio::SESSION;
use crate::relay::upstream_answer;
use crate::relay::{Pipe, Relay, OUTBOX_DEPTH};
use axum::http::{header, HeaderMap, HeaderValue};
use brownout_core::jsonrpc::{classify, Kind, Message};
use brownout_core::verdict::Verdict;
use hyper::Method;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, Semaphore};

/// What the server told us about the session.
#[derive(Default)]
struct Session {
    id: Option<String>,
    protocol: Option<String>,
    stream_opened: bool,
    /// The task relaying the server's GET stream, ended with the session.
    stream: Option<tokio::task::AbortHandle>,
}

struct Link {
    back: Arc<Upstream>,
    relay: Arc<Relay>,
    session: Mutex<Session>,
    down: mpsc::Sender<Down>,
}

impl Link {
    fn headers(&self) -> Headers {
        let mut h = HeaderMap::new();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        let s = self.session.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(v) =
            s.id.as_deref()
                .and_then(|id| HeaderValue::from_str(id).ok())
        {
            h.insert("mcp-session-id", v);
        }
        if let Some(v) = s
            .protocol
            .as_deref()
            .and_then(|p| HeaderValue::from_str(p).ok())
        {
            h.insert("mcp-protocol-version", v);
        }
        Headers::from(h)
    }

    fn pump(&self, owed: Vec<brownout_core::jsonrpc::Id>) -> Pump {
        Pump {
            relay: Arc::clone(&self.relay),
            key: SESSION.to_string(),
            down: self.down.clone(),
            owed,
            max_body: self.back.max_body,
            on_endpoint: None,
            resumable: false,
            pace: None,
        }
    }

    /// POST one message and carry its answer back.
    async fn post(self: Arc<Self>, msg: Vec<u8>) {
        let owed = crate::relay::http::request_ids(&msg);
        let initialized = matches!(classify(&msg), Message::Single(v) if v.kind == Kind::Notification && v.method.as_deref() == Some("notifications/initialized"));
        let mut pump = self.pump(owed);
        let resp = match self
            .back
            .send(Method::POST, &self.back.path, self.headers(), msg)
            .await
        {
            Ok(r) => r,
            Err(e) => return pump.fail_owed(&describe(&e)).await,
        };
        if let Some(id) = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            self.session.lock().unwrap_or_else(|p| p.into_inner()).id = Some(id.to_string());
        }
        let status = resp.status();
        if !status.is_success() {
            let why = match status.as_u16() {
                404 => "the upstream MCP server answered HTTP 404: the session expired".to_string(),
                s => format!("the upstream MCP server answered HTTP {s}"),
            };
            return pump.fail_owed(&why).await;
        }
        upstream_answer::carry(&mut pump, &self.back, self.headers(), resp).await;
        if initialized {
            self.open_stream().await;
        }
    }

    /// The server's stream of server-initiated messages (if it offers one).
    async fn open_stream(self: &Arc<Self>) {
        {
            let mut s = self.session.lock().unwrap_or_else(|p| p.into_inner());
            if s.stream_opened {
                return;
            }
            s.stream_opened = true;
        }
        let mut h = self.headers();
        h.set(&ACCEPT, "text/event-stream");
        h.remove(&CONTENT_TYPE);
        let me = Arc::clone(self);
        let task = tokio::spawn(async move {
            if let Ok(resp) = me
                .back
                .send(Method::GET, &me.back.path, h, Vec::new())
                .await
            {
                if resp.status().is_success() && crate::relay::http::is_sse(resp.headers()) {
                    me.pump(Vec::new()).run(resp).await;
                }
            }
        });
        self.session
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .stream = Some(task.abort_handle());
    }
}

/// Open the stdio front's one session with the server at `upstream`: each message the
/// carrier forwards is POSTed (at most `max_in_flight` at once), its answers go to `client`.
pub(super) fn start(
    upstream: &Arc<Upstream>,
    relay: &Arc<Relay>,
    max_in_flight: usize,
    client: Client,
) -> (Posts, One) {
    crate::relay::http_back::warn_if_unreachable(upstream);
    let (down_tx, mut down_rx) = mpsc::channel::<Down>(OUTBOX_DEPTH);
    let link = Arc::new(Link {
        back: Arc::clone(upstream),
        relay: Arc::clone(relay),
        session: Mutex::new(Session::default()),
        down: down_tx,
    });
    let to_client = client.outbox;
    // Answers to stdout; the negotiated protocol version is noted on the way.
    {
        let link = Arc::clone(&link);
        let to_client = to_client.clone();
        tokio::spawn(async move {
            while let Some(item) = down_rx.recv().await {
                let Some(m) = item.message().map(<[u8]>::to_vec) else {
                    continue;
                };
                note_protocol(&link, &m);
                if to_client.send(m).await.is_err() {
                    break;
                }
            }
        });
    }
    let (up_tx, mut up_rx) = mpsc::channel::<Vec<u8>>(OUTBOX_DEPTH);
    {
        let link = Arc::clone(&link);
        let in_flight = Arc::new(Semaphore::new(max_in_flight.max(1)));
        tokio::spawn(async move {
            while let Some(m) = up_rx.recv().await {
                let Ok(permit) = Arc::clone(&in_flight).acquire_owned().await else {
                    break;
                };
                let post = Arc::clone(&link).post(m);
                tokio::spawn(async move {
                    post.await;
                    drop(permit);
                });
            }
        });
    }
    let pipe: Pipe<Vec<u8>, Vec<u8>> = Pipe::new(up_tx, to_client, None);
    (Posts(pipe), One { link })
}

/// The stdio front's one session with a server at a URL.
pub struct One {
    link: Arc<Link>,
}

impl OneSession for One {
    /// Until the client's input ends or a signal; then the session is ended politely
    /// (DELETE).
    async fn serve(self, client: ClientEnd) -> anyhow::Result<i32> {
        let mut sigterm =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let mut sigint = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
        let ClientEnd { closed, reader } = client;
        tokio::select! {
            _ = closed => {}
            _ = sigterm.recv() => {}
            _ = sigint.recv() => {}
        }
        // Nothing more from the client.
        reader.abort();
        let _ = reader.await;
        let link = self.link;
        if let Some(stream) = link
            .session
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .stream
            .take()
        {
            stream.abort();
        }
        // End the session politely.
        let headers = link.headers();
        if headers.contains(&SESSION_ID) {
            let _ = tokio::time::timeout(
                std::time::Duration::from_secs(2),
                link.back
                    .send(Method::DELETE, &link.back.path, headers, Vec::new()),
            )
            .await;
        }
        Ok(0)
    }
}

/// The back as the stdio front sees it: each message the pipe forwards is POSTed.
pub struct Posts(Pipe);

impl Carrier for Posts {
    async fn send(&mut self, v: Verdict, msg: Vec<u8>) {
        self.0.execute(v, msg).await;
    }
}

fn note_protocol(link: &Link, m: &[u8]) {
    if link
        .session
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .protocol
        .is_some()
    {
        return;
    }
    #[derive(serde::Deserialize)]
    struct R {
        result: Option<Init>,
    }
    #[derive(serde::Deserialize)]
    struct Init {
        #[serde(rename = "protocolVersion")]
        protocol_version: Option<String>,
    }
    if let Ok(R {
        result: Some(Init {
            protocol_version: Some(v),
        }),
    }) = serde_json::from_slice::<R>(m)
    {
        link.session
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .protocol = Some(v);
    }
}
