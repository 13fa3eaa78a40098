//! POSTs to a server at a URL: the untouched one the short way (no task, no queue, a JSON
//! answer no fault touches passed on as it came), and the exchange of a faulted one (each
//! message the POST's pipe forwards is sent; the first answer's head is the client's).

use super::{NewSession, UrlBack};
use crate::relay::answer::{Answer, Streams};
use crate::relay::head::{Head, Headers, SESSION_ID};
use crate::relay::http::{self, Down, Pacer, DOWN_DEPTH};
use crate::relay::http_back::{describe, Pump, PumpEnd, Upstream};
use crate::relay::layers::Post;
use crate::relay::sse_stream::SseRelay;
use crate::relay::up_client::UpResponse;
use crate::relay::Relay;
use brownout_core::Side;
use hyper::Method;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

impl UrlBack {
    /// The common case, kept short: no fault touched the request, so it goes up as it is;
    /// a JSON answer no fault touches comes back as it is, without a task or a queue.
    pub(super) async fn pass_post(
        &self,
        streams: &Streams,
        new_session: Option<NewSession>,
        post: Post,
    ) -> Answer {
        let Post {
            key,
            path,
            headers,
            body,
            owed,
        } = post;
        let back = &self.upstream;
        let mut pump = Pump {
            relay: Arc::clone(&self.relay),
            key,
            down: http::dead_down(),
            owed,
            max_body: back.max_body,
            on_endpoint: None,
            resumable: false,
            pace: None,
        };
        let sse_ok = headers.accepts_sse();
        let anonymous = !headers.contains(&SESSION_ID);
        let mut resp = match back.send(Method::POST, &path, headers, body).await {
            Ok(r) => r,
            Err(e) => return answer_alone(pump, &describe(&e)).await,
        };
        let head = take_head(&mut resp);
        // An `initialize` that opened a session: the connection's key served for it alone,
        // and the session goes on under the id the server gave; nothing stays behind.
        let opened = anonymous && head.is_success() && head.headers.contains(&SESSION_ID);
        let (handed_over, new_session) = if opened {
            (new_session, None)
        } else {
            (None, new_session)
        };
        let hand_over = {
            // Owned only when there is a session to hand over (an `initialize`).
            let over = handed_over.map(|ns| (Arc::clone(&self.relay), pump.key.clone(), ns));
            move || {
                if let Some((relay, key, ns)) = over {
                    relay.end_session(&key);
                    ns.keys.forget(&ns.wire);
                }
            }
        };
        let json = head.is_success() && head.headers.is_json();
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
                return Answer::Whole(head, bytes);
            }
            let (tx, rx) = mpsc::channel::<Down>(DOWN_DEPTH);
            http::execute_down(v, bytes, None, &tx).await;
            drop(tx);
            hand_over();
            let (head_tx, head_rx) = oneshot::channel();
            let _ = head_tx.send(head);
            return Answer::Exchange {
                head: head_rx,
                items: rx,
                expects_answer: !pump.owed.is_empty(),
                permit: streams.permit().ok(),
                sse_ok,
            };
        }
        if head.headers.is_sse() && head.is_success() {
            let permit = streams.permit().ok();
            let st = SseRelay::new(
                Arc::clone(&self.relay),
                pump.key.clone(),
                resp,
                std::mem::take(&mut pump.owed),
                back.max_body,
                permit,
            )
            .on_end(Box::new(hand_over));
            return Answer::Stream(head, st.into_stream());
        }
        // Anything else passes as bytes (the pump reads the answer's headers again).
        *resp.headers_mut() = head.headers.map().clone();
        let (tx, rx) = mpsc::channel::<Down>(DOWN_DEPTH);
        pump.down = tx;
        let status = head.status;
        tokio::spawn(async move {
            match pump.run(resp).await {
                PumpEnd::Failed(why) => pump.fail_owed(&why).await,
                _ => refused(&mut pump, status, new_session),
            }
        });
        Answer::Items {
            head,
            items: rx,
            sse: false,
            permit: None,
        }
    }
}

/// The head of the server's answer, taken out of it (the answer keeps its status and body):
/// no copy of the headers on the way of every call.
fn take_head(resp: &mut UpResponse) -> Head {
    Head {
        status: resp.status().as_u16(),
        headers: Headers::from(std::mem::take(resp.headers_mut())),
    }
}

/// The head of the server's answer, as the relay speaks of it.
pub(super) fn head_of(resp: &UpResponse) -> Head {
    Head {
        status: resp.status().as_u16(),
        headers: Headers::from(resp.headers().clone()),
    }
}

/// The server gave no answer brownout can pass on (`why`): brownout answers every call of
/// the POST itself, each with a clear error.
async fn answer_alone(mut pump: Pump, why: &str) -> Answer {
    let (tx, rx) = mpsc::channel(DOWN_DEPTH);
    pump.down = tx;
    pump.fail_owed(why).await;
    drop(pump);
    Answer::mine(rx)
}

/// The server answered a POST with a status other than 2xx: calls it did not answer are
/// recorded as failed, and a session it refuses (4xx) that this POST opened is forgotten,
/// so ids a client makes up cost nothing.
fn refused(pump: &mut Pump, status: u16, new_session: Option<NewSession>) {
    if (200..300).contains(&status) {
        return;
    }
    pump.resolve_owed(status);
    if let Some(new) = new_session.filter(|_| (400..500).contains(&status)) {
        pump.relay.end_session(&pump.key);
        new.keys.forget(&new.wire);
    }
}

/// One POST to a server at a URL: each message the client's POST turned into (one, or
/// more under a `duplicate` fault) is sent; the first answer's head becomes the client's.
pub(super) struct Exchange {
    pub(super) relay: Arc<Relay>,
    pub(super) upstream: Arc<Upstream>,
    pub(super) key: String,
    pub(super) path: String,
    pub(super) headers: Headers,
    pub(super) owed: Vec<brownout_core::jsonrpc::Id>,
    /// How the client's answer is shaped (its pace is the latency the client feels).
    pub(super) pace: Option<brownout_core::verdict::StreamShape>,
    /// The engine knew nothing of this session before this POST.
    pub(super) new_session: Option<NewSession>,
}

impl Exchange {
    pub(super) async fn run(
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
                max_body: self.upstream.max_body,
                on_endpoint: None,
                resumable: false,
                pace: self.pace.as_ref().and_then(Pacer::new),
            };
            let first = head.is_some();
            match self
                .upstream
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
                    let status = resp.status().as_u16();
                    let sse = http::is_sse(resp.headers());
                    if let Some(h) = head.take() {
                        let _ = h.send(head_of(&resp));
                    }
                    let new_session = if first { self.new_session.take() } else { None };
                    let work = async move {
                        match pump.run(resp).await {
                            PumpEnd::Failed(why) => pump.fail_owed(&why).await,
                            PumpEnd::Done if !(200..300).contains(&status) => {
                                refused(&mut pump, status, new_session)
                            }
                            // A stream that ends before its answer is fine when the client
                            // can resume it (it was given an event id); else it is a failure.
                            PumpEnd::Done
                                if sse && (200..300).contains(&status) && !pump.resumable =>
                            {
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
