//! POSTed messages: each passes the engine, then goes to the back as the verdict says —
//! the common untouched case short and without a task, a faulted one through a
//! [`Pipe`] and an [`Exchange`] with the server.

use super::answer::{abort, json_error, respond, respond_own, response, stall, status_response};
use super::{Back, Front, Who};
use crate::relay::http::{self, is_sse, request_ids, Down, Pacer, Shape, DOWN_DEPTH};
use crate::relay::http_back::{describe, Head, HttpBack, Pump, PumpEnd};
use crate::relay::http_sessions::SessionKeys;
use crate::relay::sse_stream::SseRelay;
use crate::relay::{relay_error, Pipe, Relay};
use axum::body::Body;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use brownout_core::jsonrpc::{classify, Message};
use brownout_core::verdict::HttpAction;
use brownout_core::Side;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

impl Front {
    /// One POSTed body: a JSON-RPC message or batch (through the engine), or anything else
    /// (passed on untouched, for the server to judge).
    pub(super) async fn post(
        self: &Arc<Self>,
        who: Who,
        path: String,
        headers: HeaderMap,
        body: Vec<u8>,
    ) -> Response {
        if matches!(classify(&body), Message::Invalid(_)) {
            return match &self.back {
                Back::Http(back) => self.raw(back, Method::POST, path, headers, body).await,
                Back::Child(_) => json_error(
                    StatusCode::BAD_REQUEST,
                    relay_error(None, "brownout: the body is not a JSON-RPC message"),
                ),
            };
        }
        let legacy = self.legacy_stream(&path);
        let owed = request_ids(&body);
        let sse_ok = http::accepts_sse(&headers);
        let (key, child_session) = match &self.back {
            Back::Child(child) => match child.session_for(&headers, &body, who.label.as_deref()) {
                Ok(joined) => (joined.key().to_string(), Some(joined)),
                Err(r) => return r,
            },
            Back::Http(_) => (who.key.clone(), None),
        };
        let new_session = match &self.back {
            Back::Http(_) => match self.admit(&who) {
                Ok(true) => Some(NewSession {
                    keys: Arc::clone(&self.keys),
                    wire: who.wire.clone(),
                }),
                Ok(false) => None,
                Err(r) => return r,
            },
            Back::Child(_) => None,
        };
        // A client that takes only a JSON answer can be sent one message: faults that would
        // send more (a duplicated answer) pass its call by, uncounted.
        let v = if sse_ok || legacy.is_some() {
            self.relay.handle(Side::Client, &key, &body)
        } else {
            self.relay.handle_single_answer(&key, &body)
        };
        let mut shape = Shape {
            stream: v.stream.clone().unwrap_or_default(),
            reset: false,
        };
        match v.http.clone() {
            Some(HttpAction::Status {
                code,
                headers,
                body,
            }) => return status_response(code, &headers, body),
            Some(HttpAction::Refuse) => return abort("refused (fault)"),
            Some(HttpAction::Stall) => return stall(self.stream_permit().ok()).await,
            Some(HttpAction::Reset) => shape.reset = true,
            None => {}
        }
        if v.is_pass() && legacy.is_none() {
            if let Back::Http(back) = &self.back {
                let call = Call {
                    key,
                    path,
                    headers,
                    body,
                    owed,
                    new_session,
                };
                return self.pass_post(back, call).await;
            }
        }
        let (down_tx, down_rx) = mpsc::channel::<Down>(DOWN_DEPTH);
        let (up_tx, up_rx) = mpsc::channel::<Vec<u8>>(16);
        let (head_tx, head_rx) = oneshot::channel::<Head>();
        // Legacy HTTP+SSE answers on the client's stream, never in the POST's body.
        let answers = legacy.clone().unwrap_or_else(|| down_tx.clone());
        let expects_answer = !owed.is_empty() && legacy.is_none();
        let mut process = None;
        match (&self.back, child_session) {
            (Back::Child(child), Some(joined)) => {
                let (head, p) = child.exchange(joined, &headers, up_rx, answers.clone());
                let _ = head_tx.send(head);
                process = Some(p);
            }
            (Back::Http(back), _) => {
                let exchange = Exchange {
                    relay: Arc::clone(&self.relay),
                    back: Arc::clone(back),
                    key: key.clone(),
                    path,
                    headers,
                    owed: if legacy.is_some() { Vec::new() } else { owed },
                    pace: v.stream.clone(),
                    new_session,
                };
                tokio::spawn(exchange.run(up_rx, head_tx, down_tx.clone()));
            }
            (Back::Child(_), None) => return abort("no session"),
        }
        Pipe::new(up_tx, answers, process).execute(v, body).await;
        drop(down_tx);
        let permit = self.stream_permit().ok();
        respond(head_rx, down_rx, expects_answer, shape, permit, sse_ok).await
    }

