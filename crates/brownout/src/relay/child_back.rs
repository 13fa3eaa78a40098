//! The stdio back behind the HTTP front: a stdio-only MCP server, served over streamable
//! HTTP with faults (`brownout proxy http -- CMD`).
//!
//! Each `initialize` starts one server process and one session (`Mcp-Session-Id`); the
//! process's lines pass the engine under that session's key. Answers are routed by
//! JSON-RPC id to the POST that asked; other server messages (notifications, requests) go
//! to the session's GET stream, else to an open SSE answer. When the process dies, every
//! request in flight gets a clear error and the session ends (the client sees 404 and
//! initializes again); DELETE ends the session and the process.

// Early answers of a handler are `Response`s, the axum way; boxing them buys nothing here.
#![allow(clippy::result_large_err)]

use super::child::{describe, ChildSpec, ProcessHandle, ServerProcess};
use super::framing::{Frame, LineReader};
use super::http::{answered_ids, relay_error, Down};
use super::http_back::{dead_end, Head};
use super::http_front::Front;
use super::stdio::spawn_writer;
use super::{Pipe, Relay, OUTBOX_DEPTH};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use brownout_core::jsonrpc::{classify, Id, Kind, Message};
use brownout_core::Side;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::io::BufReader;
use tokio::sync::mpsc;

/// Where one answer goes: the POST that asked, and whether it streams (SSE).
struct Route {
    down: mpsc::Sender<Down>,
    sse: bool,
}

/// One session: one server process.
pub struct ChildSession {
    id: String,
    to_server: mpsc::Sender<Vec<u8>>,
    routes: Mutex<HashMap<Id, Route>>,
    stream: Mutex<Option<mpsc::Sender<Down>>>,
    process: ProcessHandle,
}

pub struct ChildBack {
    spec: ChildSpec,
    relay: Arc<Relay>,
    max_message: usize,
    /// Most sessions (server processes) at once.
    max_sessions: usize,
    sessions: Mutex<HashMap<String, Arc<ChildSession>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "application/json")],
        relay_error(
            None,
            "brownout: no such session (it ended); initialize again",
        ),
    )
        .into_response()
}

