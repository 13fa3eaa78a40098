//! A load session over streamable HTTP: one `Mcp-Session-Id`, each request its own POST,
//! answers as JSON or as an SSE stream. A session the server forgets (404) is initialized
//! again, as a client library does, and the attempt that met the 404 counts as an error.

use super::wire::{self, Answer, Incoming};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;
use std::time::Duration;

pub struct HttpSession {
    client: reqwest::Client,
    /// Parsed once: a URL string would be parsed again on every request.
    url: reqwest::Url,
    /// The session id and protocol version the server gave, if any.
    state: RwLock<(Option<HeaderValue>, HeaderValue)>,
    /// Bumped on every re-initialization, so a burst of 404s re-initializes once.
    generation: AtomicU64,
    reinit: tokio::sync::Mutex<()>,
    next_id: AtomicU64,
    /// With `--otlp`: the W3C trace context its set-up requests (`initialize`, `tools/list`)
    /// carry in `params._meta`, so the relay's spans for them join the load's (or run's)
    /// trace; its calls carry their own call span's.
    traceparent: Option<String>,
}

/// Build the HTTP client of one session (each session its own, with its own connections,
/// like separate agents; sharing one pool would also put every request behind its lock).
pub fn client(headers: &[(String, String)]) -> Result<reqwest::Client, super::LoadError> {
    let mut map = HeaderMap::new();
    for (k, v) in headers {
        let bad = |reason: String| super::LoadError::BadHeader {
            name: k.clone(),
            reason,
        };
        let name = HeaderName::from_bytes(k.as_bytes()).map_err(|e| bad(e.to_string()))?;
        let value = HeaderValue::from_str(v).map_err(|e| bad(e.to_string()))?;
        map.insert(name, value);
    }
    map.insert(
        ACCEPT,
        HeaderValue::from_static("application/json, text/event-stream"),
    );
    map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    reqwest::Client::builder()
        .default_headers(map)
        .tcp_nodelay(true)
        .pool_idle_timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| super::LoadError::Client(e.to_string()))
}

fn lock_read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|p| p.into_inner())
}

impl HttpSession {
    /// A session not yet initialized. Each session gets its own client (its own
    /// connections), like separate agents.
    pub fn new(client: reqwest::Client, url: reqwest::Url) -> HttpSession {
        HttpSession {
            client,
            url,
            state: RwLock::new((None, HeaderValue::from_static(wire::PROTOCOL_VERSION))),
            generation: AtomicU64::new(0),
            reinit: tokio::sync::Mutex::new(()),
            next_id: AtomicU64::new(1),
            traceparent: None,
        }
    }

    /// The session with its set-up requests under the trace context `traceparent`.
    pub fn traced(mut self, traceparent: Option<String>) -> HttpSession {
        self.traceparent = traceparent;
        self
    }

