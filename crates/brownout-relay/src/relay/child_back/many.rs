//! The child back's sessions for the HTTP front: one server process per session, started
//! by an `initialize`, found by its `Mcp-Session-Id`, its answers routed to the POST that
//! asked (see [`crate::relay::child_session`]), ended by DELETE, idleness or the process's
//! exit; and the timed process faults that hit every session's process.

use super::{
    lock, new_session_id, not_found, session_header, short, ChildBack, Joined, ROUTE_TTL,
    STOP_GRACE,
};
use crate::relay::answer::Answer;
use crate::relay::child::{describe, terminate, ProcessHandle, ServerProcess};
use crate::relay::child_session::{duplicate_id_error, ChildSession, Route};
use crate::relay::framing::{spawn_writer, Frame, LineReader};
use crate::relay::head::Head;
use crate::relay::head::{Headers, CONTENT_TYPE, SESSION_ID};
use crate::relay::http::{request_ids, Down};
use crate::relay::{dead_bytes, relay_error, to_duration, Pipe, OUTBOX_DEPTH};
use brownout_core::jsonrpc::{classify, Kind, Message};
use brownout_core::Side;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::io::BufReader;
use tokio::sync::{mpsc, watch};

impl ChildBack {
    /// The session a POST belongs to (its `Mcp-Session-Id`, or a new one for
    /// `initialize`), with its request ids reserved. A request whose id is already in
    /// flight in the session is refused with `-32600`.
    pub fn session_for(
        self: &Arc<Self>,
        headers: &Headers,
        body: &[u8],
        label: Option<&str>,
    ) -> Result<Joined, Answer> {
        let (session, new) = match session_header(headers) {
            Some(id) => match lock(&self.sessions).get(id).cloned() {
                Some(s) => (s, false),
                None => return Err(not_found()),
            },
            None => (self.new_session(body, label)?, true),
        };
        session.touch();
        let ids = request_ids(body);
        match session.reserve(&ids) {
            Ok(post) => Ok(Joined {
                session,
                new,
                post,
                ids,
                opened: false,
            }),
            Err(dup) => Err(Answer::json(200, duplicate_id_error(&dup))),
        }
    }

    fn new_session(
        self: &Arc<Self>,
        body: &[u8],
        label: Option<&str>,
    ) -> Result<Arc<ChildSession>, Answer> {
        let is_init = matches!(classify(body), Message::Single(v) if v.kind == Kind::Request && v.method.as_deref() == Some("initialize"));
        if !is_init {
            return Err(Answer::json(
                400,
                relay_error(None, "brownout: no Mcp-Session-Id: initialize first"),
            ));
        }
        let open = self.session_count();
        if open >= self.max_sessions {
            let msg = format!(
                "brownout: {open} sessions are open, the limit (--max-sessions); end one with DELETE"
            );
            return Err(Answer::json(503, relay_error(None, &msg)));
        }
        self.start_session(label)
            .map_err(|e| Answer::json(502, relay_error(None, &format!("brownout: {e}"))))
    }

