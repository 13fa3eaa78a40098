//! The MCP server at a URL (streamable HTTP, or legacy HTTP+SSE), as the URL back reaches
//! it behind either front ([`super::url_back`]): the URL back's own HTTP client.
//!
//! [`Upstream`] sends a request to the server; [`Pump`] carries the server's answer back
//! toward the client, message by message through the engine: a JSON body is one message,
//! an SSE stream is one message per event. An untouched event keeps its bytes and its
//! event id; events without a message (priming, `retry:`, keep-alives) pass as they are.
//! When the server fails or cuts the stream before answering, every request still owed
//! gets a clear JSON-RPC error.

use super::head::Headers;
use super::http::{execute_down, is_json, is_sse, strip_hop_headers, Down, Pacer};
use super::sse::{self, Event};
use super::up_client::{UpClient, UpError, UpResponse};
use super::Relay;
use brownout_core::jsonrpc::Id;
use bytes::Bytes;
use hyper::{Method, Uri};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

#[derive(Debug, thiserror::Error)]
pub enum BackError {
    #[error("`{0}` is not an http:// URL")]
    BadUrl(String),
    #[error("`{0}`: https:// upstreams are not supported yet (this build has no TLS); relay to the server's plain-HTTP endpoint, or put a TLS-terminating proxy between brownout and the server")]
    NoTls(String),
}

/// The server at a URL.
pub struct Upstream {
    client: UpClient,
    /// `scheme://host:port`, without a path.
    origin: String,
    /// The path of the URL given (where the MCP endpoint is).
    pub path: String,
    /// The URL given, parsed once: most requests go there.
    endpoint: Uri,
    pub max_body: usize,
}

impl Upstream {
    pub fn new(url: &str, max_body: usize) -> Result<Upstream, BackError> {
        let parsed = reqwest::Url::parse(url).map_err(|_| BackError::BadUrl(url.into()))?;
        if parsed.scheme() == "https" {
            return Err(BackError::NoTls(url.into()));
        }
        if parsed.scheme() != "http" || parsed.host_str().is_none() {
            return Err(BackError::BadUrl(url.into()));
        }
        let origin = parsed.origin().ascii_serialization();
        let mut path = parsed.path().to_string();
        if let Some(q) = parsed.query() {
            path = format!("{path}?{q}");
        }
        // A relay passes each request once, as the client sent it: no retry, no redirect.
        let client = UpClient::new(Duration::from_secs(10), 1024);
        let endpoint =
            Uri::try_from(format!("{origin}{path}")).map_err(|_| BackError::BadUrl(url.into()))?;
        Ok(Upstream {
            client,
            origin,
            path,
            endpoint,
            max_body,
        })
    }

    /// The server's URL for a request path (with query) the client used.
    pub fn url_for(&self, path_and_query: &str) -> String {
        format!("{}{}", self.origin, path_and_query)
    }

    /// Whether `url` is on the server's origin (legacy `endpoint` events name one).
    pub fn same_origin(&self, url: &str) -> bool {
        reqwest::Url::parse(url).is_ok_and(|u| u.origin().ascii_serialization() == self.origin)
    }

    /// Send one request to the server with the client's headers (hop-by-hop ones dropped).
    pub async fn send(
        &self,
        method: Method,
        path_and_query: &str,
        headers: Headers,
        body: Vec<u8>,
    ) -> Result<UpResponse, UpError> {
        let mut headers = headers.into_map();
        strip_hop_headers(&mut headers);
        let uri = self.uri_for(path_and_query)?;
        self.client.send(method, uri, headers, body).await
    }

    /// Where a request the client sent for `path_and_query` goes. Most go to the URL given,
    /// parsed once: asked for with its query or for its bare path (a client that knows the
    /// endpoint as brownout's `/mcp` still sends the `?key=…` of `--upstream
    /// http://host/mcp?key=…`). Any other path goes as the client sent it, query included.
    fn uri_for(&self, path_and_query: &str) -> Result<Uri, UpError> {
        if path_and_query == self.path || path_and_query == self.endpoint.path() {
            return Ok(self.endpoint.clone());
        }
        let url = self.url_for(path_and_query);
        Uri::try_from(url.as_str()).map_err(|_| UpError::Uri(url))
    }
}

