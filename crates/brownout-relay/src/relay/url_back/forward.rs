//! GET, DELETE, other methods and POSTs that are not JSON-RPC, to a server at a URL: passed
//! on; an SSE answer (the server's stream, or a legacy `/sse` stream) passes the engine event
//! by event, and a legacy stream's `endpoint` event is rewritten so the client posts through
//! brownout.

use super::post::head_of;
use super::{legacy_key, UrlBack, Who};
use crate::relay::answer::{Answer, Streams};
use crate::relay::head::{Head, Headers, Method};
use crate::relay::http::Down;
use crate::relay::http_back::{describe, Upstream};
use crate::relay::layers::Request;
use crate::relay::sse::Event;
use crate::relay::sse_stream::SseRelay;
use crate::relay::up_client::UpResponse;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

impl UrlBack {
    /// GET, DELETE, other methods and POSTs that are not JSON-RPC, to a server at a URL:
    /// passed on; an SSE answer (the server's stream, or a legacy `/sse` stream) passes the
    /// engine event by event.
    pub(super) async fn forward(&self, streams: &Streams, who: Who, req: Request) -> Answer {
        let Request {
            method,
            path,
            headers,
            body,
        } = req;
        let back = &self.upstream;
        if method != Method::Get {
            let ends = method == Method::Delete;
            let Ok(method) = hyper::Method::from_bytes(method.as_str().as_bytes()) else {
                let name = method.as_str();
                return Answer::text(405, format!("brownout: `{name}` is not a method"));
            };
            let (r, ok) = self.raw(method, path, headers, body).await;
            if ends && ok {
                if let Some(key) = &who.key {
                    self.relay.end_session(key);
                }
                self.keys.forget(&who.wire);
            }
            return r;
        }
        // A GET is a stream: counted before it reaches the server.
        let permit = match streams.permit() {
            Ok(p) => p,
            Err(r) => return r,
        };
        let resp = match back
            .send(hyper::Method::GET, &path, headers, Vec::new())
            .await
        {
            Ok(r) => r,
            Err(e) => return Answer::text(502, format!("brownout: {}", describe(&e))),
        };
        let head = head_of(&resp);
        if !(head.is_success() && head.headers.is_sse()) {
            return self.pass_answer(head, resp);
        }
        // The server accepted the stream: now the session has a key.
        let key = self.key_for(&who);
        let mut st = SseRelay::new(
            Arc::clone(&self.relay),
            key,
            resp,
            Vec::new(),
            back.max_body,
            Some(permit),
        );
        let registered: Arc<Mutex<Option<String>>> = Arc::default();
        let hook = {
            let legacy = Arc::clone(&self.legacy);
            let side = st.side_sender();
            let back = Arc::clone(back);
            let registered = Arc::clone(&registered);
            let keys = Arc::clone(&self.keys);
            move |ev: &mut Event| -> Option<String> {
                let endpoint = String::from_utf8_lossy(ev.data.as_deref()?).into_owned();
                let local = local_endpoint(&back, endpoint.trim())?;
                if local != endpoint {
                    *ev = ev.with_data(local.as_bytes());
                }
                if let Some(side) = &side {
                    legacy
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(local.clone(), side.clone());
                }
                *registered.lock().unwrap_or_else(|p| p.into_inner()) = Some(local.clone());
                Some(keys.key(&legacy_key(&local), None))
            }
        };
        let legacy = Arc::clone(&self.legacy);
        let keys = Arc::clone(&self.keys);
        let st = st.on_endpoint(Box::new(hook)).on_end(Box::new(move || {
            let local = registered.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(local) = local {
                keys.forget(&legacy_key(&local));
                legacy
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&local);
            }
        }));
        Answer::Stream(head, st.into_stream())
    }

    /// Pass a request and its answer on untouched; whether the server took it (2xx).
    async fn raw(
        &self,
        method: hyper::Method,
        path: String,
        headers: Headers,
        body: Vec<u8>,
    ) -> (Answer, bool) {
        match self.upstream.send(method, &path, headers, body).await {
            Ok(resp) => {
                let head = head_of(&resp);
                let ok = head.is_success();
                (self.pass_answer(head, resp), ok)
            }
            Err(e) => (
                Answer::text(502, format!("brownout: {}", describe(&e))),
                false,
            ),
        }
    }

    fn pass_answer(&self, head: Head, mut resp: UpResponse) -> Answer {
        let (tx, rx) = mpsc::channel::<Down>(16);
        tokio::spawn(async move {
            while let Ok(Some(c)) = resp.chunk().await {
                if tx.send(Down::Chunk(c)).await.is_err() {
                    break;
                }
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

/// The endpoint a legacy client should post to, on brownout: a URL on the server's origin
/// becomes its path and query (which the client resolves against brownout); a relative one
/// stays as it is. A URL on another origin is left alone (and not relayed).
fn local_endpoint(back: &Upstream, endpoint: &str) -> Option<String> {
    if endpoint.starts_with('/') {
        return Some(endpoint.to_string());
    }
    if back.same_origin(endpoint) {
        let u = reqwest::Url::parse(endpoint).ok()?;
        return Some(match u.query() {
            Some(q) => format!("{}?{q}", u.path()),
            None => u.path().to_string(),
        });
    }
    None
}
