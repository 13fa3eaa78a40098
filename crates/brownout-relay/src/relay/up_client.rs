//! The URL back's HTTP client: hyper-util's pooled HTTP/1.1 client, and the server's answer
//! as the back reads it (status, headers, body chunk by chunk).
//!
//! Not reqwest (which is built on this same client): for every request reqwest's redirect
//! layer parses the URL again from the request's URI, even with redirects off, and the
//! answer's URL is parsed once more — about 13,500 instructions a relayed call, a tenth of
//! what the HTTP relay spent (callgrind, 64 sessions). A relay sends each request once, to
//! a URL parsed at start, and follows no redirect, so it needs none of that.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::HeaderMap;
use hyper::{Method, StatusCode, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use std::time::Duration;

/// Why an exchange with the server failed.
#[derive(Debug, thiserror::Error)]
pub enum UpError {
    /// No connection (refused, unreachable, no answer to the handshake in time).
    #[error("{0}")]
    Connect(#[source] hyper_util::client::legacy::Error),
    /// The request or the answer's head failed.
    #[error("{0}")]
    Request(#[source] hyper_util::client::legacy::Error),
    /// The answer's body was cut or malformed.
    #[error("{0}")]
    Body(#[source] hyper::Error),
    /// Not a URI a request can go to.
    #[error("not a URL a request can go to: {0}")]
    Uri(String),
}

impl UpError {
    pub fn is_connect(&self) -> bool {
        matches!(self, UpError::Connect(_))
    }

    pub fn is_body(&self) -> bool {
        matches!(self, UpError::Body(_))
    }

    pub fn is_timeout(&self) -> bool {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(self);
        while let Some(s) = source {
            if s.downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::TimedOut)
            {
                return true;
            }
            source = s.source();
        }
        false
    }
}

/// How long a connection may sit idle in the pool before it is dropped rather than used
/// again: shorter than the keep-alive timeouts servers close idle connections after
/// (gunicorn 2 s, uvicorn and Node 5 s). A server closes an idle connection without a word;
/// a request sent on it as the close crosses it fails ("connection closed before message
/// completed") and is not retried (a POST may not be sent twice), so the client would get an
/// error no fault made. With 90 s, one call in ten spaced at the server's timeout failed so.
pub const POOL_IDLE: Duration = Duration::from_millis(1500);

/// A pool of connections to the server.
#[derive(Clone)]
pub struct UpClient {
    inner: Client<HttpConnector, Full<Bytes>>,
}

impl UpClient {
    /// Connections time out after `connect` and are kept for reuse, up to `idle_per_host`
    /// of them, for [`POOL_IDLE`] idle.
    pub fn new(connect: Duration, idle_per_host: usize) -> UpClient {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(connect));
        // An SSE answer comes in pieces: no Nagle wait between them.
        connector.set_nodelay(true);
        let inner = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(POOL_IDLE)
            .pool_max_idle_per_host(idle_per_host)
            .build(connector);
        UpClient { inner }
    }

    /// Send one request as given (the client sets `Host` from `uri`); the answer's head
    /// once it arrives.
    pub async fn send(
        &self,
        method: Method,
        uri: Uri,
        headers: HeaderMap,
        body: Vec<u8>,
    ) -> Result<UpResponse, UpError> {
        let mut req = hyper::Request::new(Full::new(Bytes::from(body)));
        *req.method_mut() = method;
        *req.uri_mut() = uri;
        *req.headers_mut() = headers;
        let resp = self.inner.request(req).await.map_err(|e| {
            if e.is_connect() {
                UpError::Connect(e)
            } else {
                UpError::Request(e)
            }
        })?;
        let (parts, body) = resp.into_parts();
        Ok(UpResponse {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    }
}

#[cfg(test)]
mod tests;

/// The server's answer: its head, and its body read chunk by chunk.
pub struct UpResponse {
    status: StatusCode,
    headers: HeaderMap,
    body: Incoming,
}

impl UpResponse {
    pub fn status(&self) -> StatusCode {
        self.status
    }

    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    pub fn headers_mut(&mut self) -> &mut HeaderMap {
        &mut self.headers
    }

    /// The body's next chunk; `None` at its end. Cancel-safe: a chunk is taken only when
    /// this returns.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, UpError> {
        loop {
            match self.body.frame().await {
                None => return Ok(None),
                Some(Err(e)) => return Err(UpError::Body(e)),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        return Ok(Some(data));
                    }
                    // Trailers: nothing the relay passes on.
                }
            }
        }
    }
}