pub use super::sse::EndpointHook;

/// Where a pump sends what the server says, and what it owes.
pub struct Pump {
    pub relay: Arc<Relay>,
    /// The engine's session key.
    pub key: String,
    pub down: mpsc::Sender<Down>,
    /// Requests of this exchange still waiting for their answer.
    pub owed: Vec<Id>,
    pub max_body: usize,
    /// Legacy HTTP+SSE: called on the `endpoint` event; may rewrite it, and returns the
    /// session key the rest of the stream belongs to.
    pub on_endpoint: Option<EndpointHook>,
    /// The server gave an event id: the client can resume the stream (so a stream that
    /// ends before its answer is not a failure).
    pub resumable: bool,
    /// The answer is paced on its way out: calls are recorded when the client gets them.
    pub pace: Option<Pacer>,
}

/// How a pump ended.
#[derive(Debug)]
pub enum PumpEnd {
    /// The server ended its answer.
    Done,
    /// The client went away.
    ClientGone,
    /// The server failed mid-answer.
    Failed(String),
}

impl Pump {
    /// One message from the server, through the engine, on to the client; whether the
    /// client is still there.
    pub async fn message(&mut self, bytes: Vec<u8>, as_event: Option<Event>) -> bool {
        let late = self.pace.as_mut().map(|p| {
            let len = as_event.as_ref().map_or(bytes.len(), |e| e.raw.len());
            p.push(len)
        });
        let v = self
            .relay
            .handle_owing(&self.key, &bytes, late, &mut self.owed);
        if v.is_pass() {
            let item = match as_event {
                Some(ev) => Down::Event(ev),
                None => Down::Msg(bytes),
            };
            return self.down.send(item).await.is_ok();
        }
        execute_down(v, bytes, as_event, &self.down).await;
        !self.down.is_closed()
    }

    /// Carry a server answer to the client. The head was already taken by the caller.
    pub async fn run(&mut self, mut resp: UpResponse) -> PumpEnd {
        let headers = resp.headers().clone();
        if is_sse(&headers) {
            let mut reader = sse::Reader::new(self.max_body, self.on_endpoint.take());
            let mut items = Vec::new();
            loop {
                let chunk = match resp.chunk().await {
                    Ok(Some(c)) => c,
                    Ok(None) => return PumpEnd::Done,
                    Err(e) => return PumpEnd::Failed(describe(&e)),
                };
                let fed = reader.feed(&chunk, &mut self.key, &mut items);
                self.resumable |= reader.resumable;
                if let Err(e) = fed {
                    return PumpEnd::Failed(e.to_string());
                }
                for item in items.drain(..) {
                    let alive = match item {
                        sse::Incoming::Message(ev, bytes) => self.message(bytes, Some(ev)).await,
                        sse::Incoming::Other(ev) => {
                            if let Some(p) = self.pace.as_mut() {
                                p.push(ev.raw.len());
                            }
                            self.down.send(Down::Event(ev)).await.is_ok()
                        }
                    };
                    if !alive {
                        return PumpEnd::ClientGone;
                    }
                }
            }
        }
        // A JSON body is one message; anything else passes as bytes.
        let json = is_json(&headers);
        let mut body = Vec::new();
        loop {
            match resp.chunk().await {
                Ok(Some(c)) if json => {
                    if body.len() + c.len() > self.max_body {
                        return PumpEnd::Failed(format!(
                            "the server's answer is over the limit of {} bytes",
                            self.max_body
                        ));
                    }
                    body.extend_from_slice(&c);
                }
                Ok(Some(c)) => {
                    if self.down.send(Down::Chunk(c)).await.is_err() {
                        return PumpEnd::ClientGone;
                    }
                }
                Ok(None) => break,
                Err(e) => return PumpEnd::Failed(describe(&e)),
            }
        }
        if json && !body.is_empty() && !self.message(body, None).await {
            return PumpEnd::ClientGone;
        }
        PumpEnd::Done
    }