    /// `params` (a JSON object without `_meta`) with `_meta.traceparent`, if traced.
    fn with_trace<'a>(&self, params: &'a str) -> std::borrow::Cow<'a, str> {
        let Some(tp) = &self.traceparent else {
            return std::borrow::Cow::Borrowed(params);
        };
        let trimmed = params.trim_start();
        let Some(rest) = trimmed.strip_prefix('{') else {
            return std::borrow::Cow::Borrowed(params);
        };
        if rest.contains("\"_meta\"") {
            return std::borrow::Cow::Borrowed(params);
        }
        let sep = if rest.trim_start().starts_with('}') {
            ""
        } else {
            ","
        };
        std::borrow::Cow::Owned(format!(r#"{{"_meta":{{"traceparent":"{tp}"}}{sep}{rest}"#))
    }

    /// `initialize` and `notifications/initialized`; keeps the session id and version.
    pub async fn initialize(&self, timeout: Duration) -> Result<(), String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = wire::request(
            id,
            "initialize",
            &self.with_trace(&wire::initialize_params()),
        );
        let send = self.client.post(self.url.clone()).body(body).send();
        let resp = tokio::time::timeout(timeout, send)
            .await
            .map_err(|_| "no answer to initialize in time".to_string())?
            .map_err(|e| format!("{e}"))?;
        let status = resp.status();
        if !status.is_success() {
            return Err(format!("initialize answered HTTP {status}"));
        }
        let session = resp.headers().get("mcp-session-id").cloned();
        let messages = tokio::time::timeout(timeout, messages(resp, id))
            .await
            .map_err(|_| "initialize's answer did not finish in time".to_string())?;
        let answer = messages.ok_or("initialize got no answer")?;
        let v: serde_json::Value =
            serde_json::from_slice(&answer).map_err(|e| format!("initialize answer: {e}"))?;
        if let Some(e) = v.get("error") {
            return Err(format!("initialize failed: {e}"));
        }
        let version = v["result"]["protocolVersion"]
            .as_str()
            .and_then(|s| HeaderValue::from_str(s).ok())
            .unwrap_or(HeaderValue::from_static(wire::PROTOCOL_VERSION));
        *self.state.write().unwrap_or_else(|p| p.into_inner()) = (session, version);
        let note = wire::notification("notifications/initialized", None);
        let _ = tokio::time::timeout(timeout, self.post(note).send()).await;
        Ok(())
    }

    fn post(&self, body: String) -> reqwest::RequestBuilder {
        let (session, version) = lock_read(&self.state).clone();
        let mut r = self
            .client
            .post(self.url.clone())
            .header("mcp-protocol-version", version)
            .body(body);
        if let Some(s) = session {
            r = r.header("mcp-session-id", s);
        }
        r
    }

    /// Send a request and wait for its answer, at most `timeout` in all; an `ok` answer is
    /// checked against `schema`, and its result's value returned when `keep`.
    pub async fn request(
        &self,
        method: &str,
        params: &str,
        timeout: Duration,
        schema: Option<&jsonschema::Validator>,
        keep: bool,
    ) -> (Answer, Option<serde_json::Value>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let generation = self.generation.load(Ordering::Relaxed);
        let body = wire::request(id, method, params);
        let answer =
            match tokio::time::timeout(timeout, self.exchange(body, id, schema, keep)).await {
                Ok(Err(404)) if lock_read(&self.state).0.is_some() => {
                    self.reinitialize(generation, timeout).await;
                    Answer::Error {
                        code: 404,
                        message: "HTTP 404: session expired".into(),
                    }
                }
                Ok(Err(0)) => Answer::Closed,
                Ok(Err(status)) => Answer::Error {
                    code: i64::from(status),
                    message: format!("HTTP {status}"),
                },
                Ok(Ok(got)) => return got,
                Err(_) => Answer::Timeout,
            };
        (answer, None)
    }

    /// One POST: the answer, or the HTTP status that refused it (0: no connection).
    async fn exchange(
        &self,
        body: String,
        id: u64,
        schema: Option<&jsonschema::Validator>,
        keep: bool,
    ) -> Result<(Answer, Option<serde_json::Value>), u16> {
        let resp = self.post(body).send().await.map_err(|_| 0u16)?;
        let status = resp.status();
        if !status.is_success() {
            return Err(status.as_u16());
        }
        Ok(match messages(resp, id).await {
            Some(bytes) => match wire::read(&bytes) {
                Incoming::Answer {
                    answer, structured, ..
                } => {
                    let answer = wire::checked(answer, structured, schema);
                    let value = (keep && matches!(answer, Answer::Ok | Answer::Wrong))
                        .then(|| wire::kept(&bytes))
                        .flatten();
                    (answer, value)
                }
                _ => (Answer::Malformed, None),
            },
            None => (Answer::Malformed, None),
        })
    }

    /// Send a request and return the whole answer message (None: none in time).
    pub async fn request_raw(
        &self,
        method: &str,
        params: &str,
        timeout: Duration,
    ) -> Option<Vec<u8>> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = wire::request(id, method, &self.with_trace(params));
        let exchange = async {
            let resp = self.post(body).send().await.ok()?;
            if !resp.status().is_success() {
                return None;
            }
            messages(resp, id).await
        };
        tokio::time::timeout(timeout, exchange).await.ok().flatten()
    }

    async fn reinitialize(&self, seen: u64, timeout: Duration) {
        let _guard = self.reinit.lock().await;
        if self.generation.load(Ordering::Relaxed) != seen {
            return; // another call already did it
        }
        let _ = self.initialize(timeout).await;
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    /// End the session on the server (DELETE), as a polite client does.
    pub async fn close(&self, timeout: Duration) {
        let session = lock_read(&self.state).0.clone();
        if let Some(s) = session {
            let del = self
                .client
                .delete(self.url.clone())
                .header("mcp-session-id", s)
                .send();
            let _ = tokio::time::timeout(timeout, del).await;
        }
    }
}

/// The answer to request `id` in a response body, JSON or SSE (other events on the stream,
/// notifications and server requests, are skipped).
async fn messages(mut resp: reqwest::Response, id: u64) -> Option<Vec<u8>> {
    let sse = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !sse {
        return resp.bytes().await.ok().map(|b| b.to_vec());
    }
    let mut buf: Vec<u8> = Vec::new();
    let mut data: Vec<u8> = Vec::new();
    loop {
        // Whole lines in the buffer first.
        while let Some(nl) = buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buf.drain(..=nl).collect();
            let line = line.strip_suffix(b"\n").unwrap_or(&line);
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                if !data.is_empty() {
                    if let Incoming::Answer { id: got, .. } = wire::read(&data) {
                        if got == id {
                            return Some(data);
                        }
                    }
                    data.clear();
                }
            } else if let Some(d) = line.strip_prefix(b"data:") {
                if !data.is_empty() {
                    data.push(b'\n');
                }
                data.extend_from_slice(d.strip_prefix(b" ").unwrap_or(d));
            }
        }
        match resp.chunk().await {
            Ok(Some(c)) => buf.extend_from_slice(&c),
            _ => break,
        }
    }
    // A stream that ended without a blank line after its last event.
    (!data.is_empty()).then_some(data)
}