/// A session id: 128 random bits, hex. Not a secret of brownout's, but unguessable.
fn new_session_id() -> String {
    let mut b = [0u8; 16];
    if getrandom::fill(&mut b).is_err() {
        // No OS randomness: fall back to time and a counter (still unique).
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        b = t.to_le_bytes();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl ChildBack {
    pub fn new(
        spec: ChildSpec,
        relay: Arc<Relay>,
        max_message: usize,
        max_sessions: usize,
    ) -> ChildBack {
        ChildBack {
            spec,
            relay,
            max_message,
            max_sessions,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    pub fn session_count(&self) -> usize {
        lock(&self.sessions).len()
    }

    /// The session a POST belongs to: its `Mcp-Session-Id`, or a new one for `initialize`.
    pub fn session_for(
        self: &Arc<Self>,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<(Arc<ChildSession>, bool), Response> {
        if let Some(id) = headers.get("mcp-session-id").and_then(|v| v.to_str().ok()) {
            return lock(&self.sessions)
                .get(id)
                .cloned()
                .map(|s| (s, false))
                .ok_or_else(not_found);
        }
        let is_init = matches!(classify(body), Message::Single(v) if v.kind == Kind::Request && v.method.as_deref() == Some("initialize"));
        if !is_init {
            return Err((
                StatusCode::BAD_REQUEST,
                [(header::CONTENT_TYPE, "application/json")],
                relay_error(None, "brownout: no Mcp-Session-Id: initialize first"),
            )
                .into_response());
        }
        let open = self.session_count();
        if open >= self.max_sessions {
            let msg = format!(
                "brownout: {open} sessions are open, the limit (--max-sessions); end one with DELETE"
            );
            return Err((
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::CONTENT_TYPE, "application/json")],
                relay_error(None, &msg),
            )
                .into_response());
        }
        self.start_session().map(|s| (s, true)).map_err(|e| {
            (
                StatusCode::BAD_GATEWAY,
                [(header::CONTENT_TYPE, "application/json")],
                relay_error(None, &format!("brownout: {e}")),
            )
                .into_response()
        })
    }

    fn start_session(self: &Arc<Self>) -> std::io::Result<Arc<ChildSession>> {
        let (mut server, stdin, stdout) = ServerProcess::spawn(&self.spec)?;
        let (to_server, to_server_rx) = mpsc::channel::<Vec<u8>>(OUTBOX_DEPTH);
        spawn_writer(stdin, to_server_rx);
        let process = ProcessHandle::default();
        process.set(server.pid);
        let session = Arc::new(ChildSession {
            id: new_session_id(),
            to_server,
            routes: Mutex::new(HashMap::new()),
            stream: Mutex::new(None),
            process,
        });
        lock(&self.sessions).insert(session.id.clone(), Arc::clone(&session));
        // Server → client: through the engine, then routed.
        let (routed_tx, mut routed_rx) = mpsc::channel::<Vec<u8>>(OUTBOX_DEPTH);
        {
            let relay = Arc::clone(&self.relay);
            let key = session.id.clone();
            let max = self.max_message;
            let pipe: Pipe<Vec<u8>, Vec<u8>> = Pipe::new(routed_tx.clone(), dead_end(), None);
            tokio::spawn(async move {
                let mut reader = LineReader::new(BufReader::new(stdout), max);
                while let Ok(Some(frame)) = reader.next().await {
                    let Frame::Line(bytes) = frame else {
                        eprintln!("brownout: a server message over {max} bytes was skipped");
                        continue;
                    };
                    let v = relay.handle(Side::Server, &key, &bytes);
                    pipe.execute(v, bytes).await;
                }
            });
        }
        {
            let session = Arc::clone(&session);
            tokio::spawn(async move {
                while let Some(bytes) = routed_rx.recv().await {
                    session.route(bytes).await;
                }
            });
        }
        // The process's end ends the session; calls in flight get a clear error.
        {
            let me = Arc::clone(self);
            let session = Arc::clone(&session);
            tokio::spawn(async move {
                let how = match server.child.wait().await {
                    Ok(status) => describe(&status),
                    Err(e) => e.to_string(),
                };
                lock(&me.sessions).remove(&session.id);
                let failed = me.relay.fail_pending(
                    &session.id,
                    &format!("the MCP server exited before answering ({how})"),
                );
                if !failed.is_empty() {
                    eprintln!(
                        "brownout: the server of session {} ended ({how}); {} call(s) in flight answered with an error",
                        short(&session.id),
                        failed.len()
                    );
                }
                for f in failed {
                    session.route(f.reply).await;
                }
                me.relay.end_session(&session.id);
                lock(&session.routes).clear();
                lock(&session.stream).take();
                drop(routed_tx);
            });
        }
        Ok(session)
    }

    /// Join a POST to its session: answers to `owed` ids are routed to `answers`; what the
    /// pipe forwards (`up`) goes to the process. Returns the head of the client's answer.
    pub fn exchange(
        &self,
        session: &Arc<ChildSession>,
        new: bool,
        headers: &HeaderMap,
        owed: &[Id],
        mut up: mpsc::Receiver<Vec<u8>>,
        answers: mpsc::Sender<Down>,
    ) -> (Head, ProcessHandle) {
        let accepts_sse = headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|a| a.contains("text/event-stream"));
        {
            let mut routes = lock(&session.routes);
            for id in owed {
                routes.insert(
                    id.clone(),
                    Route {
                        down: answers.clone(),
                        sse: accepts_sse,
                    },
                );
            }
        }
        let to_server = session.to_server.clone();
        tokio::spawn(async move {
            while let Some(m) = up.recv().await {
                if to_server.send(m).await.is_err() {
                    break;
                }
            }
        });
        let mut h = HeaderMap::new();
        let (status, ct) = if owed.is_empty() {
            (StatusCode::ACCEPTED, None)
        } else if accepts_sse {
            (StatusCode::OK, Some("text/event-stream"))
        } else {
            (StatusCode::OK, Some("application/json"))
        };
        if let Some(ct) = ct {
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
        }
        if new {
            if let Ok(v) = HeaderValue::from_str(&session.id) {
                h.insert("mcp-session-id", v);
            }
        }
        (Head { status, headers: h }, session.process.clone())
    }

    /// GET: the session's stream of server-initiated messages.
    pub async fn open_stream(&self, front: &Front, headers: &HeaderMap) -> Response {
        let Some(id) = headers.get("mcp-session-id").and_then(|v| v.to_str().ok()) else {
            return (
                StatusCode::BAD_REQUEST,
                "brownout: GET needs an Mcp-Session-Id",
            )
                .into_response();
        };
        let Some(session) = lock(&self.sessions).get(id).cloned() else {
            return not_found();
        };
        let (tx, rx) = mpsc::channel::<Down>(super::http::DOWN_DEPTH);
        *lock(&session.stream) = Some(tx);
        let mut h = HeaderMap::new();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        front.stream_response(
            Head {
                status: StatusCode::OK,
                headers: h,
            },
            rx,
        )
    }

    /// DELETE: end the session and its process.
    pub async fn delete(&self, headers: &HeaderMap) -> Response {
        let Some(id) = headers.get("mcp-session-id").and_then(|v| v.to_str().ok()) else {
            return (
                StatusCode::BAD_REQUEST,
                "brownout: DELETE needs an Mcp-Session-Id",
            )
                .into_response();
        };
        let Some(session) = lock(&self.sessions).remove(id) else {
            return not_found();
        };
        session
            .process
            .apply(brownout_core::verdict::ProcessAction::Kill(
                brownout_core::verdict::Signal::Term,
            ));
        StatusCode::OK.into_response()
    }

    /// Stop every session's process (shutdown).
    pub fn stop_all(&self) {
        for (_, s) in lock(&self.sessions).drain() {
            if let Some(pid) = s.process.pid() {
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            }
        }
    }
}

impl ChildSession {
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Send one server message to where it belongs.
    async fn route(&self, bytes: Vec<u8>) {
        let ids = answered_ids(&bytes);
        if let Some(id) = ids.first() {
            let route = lock(&self.routes).remove(id);
            if let Some(r) = route {
                let _ = r.down.send(Down::Msg(bytes)).await;
            }
            return;
        }
        // Not an answer: the GET stream, else an open SSE answer.
        let stream = lock(&self.stream).clone();
        if let Some(s) = stream {
            if s.send(Down::Msg(bytes.clone())).await.is_ok() {
                return;
            }
            lock(&self.stream).take();
        }
        let open = lock(&self.routes)
            .values()
            .find(|r| r.sse && !r.down.is_closed())
            .map(|r| r.down.clone());
        if let Some(d) = open {
            let _ = d.send(Down::Msg(bytes)).await;
        }
    }
}

fn short(id: &str) -> &str {
    &id[..id.len().min(8)]
}