    fn start_session(self: &Arc<Self>, label: Option<&str>) -> std::io::Result<Arc<ChildSession>> {
        self.keeper.call_once(|| {
            tokio::spawn(keep(Arc::downgrade(self)));
            tokio::spawn(timers(Arc::downgrade(self)));
            let me = Arc::downgrade(self);
            self.relay
                .set_back_status(Box::new(move || match me.upgrade() {
                    Some(b) => serde_json::json!({
                        "processes": b.session_count(),
                        "routes": b.route_count(),
                    }),
                    None => serde_json::Value::Null,
                }));
        });
        let (mut server, stdin, stdout) = ServerProcess::spawn(&self.spec)?;
        let (to_server, to_server_rx) = mpsc::channel::<Vec<u8>>(OUTBOX_DEPTH);
        spawn_writer(stdin, to_server_rx, None);
        let process = ProcessHandle::default();
        process.set(server.pid);
        let (ended_tx, ended_rx) = watch::channel(None);
        // The engine's key is stable across runs (see `http_sessions`): the client's label,
        // else the session's order of arrival; the wire id stays random.
        let key = match label {
            Some(l) => format!("label:{l}"),
            None => format!("http-{}", self.arrived.fetch_add(1, Ordering::Relaxed) + 1),
        };
        let key = match &self.namespace {
            Some(ns) => brownout_core::session_key::namespaced(ns, &key),
            None => key,
        };
        let session = Arc::new(ChildSession::new(
            new_session_id(),
            key,
            to_server,
            process,
            ended_rx,
        ));
        lock(&self.sessions).insert(session.id.clone(), Arc::clone(&session));
        // Server → client: through the engine, then to the caller (answers) or the
        // session's stream (anything else).
        let (unrouted_tx, mut unrouted_rx) = mpsc::channel::<Vec<u8>>(OUTBOX_DEPTH);
        let reader = {
            let relay = Arc::clone(&self.relay);
            let session = Arc::clone(&session);
            let max = self.max_message;
            let unrouted: Pipe<Vec<u8>, Vec<u8>> = Pipe::new(unrouted_tx, dead_bytes(), None);
            tokio::spawn(async move {
                let mut reader = LineReader::new(BufReader::new(stdout), max);
                while let Ok(Some(frame)) = reader.next().await {
                    let Frame::Line(bytes) = frame else {
                        eprintln!("brownout: a server message over {max} bytes was skipped");
                        continue;
                    };
                    let v = relay.handle(Side::Server, session.key(), &bytes);
                    session.deliver(v, bytes, &unrouted).await;
                }
            })
        };
        {
            let session = Arc::clone(&session);
            tokio::spawn(async move {
                while let Some(bytes) = unrouted_rx.recv().await {
                    session.send_unrouted(bytes).await;
                }
            });
        }
        // The process's end ends the session; calls in flight get a clear error.
        {
            let me = Arc::clone(self);
            let session = Arc::clone(&session);
            tokio::spawn(async move {
                let status = tokio::select! {
                    s = server.child.wait() => s,
                    _ = session.stop.notified() => terminate(&mut server.child, STOP_GRACE).await,
                };
                session.process.set(None);
                let how = match status {
                    Ok(status) => describe(&status),
                    Err(e) => e.to_string(),
                };
                lock(&me.sessions).remove(&session.id);
                // What the server wrote before it ended is still answered.
                let _ = tokio::time::timeout(Duration::from_secs(1), reader).await;
                let failed = me.relay.server_gone(
                    session.key(),
                    &format!("the MCP server exited before answering ({how})"),
                    &format!("the server of session {} ended ({how})", short(&session.id)),
                );
                for f in failed {
                    if let Some(route) = session.take(std::slice::from_ref(&f.id)) {
                        let _ = route.down.send(Down::Msg(f.reply)).await;
                    }
                }
                me.relay.end_session(session.key());
                session.clear();
                let _ = ended_tx.send(Some(how));
            });
        }
        Ok(session)
    }

    /// Join a POST to its session: answers to its requests are routed to `answers`; what
    /// the pipe forwards (`up`) goes to the process. Returns the head of the client's
    /// answer.
    pub fn open_post(
        &self,
        mut joined: Joined,
        headers: &Headers,
        up: mpsc::Receiver<Vec<u8>>,
        answers: mpsc::Sender<Down>,
    ) -> (Head, ProcessHandle) {
        let accepts_sse = headers
            .get(&crate::relay::head::ACCEPT)
            .is_some_and(|a| a.contains("text/event-stream"));
        let session = Arc::clone(&joined.session);
        session.open(
            joined.post,
            &Route {
                down: answers,
                sse: accepts_sse,
            },
        );
        joined.opened = true;
        let owed = std::mem::take(&mut joined.ids);
        tokio::spawn(Arc::clone(&session).forward_post(joined.post, owed.clone(), up));
        let mut h = Headers::new();
        let (status, ct) = if owed.is_empty() {
            (202, None)
        } else if accepts_sse {
            (200, Some("text/event-stream"))
        } else {
            (200, Some("application/json"))
        };
        if let Some(ct) = ct {
            h.set(&CONTENT_TYPE, ct);
        }
        if joined.new {
            h.set(&SESSION_ID, &session.id);
        }
        (Head { status, headers: h }, session.process.clone())
    }

