//! The head of a request or an answer as the relay speaks of it: a status, a method, and
//! headers looked up and set by name — what a back needs, with the HTTP library out of
//! sight. Only the HTTP front and the URL back's own client ([`super::http_back`]) turn
//! these into the library's types and back, which costs nothing: [`Headers`] keeps the
//! headers as they came.

use axum::http::{HeaderMap, HeaderName, HeaderValue};

/// The headers of a request or an answer.
#[derive(Debug, Clone, Default)]
pub struct Headers(HeaderMap);

impl Headers {
    pub fn new() -> Headers {
        Headers::default()
    }

    /// The value of header `name` (any case), if it is there and is text.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn contains(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// Set header `name` (lower case) to `value`, replacing it; a value that cannot be a
    /// header's is not set (`false`).
    pub fn set(&mut self, name: &'static str, value: &str) -> bool {
        match HeaderValue::from_str(value) {
            Ok(v) => {
                self.0.insert(HeaderName::from_static(name), v);
                true
            }
            Err(_) => false,
        }
    }

    pub fn remove(&mut self, name: &str) {
        self.0.remove(name);
    }

    /// Whether the `Accept` takes an SSE answer.
    pub fn accepts_sse(&self) -> bool {
        super::http::accepts_sse(&self.0)
    }

    /// Whether the body is an SSE stream (`Content-Type`).
    pub fn is_sse(&self) -> bool {
        super::http::is_sse(&self.0)
    }

    /// Whether the body is JSON (`Content-Type`).
    pub fn is_json(&self) -> bool {
        super::http::is_json(&self.0)
    }

    /// The headers for the HTTP library.
    pub(crate) fn into_map(self) -> HeaderMap {
        self.0
    }

    pub(crate) fn map(&self) -> &HeaderMap {
        &self.0
    }
}

impl From<HeaderMap> for Headers {
    fn from(map: HeaderMap) -> Headers {
        Headers(map)
    }
}

/// The status line and headers of an answer: the server's, passed on, or brownout's own.
#[derive(Debug, Clone)]
pub struct Head {
    /// The HTTP status code.
    pub status: u16,
    pub headers: Headers,
}

impl Head {
    /// A head for an answer brownout makes itself.
    pub fn own(status: u16, content_type: &'static str) -> Head {
        let mut headers = Headers::new();
        headers.set("content-type", content_type);
        Head { status, headers }
    }

    /// 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// 4xx.
    pub fn is_client_error(&self) -> bool {
        (400..500).contains(&self.status)
    }
}

/// What a request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Delete,
    /// Any other method, by its name.
    Other(String),
}

impl Method {
    pub fn from_name(name: &str) -> Method {
        match name {
            "GET" => Method::Get,
            "POST" => Method::Post,
            "DELETE" => Method::Delete,
            other => Method::Other(other.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Delete => "DELETE",
            Method::Other(name) => name,
        }
    }
}