    /// The common case, kept short: no fault touched the request, so it goes up as it is;
    /// a JSON answer no fault touches comes back as it is, without a task or a queue.
    async fn pass_post(&self, back: &Arc<HttpBack>, call: Call) -> Response {
        let Call {
            key,
            path,
            headers,
            body,
            owed,
            new_session,
        } = call;
        let mut pump = Pump {
            relay: Arc::clone(&self.relay),
            key,
            down: crate::relay::dead_end(),
            owed,
            max_body: back.max_body,
            on_endpoint: None,
            resumable: false,
            pace: None,
        };
        let sse_ok = http::accepts_sse(&headers);
        let anonymous = !headers.contains_key("mcp-session-id");
        let mut resp = match back.send(Method::POST, &path, headers, body).await {
            Ok(r) => r,
            Err(e) => return answer_alone(pump, &describe(&e)).await,
        };
        let head = Head {
            status: resp.status(),
            headers: resp.headers().clone(),
        };
        // An `initialize` that opened a session: the connection's key served for it alone,
        // and the session goes on under the id the server gave; nothing stays behind.
        let opened =
            anonymous && head.status.is_success() && head.headers.contains_key("mcp-session-id");
        let (handed_over, new_session) = if opened {
            (new_session, None)
        } else {
            (None, new_session)
        };
        let hand_over = {
            let relay = Arc::clone(&self.relay);
            let key = pump.key.clone();
            move || {
                if let Some(ns) = handed_over {
                    relay.end_session(&key);
                    ns.keys.forget(&ns.wire);
                }
            }
        };
        let json = head.status.is_success() && http::is_json(&head.headers);
        if json {
            let mut bytes = Vec::new();
            loop {
                match resp.chunk().await {
                    Ok(Some(c)) if bytes.len() + c.len() <= back.max_body => {
                        bytes.extend_from_slice(&c)
                    }
                    Ok(Some(_)) => {
                        let why = "the upstream MCP server's answer is over --max-body-bytes";
                        return answer_alone(pump, why).await;
                    }
                    Ok(None) => break,
                    Err(e) => return answer_alone(pump, &describe(&e)).await,
                }
            }
            let v = self.relay.handle(Side::Server, &pump.key, &bytes);
            if v.is_pass() {
                hand_over();
                return response(head, Body::from(bytes));
            }
            let (tx, rx) = mpsc::channel::<Down>(DOWN_DEPTH);
            http::execute_down(v, bytes, None, &tx).await;
            drop(tx);
            hand_over();
            let (head_tx, head_rx) = oneshot::channel();
            let _ = head_tx.send(head);
            let permit = self.stream_permit().ok();
            let expects = !pump.owed.is_empty();
            return respond(head_rx, rx, expects, Shape::default(), permit, sse_ok).await;
        }
        if is_sse(&head.headers) && head.status.is_success() {
            let permit = self.stream_permit().ok();
            let st = SseRelay::new(
                Arc::clone(&self.relay),
                pump.key.clone(),
                resp,
                std::mem::take(&mut pump.owed),
                back.max_body,
                permit,
            )
            .on_end(Box::new(hand_over));
            return response(head, st.into_body());
        }
        // Anything else passes as bytes.
        let (tx, rx) = mpsc::channel::<Down>(DOWN_DEPTH);
        pump.down = tx;
        let status = head.status;
        tokio::spawn(async move {
            match pump.run(resp).await {
                PumpEnd::Failed(why) => pump.fail_owed(&why).await,
                _ => refused(&mut pump, status, new_session),
            }
        });
        response(head, http::body(rx, false, Shape::default()))
    }
}

