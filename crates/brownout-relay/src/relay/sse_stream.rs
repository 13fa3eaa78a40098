//! An upstream SSE stream relayed to the client inline: the client's body pulls events from
//! the server's body, each message passes the engine on the way, and an untouched event is
//! written as it came — no task and no queue in between (the common case, and what a GET
//! stream held open for hours costs in memory).
//!
//! A message a fault acts on is handed to a [`Pipe`] whose outbox is this stream's side
//! queue, so delays, duplicates and replacements work as everywhere else; what the pipe sends
//! at once is taken before the next event, so order holds. Legacy HTTP+SSE registers the
//! side queue as the session's stream, for answers brownout makes itself.

use super::answer::ByteStream;
use super::http::{execute_down, Down};
use super::http_back::{describe, EndpointHook};
use super::sse::{self, Event};
use super::up_client::{UpError, UpResponse};
use super::Relay;
use brownout_core::jsonrpc::Id;
use bytes::Bytes;
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::sync::{mpsc, OwnedSemaphorePermit};

/// Depth of the side queue (faulted messages, brownout's own answers).
const SIDE_DEPTH: usize = 64;

pub struct SseRelay {
    relay: Arc<Relay>,
    key: String,
    resp: Option<UpResponse>,
    reader: sse::Reader,
    out: VecDeque<Bytes>,
    /// The side queue for brownout's own messages to this stream's client, made when first
    /// needed (most streams only pass the server's events): its sender, until the server's
    /// stream ends, and its receiver.
    side_tx: Option<mpsc::Sender<Down>>,
    side_rx: Option<mpsc::Receiver<Down>>,
    /// The server's stream ended: no side queue is made any more.
    closed: bool,
    /// Requests still waiting for their answer on this stream.
    owed: Vec<Id>,
    /// Run once when the server's stream ends or the client leaves.
    on_end: Option<Box<dyn FnOnce() + Send>>,
    _permit: Option<OwnedSemaphorePermit>,
}

enum Next {
    Side(Option<Down>),
    Chunk(Result<Option<Bytes>, UpError>),
}

impl SseRelay {
    pub fn new(
        relay: Arc<Relay>,
        key: String,
        resp: UpResponse,
        owed: Vec<Id>,
        max_event: usize,
        permit: Option<OwnedSemaphorePermit>,
    ) -> SseRelay {
        SseRelay {
            relay,
            key,
            resp: Some(resp),
            reader: sse::Reader::new(max_event, None),
            out: VecDeque::new(),
            side_tx: None,
            side_rx: None,
            closed: false,
            owed,
            on_end: None,
            _permit: permit,
        }
    }

    /// Legacy HTTP+SSE: see the `endpoint` event (it may rewrite it and name the session).
    pub fn on_endpoint(mut self, hook: EndpointHook) -> SseRelay {
        self.reader.on_endpoint = Some(hook);
        self
    }

    pub fn on_end(mut self, f: Box<dyn FnOnce() + Send>) -> SseRelay {
        self.on_end = Some(f);
        self
    }

    /// Where brownout's own messages for this stream's client go (`None` once the server's
    /// stream has ended).
    pub fn side_sender(&mut self) -> Option<mpsc::Sender<Down>> {
        if self.side_tx.is_none() && !self.closed {
            let (tx, rx) = mpsc::channel(SIDE_DEPTH);
            self.side_tx = Some(tx);
            self.side_rx = Some(rx);
        }
        self.side_tx.clone()
    }

    /// The client's body: the server's events as they come, through the engine.
    pub fn into_stream(self) -> ByteStream {
        Box::pin(futures::stream::unfold(self, |mut st| async move {
            st.next_bytes()
                .await
                .map(|b| (Ok::<_, std::io::Error>(b), st))
        }))
    }

    async fn next_bytes(&mut self) -> Option<Bytes> {
        loop {
            if let Some(b) = self.out.pop_front() {
                return Some(b);
            }
            let next = match (self.resp.as_mut(), self.side_rx.as_mut()) {
                (Some(resp), Some(rx)) => {
                    tokio::select! {
                        biased;
                        item = rx.recv() => Next::Side(item),
                        chunk = resp.chunk() => Next::Chunk(chunk),
                    }
                }
                (Some(resp), None) => Next::Chunk(resp.chunk().await),
                (None, Some(rx)) => Next::Side(rx.recv().await),
                (None, None) => Next::Side(None),
            };
            match next {
                Next::Side(Some(item)) => self.out.push_back(Bytes::from(item.sse_bytes())),
                Next::Side(None) => return None,
                Next::Chunk(Ok(Some(c))) => self.feed(&c).await,
                Next::Chunk(Ok(None)) => self.upstream_ended(None).await,
                Next::Chunk(Err(e)) => self.upstream_ended(Some(describe(&e))).await,
            }
        }
    }

    async fn feed(&mut self, chunk: &[u8]) {
        let mut items = Vec::new();
        if let Err(e) = self.reader.feed(chunk, &mut self.key, &mut items) {
            return self.upstream_ended(Some(e.to_string())).await;
        }
        for item in items {
            match item {
                sse::Incoming::Message(ev, bytes) => self.message(ev, bytes).await,
                sse::Incoming::Other(ev) => self.out.push_back(Bytes::from(ev.into_bytes())),
            }
        }
    }

    async fn message(&mut self, ev: Event, bytes: Vec<u8>) {
        let v = self
            .relay
            .handle_owing(&self.key, &bytes, None, &mut self.owed);
        if v.is_pass() {
            self.out.push_back(Bytes::from(ev.into_bytes()));
            return;
        }
        self.through_pipe(v, bytes, Some(ev)).await;
    }

    async fn through_pipe(
        &mut self,
        v: brownout_core::verdict::Verdict,
        bytes: Vec<u8>,
        template: Option<Event>,
    ) {
        let Some(tx) = self.side_sender() else {
            return;
        };
        execute_down(v, bytes, template, &tx).await;
        // What the pipe sent at once goes before the next event.
        while let Some(Ok(item)) = self.side_rx.as_mut().map(mpsc::Receiver::try_recv) {
            self.out.push_back(Bytes::from(item.sse_bytes()));
        }
    }

    /// The server's stream ended (or failed): requests still owed get a clear error unless
    /// the client can resume the stream, then the side queue drains and the stream ends.
    async fn upstream_ended(&mut self, failure: Option<String>) {
        self.resp = None;
        let why = match failure {
            Some(why) => Some(why),
            None if !self.reader.resumable => {
                Some("the upstream MCP server ended the stream before answering".to_string())
            }
            None => None,
        };
        if let Some(why) = why {
            for id in std::mem::take(&mut self.owed) {
                let (v, err) = self.relay.owed_error(&self.key, &id, &why);
                self.through_pipe(v, err, None).await;
            }
        }
        if let Some(f) = self.on_end.take() {
            f();
        }
        // Nothing may keep the side queue open now (the endpoint hook holds a sender).
        self.reader.on_endpoint = None;
        self.side_tx = None;
        self.closed = true;
    }
}

impl Drop for SseRelay {
    fn drop(&mut self) {
        if let Some(f) = self.on_end.take() {
            f();
        }
    }
}
