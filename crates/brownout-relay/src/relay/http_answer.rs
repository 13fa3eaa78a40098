//! The client's answer over HTTP, built by the HTTP front: the server's head (or
//! brownout's own) and a body shaped by the faults — a JSON answer, an SSE stream, a status
//! a fault chose, a connection closed or held without an answer. A back's [`Answer`] (plain
//! data) becomes a response here ([`into_response`]).

// Early answers of a handler are `Response`s, the axum way; boxing them buys nothing here.
#![allow(clippy::result_large_err)]

use super::answer::Answer;
pub use super::answer::Streams;
use super::head::{Head, CONTENT_TYPE};
use super::http::{self, Down, Shape};
use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit};

/// How long a `connection: stall` fault holds a request before closing it.
const STALL_MAX: Duration = Duration::from_secs(300);

pub fn plain(status: StatusCode, text: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text,
    )
        .into_response()
}

pub fn json_error(status: StatusCode, body: Vec<u8>) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// A response whose body fails at once: the connection is closed without an answer.
pub fn abort(why: &'static str) -> Response {
    let stream = futures::stream::once(async move {
        Err::<Bytes, _>(std::io::Error::new(
            std::io::ErrorKind::ConnectionAborted,
            why,
        ))
    });
    Response::new(Body::from_stream(stream))
}

/// Hold a request without answering (a stall fault, an answer a fault dropped), counted
/// against `--max-streams` like any open stream: with no room left (`permit` is `None`) the
/// connection is closed at once instead.
pub async fn stall(permit: Option<OwnedSemaphorePermit>) -> Response {
    if permit.is_some() {
        tokio::time::sleep(STALL_MAX).await;
    }
    abort("stalled (fault)")
}

/// The response for a back's answer.
pub async fn into_response(answer: Answer) -> Response {
    match answer {
        Answer::Status(status) => status_of(status).into_response(),
        Answer::Own {
            status,
            content_type,
            body,
        } => (
            status_of(status),
            [(header::CONTENT_TYPE, content_type)],
            body,
        )
            .into_response(),
        Answer::Whole(head, body) => response(head, Body::from(body)),
        Answer::Items {
            head,
            items,
            sse,
            permit,
        } => {
            let body = http::body(items, sse, Shape::default());
            match permit {
                Some(p) => response(head, hold_permit(body, p)),
                None => response(head, body),
            }
        }
        Answer::Stream(head, stream) => response(head, Body::from_stream(stream)),
        Answer::Exchange {
            head,
            items,
            expects_answer,
            permit,
            sse_ok,
        } => {
            respond(
                head,
                items,
                expects_answer,
                Shape::default(),
                permit,
                sse_ok,
            )
            .await
        }
    }
}

/// A status code as the HTTP library has it (one out of range is a bad gateway's).
fn status_of(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_GATEWAY)
}

/// Build the client's answer: the server's head (or brownout's own) and a shaped body.
/// A JSON answer a fault made into several messages (a `duplicate`) is answered as SSE
/// when the client takes SSE (`sse_ok`), so every copy is delivered.
pub async fn respond(
    head_rx: oneshot::Receiver<Head>,
    mut down_rx: mpsc::Receiver<Down>,
    expects_answer: bool,
    shape: Shape,
    permit: Option<OwnedSemaphorePermit>,
    sse_ok: bool,
) -> Response {
    let head = head_rx.await.ok();
    let Some(head) = head else {
        // Not forwarded: brownout answers itself, or (a dropped request) never does.
        return match down_rx.recv().await {
            Some(first) => {
                let (tx, rx) = mpsc::channel(1);
                let _ = tx.try_send(first);
                drop(tx);
                response(
                    Head::own(200, "application/json"),
                    http::body(rx, false, shape),
                )
            }
            None if expects_answer => stall(permit).await,
            None => StatusCode::ACCEPTED.into_response(),
        };
    };
    if head.is_success() && head.headers.is_sse() {
        let body = http::body(down_rx, true, shape);
        let body = match permit {
            Some(p) => hold_permit(body, p),
            None => body,
        };
        return response(head, body);
    }
    if head.is_success() && head.headers.is_json() {
        // One message is the whole body; a dropped answer leaves the client waiting.
        let first = loop {
            match down_rx.recv().await {
                Some(item) if item.message().is_some() => break Some(item),
                Some(_) => continue,
                None => break None,
            }
        };
        let Some(first) = first else {
            return if shape.reset {
                abort("connection reset (fault)")
            } else if expects_answer {
                stall(permit).await
            } else {
                response(head, Body::empty())
            };
        };
        if sse_ok && matches!(first, Down::Event(_)) {
            let mut head = head;
            head.headers.set(&CONTENT_TYPE, "text/event-stream");
            let body = http::body(http::prepend(first, down_rx), true, shape);
            let body = match permit {
                Some(p) => hold_permit(body, p),
                None => body,
            };
            return response(head, body);
        }
        let (tx, rx) = mpsc::channel(1);
        let _ = tx.try_send(Down::Msg(
            first.message().map(<[u8]>::to_vec).unwrap_or_default(),
        ));
        drop(tx);
        return response(head, http::body(rx, false, shape));
    }
    response(head, http::body(down_rx, false, Shape::default()))
}

pub fn hold_permit(body: Body, permit: OwnedSemaphorePermit) -> Body {
    use futures::StreamExt;
    let stream = body.into_data_stream().map(move |c| {
        let _ = &permit;
        c
    });
    Body::from_stream(stream)
}

pub fn response(head: Head, body: Body) -> Response {
    let mut headers = head.headers.into_map();
    http::strip_hop_headers(&mut headers);
    let mut r = Response::new(body);
    *r.status_mut() = status_of(head.status);
    *r.headers_mut() = headers;
    r
}

pub fn status_response(code: u16, headers: &[(String, String)], body: Vec<u8>) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    for (k, v) in headers {
        if let (Ok(k), Ok(v)) = (
            header::HeaderName::from_bytes(k.as_bytes()),
            HeaderValue::from_str(v),
        ) {
            r.headers_mut().append(k, v);
        }
    }
    if !r.headers().contains_key(header::CONTENT_TYPE) {
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
    }
    r
}
