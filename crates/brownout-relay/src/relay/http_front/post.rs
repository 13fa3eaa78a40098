//! POSTed messages: each passes the engine, then goes to the back as the verdict says —
//! an untouched one the back's short way if it has one, a faulted one through a [`Pipe`]
//! into the back's exchange with the server — and the client gets the answer shaped by
//! the faults.

use super::Front;
use crate::relay::http::{self, request_ids, Down, Head, Shape, DOWN_DEPTH};
use crate::relay::http_answer::{abort, respond, stall, status_response};
use crate::relay::layers::{Back, Exchange, Joined, Post, Request};
use crate::relay::Pipe;
use axum::http::{HeaderMap, Method};
use axum::response::Response;
use brownout_core::jsonrpc::{classify, Message};
use brownout_core::verdict::HttpAction;
use brownout_core::Side;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

impl<B: Back> Front<B> {
    /// One POSTed body: a JSON-RPC message or batch (through the engine), or anything else
    /// (for the back: passed on for the server to judge, or refused).
    pub(super) async fn post(
        self: &Arc<Self>,
        who: B::Who,
        path: String,
        headers: HeaderMap,
        body: Vec<u8>,
    ) -> Response {
        if matches!(classify(&body), Message::Invalid(_)) {
            let req = Request {
                method: Method::POST,
                path,
                headers,
                body,
            };
            return self.back.request(&self.streams, who, req).await;
        }
        let owed = request_ids(&body);
        let sse_ok = http::accepts_sse(&headers);
        let Joined {
            key,
            stream: legacy,
            call,
        } = match self.back.join(who, &path, &headers, &body) {
            Ok(joined) => joined,
            Err(r) => return r,
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
            Some(HttpAction::Stall) => return stall(self.streams.permit().ok()).await,
            Some(HttpAction::Reset) => shape.reset = true,
            None => {}
        }
        let post = Post {
            key,
            path,
            headers,
            body,
            owed,
        };
        let (call, post) = if v.is_pass() && legacy.is_none() {
            match self.back.pass(&self.streams, call, post).await {
                Ok(answered) => return answered,
                Err(not_here) => not_here,
            }
        } else {
            (call, post)
        };
        let Post {
            key,
            path,
            headers,
            body,
            owed,
        } = post;
        let (down_tx, down_rx) = mpsc::channel::<Down>(DOWN_DEPTH);
        let (up_tx, up_rx) = mpsc::channel::<Vec<u8>>(16);
        let (head_tx, head_rx) = oneshot::channel::<Head>();
        // Legacy HTTP+SSE answers on the client's stream, never in the POST's body.
        let answers = legacy.clone().unwrap_or_else(|| down_tx.clone());
        let expects_answer = !owed.is_empty() && legacy.is_none();
        let exchange = Exchange {
            key,
            path,
            headers,
            owed: if legacy.is_some() { Vec::new() } else { owed },
            pace: v.stream.clone(),
            up: up_rx,
            head: head_tx,
            down: down_tx.clone(),
            answers: answers.clone(),
        };
        let process = self.back.exchange(call, exchange);
        Pipe::new(up_tx, answers, process).execute(v, body).await;
        drop(down_tx);
        let permit = self.streams.permit().ok();
        respond(head_rx, down_rx, expects_answer, shape, permit, sse_ok).await
    }
}
