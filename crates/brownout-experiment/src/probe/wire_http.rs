//! The probe's MCP client over HTTP: streamable HTTP (a POST per message, answered in JSON
//! or an SSE stream; the `Mcp-Session-Id` kept; DELETE to close) and legacy HTTP+SSE (GET
//! the stream, POST to the endpoint it names). Small and strict rather than fast: whatever
//! is not JSON-RPC 2.0 is a `protocol_error`.

use super::reason::{classify_http, Failure, FailureReason};
use super::spec::Transport;
use brownout_relay::relay::sse;
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::StatusCode;
use serde_json::Value;
use tokio::sync::mpsc;

/// The largest answer or SSE event read (beyond it: `protocol_error`).
const MAX_MESSAGE: usize = 16 * 1024 * 1024;

pub struct HttpWire {
    client: reqwest::Client,
    url: reqwest::Url,
    headers: HeaderMap,
    session: Option<String>,
    version: Option<String>,
    legacy: Option<Legacy>,
    transport: Transport,
    /// The trace context every request carries in `params._meta` (`run --otlp`).
    pub traceparent: Option<String>,
}

struct Legacy {
    post_to: reqwest::Url,
    messages: mpsc::Receiver<Result<Value, Failure>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Legacy {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl HttpWire {
    pub fn new(
        client: reqwest::Client,
        url: &str,
        headers: HeaderMap,
        transport: Transport,
    ) -> Result<HttpWire, Failure> {
        let url = reqwest::Url::parse(url)
            .map_err(|e| Failure::protocol(format!("`{url}` is not a URL: {e}")))?;
        if url.scheme() == "https" {
            return Err(Failure::new(
                FailureReason::Tls,
                "this build of brownout speaks plain HTTP only: https cannot be set up",
            ));
        }
        let transport = match transport {
            Transport::Auto if url.path().ends_with("/sse") => Transport::Sse,
            t => t,
        };
        Ok(HttpWire {
            client,
            url,
            headers,
            session: None,
            version: None,
            legacy: None,
            transport,
            traceparent: None,
        })
    }

    /// The protocol version the server chose, sent as `MCP-Protocol-Version` from now on.
    pub fn set_version(&mut self, v: &str) {
        self.version = Some(v.to_string());
    }

    fn headers(&self) -> HeaderMap {
        let mut h = self.headers.clone();
        if let Some(s) = self
            .session
            .as_deref()
            .and_then(|s| HeaderValue::from_str(s).ok())
        {
            h.insert("mcp-session-id", s);
        }
        if let Some(v) = self
            .version
            .as_deref()
            .and_then(|v| HeaderValue::from_str(v).ok())
        {
            h.insert("mcp-protocol-version", v);
        }
        h
    }

    /// Send a request and wait for the answer with its id.
    pub async fn request(&mut self, msg: &Value, id: u64) -> Result<Value, Failure> {
        let traced;
        let msg = match &self.traceparent {
            Some(tp) if msg["params"].is_object() && msg["params"].get("_meta").is_none() => {
                let mut m = msg.clone();
                m["params"]["_meta"] = serde_json::json!({"traceparent": tp});
                traced = m;
                &traced
            }
            _ => msg,
        };
        if self.transport == Transport::Sse && self.legacy.is_none() {
            self.open_legacy().await?;
        }
        if self.legacy.is_some() {
            return self.legacy_request(msg, Some(id)).await;
        }
        let resp = self.post(&self.url.clone(), msg).await?;
        let status = resp.status();
        if self.transport == Transport::Auto
            && self.session.is_none()
            && matches!(
                status,
                StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED
            )
        {
            // An old server: the 2024-11-05 HTTP+SSE transport at the same URL.
            self.transport = Transport::Sse;
            self.open_legacy().await?;
            return self.legacy_request(msg, Some(id)).await;
        }
        if !status.is_success() {
            return Err(http_status(status));
        }
        if let Some(s) = resp.headers().get("mcp-session-id") {
            if self.session.is_none() {
                self.session = s.to_str().ok().map(str::to_string);
            }
        }
        read_answer(resp, id).await
    }

    /// Send a notification (any 2xx is accepted).
    pub async fn notify(&mut self, msg: &Value) -> Result<(), Failure> {
        if self.legacy.is_some() {
            return self.legacy_request(msg, None).await.map(|_| ());
        }
        let resp = self.post(&self.url.clone(), msg).await?;
        if !resp.status().is_success() {
            return Err(http_status(resp.status()));
        }
        Ok(())
    }

    /// End the session: DELETE it (streamable; 405 means the server keeps no sessions to
    /// end) or drop the stream (legacy).
    pub async fn close(mut self) -> Result<(), Failure> {
        if self.legacy.take().is_some() {
            return Ok(());
        }
        if self.session.is_none() {
            return Ok(());
        }
        let resp = self
            .client
            .delete(self.url.clone())
            .headers(self.headers())
            .send()
            .await
            .map_err(|e| classify_http(&e))?;
        let s = resp.status();
        if s.is_success() || s == StatusCode::METHOD_NOT_ALLOWED || s == StatusCode::NOT_FOUND {
            Ok(())
        } else {
            Err(http_status(s))
        }
    }

    async fn post(&self, url: &reqwest::Url, msg: &Value) -> Result<reqwest::Response, Failure> {
        self.client
            .post(url.clone())
            .headers(self.headers())
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(msg.to_string())
            .send()
            .await
            .map_err(|e| classify_http(&e))
    }

    async fn open_legacy(&mut self) -> Result<(), Failure> {
        let resp = self
            .client
            .get(self.url.clone())
            .headers(self.headers.clone())
            .header(ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| classify_http(&e))?;
        if !resp.status().is_success() {
            return Err(http_status(resp.status()));
        }
        let (tx, mut rx) = mpsc::channel(64);
        let reader = tokio::spawn(read_legacy(resp, tx));
        let endpoint = match rx.recv().await {
            Some(Ok(Value::String(e))) => e,
            Some(Err(f)) => return Err(f),
            _ => {
                return Err(Failure::protocol(
                    "the SSE stream did not start with an `endpoint` event",
                ))
            }
        };
        let post_to = self
            .url
            .join(&endpoint)
            .map_err(|_| Failure::protocol(format!("the endpoint `{endpoint}` is not a URL")))?;
        self.legacy = Some(Legacy {
            post_to,
            messages: rx,
            reader,
        });
        Ok(())
    }

    async fn legacy_request(&mut self, msg: &Value, id: Option<u64>) -> Result<Value, Failure> {
        let Some(post_to) = self.legacy.as_ref().map(|l| l.post_to.clone()) else {
            return Err(Failure::protocol("no SSE stream"));
        };
        let resp = self.post(&post_to, msg).await?;
        if !resp.status().is_success() {
            return Err(http_status(resp.status()));
        }
        let Some(id) = id else {
            return Ok(Value::Null);
        };
        let Some(legacy) = self.legacy.as_mut() else {
            return Err(Failure::protocol("no SSE stream"));
        };
        loop {
            match legacy.messages.recv().await {
                Some(Ok(v)) if super::wire::answers(&v, id) => return Ok(v),
                Some(Ok(_)) => continue,
                Some(Err(f)) => return Err(f),
                None => {
                    return Err(Failure::new(
                        FailureReason::ConnectionFailed,
                        "the SSE stream ended before the answer",
                    ))
                }
            }
        }
    }
}

fn http_status(s: StatusCode) -> Failure {
    Failure::new(
        FailureReason::HttpStatus { code: s.as_u16() },
        format!("the server answered HTTP {s}"),
    )
}

/// The answer to `id` in a POST's response: a JSON body or an SSE stream.
async fn read_answer(mut resp: reqwest::Response, id: u64) -> Result<Value, Failure> {
    let ctype = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if ctype.starts_with("text/event-stream") {
        let mut parser = sse::Parser::new();
        let mut events = Vec::new();
        loop {
            let chunk = resp.chunk().await.map_err(|e| classify_http(&e))?;
            let Some(chunk) = chunk else {
                return Err(Failure::protocol("the SSE stream ended without the answer"));
            };
            parser
                .feed(&chunk, MAX_MESSAGE, &mut events)
                .map_err(|e| Failure::protocol(e.to_string()))?;
            for ev in events.drain(..) {
                if !ev.carries_message() {
                    continue;
                }
                let v = super::wire::parse_message(ev.data.as_deref().unwrap_or_default())?;
                if super::wire::answers(&v, id) {
                    return Ok(v);
                }
            }
        }
    }
    let body = resp.bytes().await.map_err(|e| classify_http(&e))?;
    if !ctype.starts_with("application/json") {
        return Err(Failure::protocol(format!(
            "the answer is `{}`, not JSON or an SSE stream",
            if ctype.is_empty() { "untyped" } else { &ctype }
        )));
    }
    let v = super::wire::parse_message(&body)?;
    match v {
        Value::Array(items) => items
            .into_iter()
            .find(|m| super::wire::answers(m, id))
            .ok_or_else(|| Failure::protocol("the batch holds no answer to the request")),
        v if super::wire::answers(&v, id) => Ok(v),
        _ => Err(Failure::protocol("the answer carries another id")),
    }
}

/// Read a legacy SSE stream: the `endpoint` event first (as a string), then messages.
async fn read_legacy(mut resp: reqwest::Response, tx: mpsc::Sender<Result<Value, Failure>>) {
    let mut parser = sse::Parser::new();
    let mut events = Vec::new();
    loop {
        let chunk = match resp.chunk().await {
            Ok(Some(c)) => c,
            Ok(None) => return,
            Err(e) => {
                let _ = tx.send(Err(classify_http(&e))).await;
                return;
            }
        };
        if let Err(e) = parser.feed(&chunk, MAX_MESSAGE, &mut events) {
            let _ = tx.send(Err(Failure::protocol(e.to_string()))).await;
            return;
        }
        for ev in events.drain(..) {
            let data = ev.data.clone().unwrap_or_default();
            let item = if ev.event.as_deref() == Some("endpoint") {
                Ok(Value::String(
                    String::from_utf8_lossy(&data).trim().to_string(),
                ))
            } else if ev.carries_message() {
                super::wire::parse_message(&data)
            } else {
                continue;
            };
            if tx.send(item).await.is_err() {
                return;
            }
        }
    }
}