/// The server gave no answer brownout can pass on (`why`): brownout answers every call of
/// the POST itself, each with a clear error.
async fn answer_alone(mut pump: Pump, why: &str) -> Response {
    let (tx, rx) = mpsc::channel(DOWN_DEPTH);
    pump.down = tx;
    pump.fail_owed(why).await;
    drop(pump);
    respond_own(rx, Shape::default()).await
}

/// A POST no fault touched, on its way to a server at a URL.
struct Call {
    key: String,
    path: String,
    headers: HeaderMap,
    body: Vec<u8>,
    owed: Vec<brownout_core::jsonrpc::Id>,
    /// The engine knew nothing of this session before this POST.
    new_session: Option<NewSession>,
}

/// A session this POST opened: forgotten if the server refuses it.
struct NewSession {
    keys: Arc<SessionKeys>,
    wire: String,
}

/// The server answered a POST with a status other than 2xx: calls it did not answer are
/// recorded as failed, and a session it refuses (4xx) that this POST opened is forgotten,
/// so ids a client makes up cost nothing.
fn refused(pump: &mut Pump, status: StatusCode, new_session: Option<NewSession>) {
    if status.is_success() {
        return;
    }
    pump.resolve_owed(status);
    if let Some(new) = new_session.filter(|_| status.is_client_error()) {
        pump.relay.end_session(&pump.key);
        new.keys.forget(&new.wire);
    }
}

/// One POST to a server at a URL: each message the client's POST turned into (one, or
/// more under a `duplicate` fault) is sent; the first answer's head becomes the client's.
struct Exchange {
    relay: Arc<Relay>,
    back: Arc<HttpBack>,
    key: String,
    path: String,
    headers: HeaderMap,
    owed: Vec<brownout_core::jsonrpc::Id>,
    /// How the client's answer is shaped (its pace is the latency the client feels).
    pace: Option<brownout_core::verdict::StreamShape>,
    /// The engine knew nothing of this session before this POST.
    new_session: Option<NewSession>,
}

impl Exchange {
    async fn run(
        mut self,
        mut up: mpsc::Receiver<Vec<u8>>,
        head: oneshot::Sender<Head>,
        down: mpsc::Sender<Down>,
    ) {
        let mut head = Some(head);
        while let Some(msg) = up.recv().await {
            let mut pump = Pump {
                relay: Arc::clone(&self.relay),
                key: self.key.clone(),
                down: down.clone(),
                owed: self.owed.clone(),
                max_body: self.back.max_body,
                on_endpoint: None,
                resumable: false,
                pace: self.pace.as_ref().and_then(Pacer::new),
            };
            let first = head.is_some();
            match self
                .back
                .send(Method::POST, &self.path, self.headers.clone(), msg)
                .await
            {
                Err(e) => {
                    if first {
                        pump.fail_owed(&describe(&e)).await;
                        head = None;
                    }
                }
                Ok(resp) => {
                    let status = resp.status();
                    let sse = is_sse(resp.headers());
                    if let Some(h) = head.take() {
                        let _ = h.send(Head {
                            status,
                            headers: resp.headers().clone(),
                        });
                    }
                    let new_session = if first { self.new_session.take() } else { None };
                    let work = async move {
                        match pump.run(resp).await {
                            PumpEnd::Failed(why) => pump.fail_owed(&why).await,
                            PumpEnd::Done if !status.is_success() => {
                                refused(&mut pump, status, new_session)
                            }
                            // A stream that ends before its answer is fine when the client
                            // can resume it (it was given an event id); else it is a failure.
                            PumpEnd::Done if sse && status.is_success() && !pump.resumable => {
                                pump.fail_owed(
                                    "the upstream MCP server ended the stream before answering",
                                )
                                .await
                            }
                            _ => {}
                        }
                    };
                    if first {
                        work.await;
                    } else {
                        tokio::spawn(work);
                    }
                }
            }
        }
    }
}
