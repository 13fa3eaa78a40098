//! `http_status`: answer the HTTP request with a status instead of forwarding it — a 401
//! with `WWW-Authenticate`, a 500, a 503 from a gateway. The server never sees the call.
//! On stdio, which has no HTTP, the caller gets a JSON-RPC error naming the status.

use super::{Ctx, Shaping};
use crate::jsonrpc;
use crate::verdict::HttpAction;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
pub struct HttpStatus {
    /// The HTTP status code (default 503).
    #[serde(default = "default_status")]
    #[schemars(range(min = 100, max = 599))]
    pub status: u16,
    /// Response headers, e.g. `WWW-Authenticate: Bearer realm="mcp"` for a 401.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Response body (default: a JSON-RPC error with the request's id).
    #[serde(default)]
    pub body: Option<String>,
}

fn default_status() -> u16 {
    503
}

/// The reason phrase of common statuses, for messages.
pub fn reason(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

impl HttpStatus {
    pub fn apply(&self, c: &Ctx<'_>, s: &mut Shaping<'_>) -> String {
        let message = format!("brownout: HTTP {} {}", self.status, reason(self.status))
            .trim_end()
            .to_string();
        let error = jsonrpc::error_response(
            c.id,
            -32000,
            &message,
            Some(&json!({"http_status": self.status})),
        );
        let mut headers: Vec<(String, String)> = self
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let body = match &self.body {
            Some(b) => b.clone().into_bytes(),
            None => {
                if !headers
                    .iter()
                    .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
                {
                    headers.push(("Content-Type".into(), "application/json".into()));
                }
                error.clone()
            }
        };
        s.http = Some(HttpAction::Status {
            code: self.status,
            headers,
            body,
        });
        s.reply = Some(error);
        format!("HTTP {}", self.status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::KindState;
    use crate::rng::StreamKey;
    use crate::time::Time;

    #[test]
    fn a_401_carries_its_headers_and_a_stdio_error() {
        let f: HttpStatus = serde_json::from_value(json!({
            "status": 401, "headers": {"WWW-Authenticate": "Bearer realm=\"mcp\""}}))
        .expect("valid");
        let mut state = KindState::default();
        let id = jsonrpc::Id::Num("9".into());
        let c = Ctx {
            key: StreamKey::new(1, 2, 3),
            seq: 0,
            now: Time::ZERO,
            method: "tools/call",
            tool: Some("x"),
            id: Some(&id),
            state: &mut state,
        };
        let mut s = Shaping::new(b"{}");
        f.apply(&c, &mut s);
        let Some(HttpAction::Status {
            code,
            headers,
            body,
        }) = &s.http
        else {
            panic!("no status: {:?}", s.http);
        };
        assert_eq!(*code, 401);
        assert!(headers.contains(&("WWW-Authenticate".into(), "Bearer realm=\"mcp\"".into())));
        let body: serde_json::Value = serde_json::from_slice(body).expect("JSON body");
        assert_eq!(body["id"], 9);
        let reply: serde_json::Value =
            serde_json::from_slice(s.reply.as_deref().unwrap_or_default()).expect("reply");
        assert_eq!(reply["error"]["data"]["http_status"], 401);
        assert!(!s.forwards(), "the server never sees it");
    }
}
