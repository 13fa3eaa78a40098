//! The head of a request or an answer as the relay speaks of it: a status, a method, and
//! headers looked up and set by name — what a back needs, with the HTTP library out of
//! sight. Only the HTTP front and the URL back's own client ([`super::http_back`]) turn
//! these into the library's types and back, which costs nothing: [`Headers`] keeps the
//! headers as they came.

use axum::http::{header, HeaderMap, HeaderName, HeaderValue};

/// A header's name, parsed once. The relay looks a handful of names up on every call, and a
/// lookup by text parses and hashes the text each time (callgrind: a third of what the HTTP
/// relay spent beyond a plain proxy, before these).
#[derive(Debug, Clone)]
pub struct Name(HeaderName);

impl Name {
    /// `name` must be a valid header name in lower case (checked at compile time where the
    /// constant is used).
    pub const fn new(name: &'static str) -> Name {
        Name(HeaderName::from_static(name))
    }

    /// The name for the HTTP library.
    pub(crate) fn header(&self) -> &HeaderName {
        &self.0
    }
}

/// `Mcp-Session-Id`.
pub const SESSION_ID: Name = Name::new("mcp-session-id");
/// `Content-Type`.
pub const CONTENT_TYPE: Name = Name(header::CONTENT_TYPE);
/// `Accept`.
pub const ACCEPT: Name = Name(header::ACCEPT);
/// `Last-Event-ID`.
pub const LAST_EVENT_ID: Name = Name::new("last-event-id");

/// The headers of a request or an answer.
#[derive(Debug, Clone, Default)]
pub struct Headers(HeaderMap);

impl Headers {
    pub fn new() -> Headers {
        Headers::default()
    }

    /// The value of header `name`, if it is there and is text.
    pub fn get(&self, name: &Name) -> Option<&str> {
        self.0.get(&name.0).and_then(|v| v.to_str().ok())
    }

    pub fn contains(&self, name: &Name) -> bool {
        self.0.contains_key(&name.0)
    }

    /// Set header `name` to `value`, replacing it; a value that cannot be a header's is not
    /// set (`false`).
    pub fn set(&mut self, name: &Name, value: &str) -> bool {
        match HeaderValue::from_str(value) {
            Ok(v) => {
                self.0.insert(name.0.clone(), v);
                true
            }
            Err(_) => false,
        }
    }

    pub fn remove(&mut self, name: &Name) {
        self.0.remove(&name.0);
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
        headers.set(&CONTENT_TYPE, content_type);
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