    /// Answer every request still owed with a clear error (the server failed or went
    /// silent), through the engine so the failure is counted.
    pub async fn fail_owed(&mut self, why: &str) {
        for id in std::mem::take(&mut self.owed) {
            let (v, err) = self.relay.owed_error(&self.key, &id, why);
            execute_down(v, err, None, &self.down).await;
        }
    }
}

impl Pump {
    /// The server answered with a status other than 2xx and no JSON-RPC answer for these
    /// requests (an error page, an error with `id: null`): the client has the server's
    /// answer as it came; each call is recorded as failed, so nothing stays pending.
    pub fn resolve_owed(&mut self, status: u16) {
        // With its reason phrase, as `404 Not Found`.
        let status =
            reqwest::StatusCode::from_u16(status).map_or(status.to_string(), |s| s.to_string());
        let why = format!("the upstream MCP server answered HTTP {status}");
        for id in std::mem::take(&mut self.owed) {
            let _ = self.relay.owed_error(&self.key, &id, &why);
        }
    }
}

/// Words for a failed exchange with the server.
pub fn describe(e: &UpError) -> String {
    let mut s = if e.is_connect() {
        "cannot connect to the upstream MCP server".to_string()
    } else if e.is_timeout() {
        "the upstream MCP server timed out".to_string()
    } else if e.is_body() {
        "the upstream MCP server cut its answer short".to_string()
    } else {
        "the request to the upstream MCP server failed".to_string()
    };
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        s = format!("{s}: {inner}");
        source = inner.source();
    }
    s
}

/// The chunk type bodies are built from (re-exported for fronts).
pub type Chunk = Bytes;

/// Say on stderr, at start, when the server's host and port take no connection; the relay
/// goes on (each call is answered with an error until the server answers).
pub fn warn_if_unreachable(back: &Arc<Upstream>) {
    let back = Arc::clone(back);
    tokio::spawn(async move {
        if let Err(why) = probe(&back).await {
            eprintln!(
                "brownout: warning: the upstream {} is unreachable ({why}); relaying anyway: each call is answered with an error until it answers",
                back.url_for(&back.path)
            );
        }
    });
}

/// Whether the server's host and port take a TCP connection (within five seconds).
async fn probe(back: &Upstream) -> Result<(), String> {
    let url = reqwest::Url::parse(&back.url_for(&back.path)).map_err(|e| e.to_string())?;
    let host = url
        .host_str()
        .unwrap_or_default()
        .trim_matches(['[', ']'])
        .to_string();
    let port = url.port_or_known_default().unwrap_or(80);
    match tokio::time::timeout(
        std::time::Duration::from_secs(5),
        tokio::net::TcpStream::connect((host.as_str(), port)),
    )
    .await
    {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("no connection within 5 s".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(up: &Upstream, path_and_query: &str) -> String {
        up.uri_for(path_and_query).expect("a URI").to_string()
    }

    #[tokio::test]
    async fn the_query_of_the_upstream_url_goes_with_a_request_for_its_bare_path() {
        let up = Upstream::new("http://127.0.0.1:9/mcp?key=k1", 1 << 20).expect("upstream");
        assert_eq!(uri(&up, "/mcp"), "http://127.0.0.1:9/mcp?key=k1");
        assert_eq!(uri(&up, "/mcp?key=k1"), "http://127.0.0.1:9/mcp?key=k1");
        // A client's own query, or another path, goes as the client sent it.
        assert_eq!(uri(&up, "/mcp?key=mine"), "http://127.0.0.1:9/mcp?key=mine");
        assert_eq!(
            uri(&up, "/messages?sessionId=s"),
            "http://127.0.0.1:9/messages?sessionId=s"
        );
        let plain = Upstream::new("http://127.0.0.1:9/mcp", 1 << 20).expect("upstream");
        assert_eq!(uri(&plain, "/mcp"), "http://127.0.0.1:9/mcp");
        assert_eq!(uri(&plain, "/mcp?x=1"), "http://127.0.0.1:9/mcp?x=1");
    }
}