    /// GET: the session's stream of server-initiated messages: the head and the items of
    /// the stream, for the front to serve.
    pub fn open_stream(&self, headers: &Headers) -> Result<(Head, mpsc::Receiver<Down>), Answer> {
        let Some(id) = session_header(headers) else {
            let why = "brownout: GET needs an Mcp-Session-Id";
            return Err(Answer::text(400, why.into()));
        };
        let Some(session) = lock(&self.sessions).get(id).cloned() else {
            return Err(not_found());
        };
        session.touch();
        let (tx, rx) = mpsc::channel::<Down>(crate::relay::http::DOWN_DEPTH);
        session.set_stream(tx);
        Ok((Head::own(200, "text/event-stream"), rx))
    }

    /// DELETE: end the session and its process (SIGTERM, then SIGKILL); answers once the
    /// process is gone.
    pub async fn delete(&self, headers: &Headers) -> Answer {
        let Some(id) = session_header(headers) else {
            let why = "brownout: DELETE needs an Mcp-Session-Id";
            return Answer::text(400, why.into());
        };
        let Some(session) = lock(&self.sessions).remove(id) else {
            return not_found();
        };
        stop(&session).await;
        Answer::Status(200)
    }

    /// Stop every session's process (shutdown), each SIGTERM then SIGKILL.
    pub async fn stop_all(&self) {
        let all: Vec<_> = lock(&self.sessions).drain().map(|(_, s)| s).collect();
        futures::future::join_all(all.iter().map(|s| stop(s))).await;
    }
}

/// Ask a session's process to stop and wait until it has (bounded: the keeper kills it
/// after the grace period).
async fn stop(session: &ChildSession) {
    session.stop.notify_one();
    let mut ended = session.ended.clone();
    let _ = tokio::time::timeout(
        STOP_GRACE + Duration::from_secs(3),
        ended.wait_for(Option::is_some),
    )
    .await;
}

/// The back's housekeeping, while it lives: end idle sessions, forget stale routes.
async fn keep(back: Weak<ChildBack>) {
    let tick = match back.upgrade() {
        Some(b) => (b.idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(1)),
        None => return,
    };
    let mut interval = tokio::time::interval(tick);
    loop {
        interval.tick().await;
        let Some(back) = back.upgrade() else { return };
        for s in back.sessions() {
            s.sweep(ROUTE_TTL);
            if s.idle_for().is_some_and(|d| d >= back.idle) {
                let gone = lock(&back.sessions).remove(s.id()).is_some();
                if gone {
                    eprintln!(
                        "brownout: session {} idle for {}s; ending it and stopping its server",
                        short(s.id()),
                        back.idle.as_secs()
                    );
                    let s = Arc::clone(&s);
                    tokio::spawn(async move { stop(&s).await });
                }
            }
        }
    }
}

/// Timed process faults, while the back lives: sleep until the next one is due (at most a
/// second: a reloaded plan may bring an earlier one), then fire it.
async fn timers(back: Weak<ChildBack>) {
    loop {
        let wait = match back.upgrade() {
            Some(b) if b.fire_timers() => Duration::from_millis(200),
            Some(b) => {
                let relay = &b.relay;
                relay
                    .next_timer()
                    .map(|t| to_duration(t.saturating_sub(relay.now())))
                    .unwrap_or(Duration::from_secs(1))
                    .clamp(Duration::from_millis(20), Duration::from_secs(1))
            }
            None => return,
        };
        tokio::time::sleep(wait).await;
    }
}

impl ChildBack {
    /// Timed process faults (`at_ms` of run time) that are due hit every session's process
    /// then alive. With no session yet, they wait for the first one (a fault is never
    /// counted without being done). Returns whether a due fault waits for a session.
    fn fire_timers(&self) -> bool {
        let Some(due) = self.relay.next_timer() else {
            return false;
        };
        if due > self.relay.now() {
            return false;
        }
        let sessions = self.sessions();
        let Some(first) = sessions.first() else {
            return true;
        };
        for a in self.relay.on_timer(first.key()) {
            for s in &sessions {
                s.process.apply(a);
            }
        }
        false
    }
}
