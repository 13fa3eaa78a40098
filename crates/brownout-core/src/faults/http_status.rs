//! `http_status`: answer the HTTP request with a status instead of forwarding it — a 401
//! with `WWW-Authenticate`, a 500, a 503 from a gateway. The server never sees the call.
//! On stdio, which has no HTTP, the caller gets a JSON-RPC error naming the status.

use super::simulated::{SimOutcome, SimulatedCall};
use super::{AddedDelay, FaultKind, Invalid, KindInfo, Phase, CALLS};
use super::{Ctx, Shaping};
use crate::select::Direction;
use crate::splice;
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

/// Whether `name` is a valid HTTP header name (an RFC 9110 token).
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Whether `value` can be sent as a header value (visible ASCII, spaces and tabs).
fn is_header_value(value: &str) -> bool {
    value
        .bytes()
        .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
}

impl HttpStatus {
    /// Semantic checks the schema cannot express: headers an HTTP front can send.
    pub fn check(&self) -> Vec<(String, String)> {
        let mut errs = Vec::new();
        for (name, value) in &self.headers {
            let at = format!("headers/{}", name.replace('~', "~0").replace('/', "~1"));
            if !is_token(name) {
                errs.push((at, format!("`{name}` is not a valid HTTP header name")));
            } else if !is_header_value(value) {
                errs.push((
                    at,
                    format!("the value of `{name}` is not a valid HTTP header value (visible ASCII only)"),
                ));
            }
        }
        errs
    }

    pub fn apply(&self, c: &Ctx<'_>, s: &mut Shaping<'_>) -> String {
        let message = format!("brownout: HTTP {} {}", self.status, reason(self.status))
            .trim_end()
            .to_string();
        let error = splice::error_response(
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

pub const KIND: KindInfo = KindInfo::of::<HttpStatus>(
    "http_status",
    "answer the HTTP request with a status (401 with WWW-Authenticate, 500, 503)",
    CALLS,
    Direction::ToServer,
    r#"{}"#,
);

impl FaultKind for HttpStatus {
    fn check(&self) -> Vec<Invalid> {
        HttpStatus::check(self)
            .into_iter()
            .map(|(key, message)| Invalid {
                key,
                at_key: true,
                message,
            })
            .collect()
    }

    fn acts_on_request(&self, _direction: Direction) -> bool {
        true
    }

    fn acts_on_response(&self, _direction: Direction) -> bool {
        false
    }

    fn act(&self, phase: Phase, c: &mut Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        match phase {
            Phase::Request => Some(self.apply(c, s)),
            Phase::Response => None,
        }
    }

    fn simulate(&self, _direction: Direction, _c: &mut Ctx<'_>, out: &mut SimulatedCall) -> bool {
        out.worsen(SimOutcome::FailFast);
        true
    }

    fn max_added_delay(&self) -> AddedDelay {
        AddedDelay::NONE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::KindState;
    use crate::rng::StreamKey;
    use crate::time::Time;

    /// Apply `f` to a `tools/call` with id 9.
    fn hit(f: &HttpStatus) -> Shaping<'static> {
        let mut state = KindState::default();
        let id = crate::jsonrpc::Id::Num("9".into());
        let c = Ctx {
            key: StreamKey::new(1, 2, 3),
            seq: 0,
            now: Time::ZERO,
            method: "tools/call",
            tool: Some("x"),
            id: Some(&id),
            tools: None,
            state: &mut state,
            schema: None,
        };
        let mut s = Shaping::new(b"{}");
        f.apply(&c, &mut s);
        s
    }

    fn parse(v: serde_json::Value) -> HttpStatus {
        serde_json::from_value(v).expect("valid")
    }

    #[test]
    fn a_401_carries_its_headers_and_a_stdio_error() {
        let s = hit(&parse(json!({
            "status": 401, "headers": {"WWW-Authenticate": "Bearer realm=\"mcp\""}})));
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
        assert_eq!(reply["id"], 9);
        assert_eq!(reply["error"]["code"], -32000);
        assert_eq!(reply["error"]["message"], "brownout: HTTP 401 Unauthorized");
        assert_eq!(reply["error"]["data"]["http_status"], 401);
        assert!(!s.forwards(), "the server never sees it");
    }

    #[test]
    fn the_default_is_a_503_with_a_json_rpc_body() {
        let s = hit(&parse(json!({})));
        let Some(HttpAction::Status {
            code,
            headers,
            body,
        }) = &s.http
        else {
            panic!("no status: {:?}", s.http);
        };
        assert_eq!(*code, 503);
        assert_eq!(
            headers,
            &vec![("Content-Type".to_string(), "application/json".to_string())]
        );
        let body: serde_json::Value = serde_json::from_slice(body).expect("JSON body");
        assert_eq!(body["jsonrpc"], "2.0");
        assert_eq!(body["id"], 9);
        assert_eq!(
            body["error"]["message"],
            "brownout: HTTP 503 Service Unavailable"
        );
    }

    #[test]
    fn a_custom_body_is_sent_as_given() {
        let s = hit(&parse(json!({"status": 500, "body": "upstream exploded",
            "headers": {"Content-Type": "text/plain"}})));
        let Some(HttpAction::Status { headers, body, .. }) = &s.http else {
            panic!("no status: {:?}", s.http);
        };
        assert_eq!(body.as_slice(), b"upstream exploded");
        assert_eq!(
            headers,
            &vec![("Content-Type".to_string(), "text/plain".to_string())]
        );
        // Stdio still gets a JSON-RPC error, whatever the HTTP body.
        let reply: serde_json::Value =
            serde_json::from_slice(s.reply.as_deref().unwrap_or_default()).expect("reply");
        assert_eq!(reply["error"]["data"]["http_status"], 500);
        // A status without a known reason phrase has no trailing space.
        let s = hit(&parse(json!({"status": 418})));
        let reply: serde_json::Value =
            serde_json::from_slice(s.reply.as_deref().unwrap_or_default()).expect("reply");
        assert_eq!(reply["error"]["message"], "brownout: HTTP 418");
    }

    #[test]
    fn headers_an_http_front_cannot_send_are_errors() {
        assert!(
            parse(json!({"headers": {"Retry-After": "5", "X-A_b": "ok\tfine"}}))
                .check()
                .is_empty()
        );
        let errs = parse(json!({"headers": {"Bad Name": "x", "X-Ok": "line\nbreak"}})).check();
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert_eq!(errs[0].0, "headers/Bad Name");
        assert!(errs[0].1.contains("header name"), "{errs:?}");
        assert_eq!(errs[1].0, "headers/X-Ok");
        assert!(errs[1].1.contains("header value"), "{errs:?}");
    }
}
