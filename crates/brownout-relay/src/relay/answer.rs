//! The client's answer to a request, as a back gives it to the HTTP front: plain data (a
//! [`Head`], a body whole or as items on their way), which the front turns into an HTTP
//! response (see [`super::http_answer::into_response`]); and [`Streams`], the front's bound
//! on the answers held open at once (`--max-streams`), shared with its back.

// An answer is made once per request and moved, not copied; boxing it buys nothing here.
#![allow(clippy::result_large_err)]

use super::head::Head;
use super::http::Down;
use bytes::Bytes;
use std::pin::Pin;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};

/// A body read from elsewhere (a server's SSE stream relayed event by event).
pub type ByteStream =
    Pin<Box<dyn futures::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static>>;

/// The answer to one request.
pub enum Answer {
    /// A status and no body.
    Status(u16),
    /// brownout's own answer: a status, a content type and a body.
    Own {
        status: u16,
        content_type: &'static str,
        body: Vec<u8>,
    },
    /// A head and the whole body (the server's answer, passed on).
    Whole(Head, Vec<u8>),
    /// A head and a body made of `items` as they come: SSE events when `sse`, else bytes.
    /// An open stream holds `permit` until it ends.
    Items {
        head: Head,
        items: mpsc::Receiver<Down>,
        sse: bool,
        permit: Option<OwnedSemaphorePermit>,
    },
    /// A head and a body read from a stream.
    Stream(Head, ByteStream),
    /// An exchange under way: its head when the server's comes (none: brownout answers
    /// itself from `items`), its items as they come. `expects_answer`: a request waits for
    /// its answer (held, not answered `202`, when none comes); `sse_ok`: the client takes
    /// SSE (several messages for one answer go as a stream).
    Exchange {
        head: oneshot::Receiver<Head>,
        items: mpsc::Receiver<Down>,
        expects_answer: bool,
        permit: Option<OwnedSemaphorePermit>,
        sse_ok: bool,
    },
}

impl Answer {
    /// brownout's own answer in plain text.
    pub fn text(status: u16, text: String) -> Answer {
        Answer::Own {
            status,
            content_type: "text/plain; charset=utf-8",
            body: text.into_bytes(),
        }
    }

    /// brownout's own JSON answer (a JSON-RPC error).
    pub fn json(status: u16, body: Vec<u8>) -> Answer {
        Answer::Own {
            status,
            content_type: "application/json",
            body,
        }
    }

    /// brownout's own answer made of `items` (an error for each call the server could not
    /// answer).
    pub fn mine(items: mpsc::Receiver<Down>) -> Answer {
        let (_, head) = oneshot::channel();
        Answer::Exchange {
            head,
            items,
            expects_answer: false,
            permit: None,
            sse_ok: false,
        }
    }
}

/// The streams (SSE answers, GET streams, held requests) open at once, at most
/// `--max-streams`: one bound for the front and its back.
#[derive(Debug, Clone)]
pub struct Streams {
    open: Arc<Semaphore>,
    max: usize,
}

impl Streams {
    pub fn new(max: usize) -> Streams {
        Streams {
            open: Arc::new(Semaphore::new(max)),
            max,
        }
    }

    /// Room for one more stream, held as long as the permit lives; 503 when there is none.
    pub fn permit(&self) -> Result<OwnedSemaphorePermit, Answer> {
        Arc::clone(&self.open).try_acquire_owned().map_err(|_| {
            Answer::text(
                503,
                format!(
                    "brownout: {} concurrent streams are open, the limit (--max-streams)",
                    self.max
                ),
            )
        })
    }

    /// An SSE answer brownout makes itself (a GET stream of a stdio server), counted.
    pub fn stream_answer(&self, head: Head, items: mpsc::Receiver<Down>) -> Answer {
        match self.permit() {
            Ok(p) => Answer::Items {
                head,
                items,
                sse: true,
                permit: Some(p),
            },
            Err(a) => a,
        }
    }
}
