//! The JSON-RPC text the load sends and how it reads answers, shared by both transports.
//!
//! Requests are written from pre-serialised parts (a call's `params` are serialised once per
//! workload call, not once per attempt) and answers are read with borrowed, partial
//! deserialisation: only `id`, `error`, `result.isError` and `result.structuredContent`'s
//! presence are looked at. At tens of thousands of calls a second a full `serde_json::Value`
//! per answer would cost more than the relay being measured.

use serde::Deserialize;
use serde_json::value::RawValue;

/// The protocol version the load asks for.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// How one attempt ended, from the client's side.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A result without `isError`.
    Ok,
    /// A result with `isError: true`.
    ToolError,
    /// A JSON-RPC error (or, over HTTP, an error status).
    Error { code: i64, message: String },
    /// Bytes that are not a JSON-RPC answer to the request.
    Malformed,
    /// No answer within the attempt's timeout.
    Timeout,
    /// The connection or process went away first.
    Closed,
}

/// The `initialize` request's params.
pub fn initialize_params() -> String {
    serde_json::json!({
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "brownout-load", "version": env!("CARGO_PKG_VERSION")}
    })
    .to_string()
}

/// A `tools/call`'s params, serialised once.
pub fn call_params(
    tool: &str,
    arguments: Option<&serde_json::Map<String, serde_json::Value>>,
) -> String {
    let empty = serde_json::Map::new();
    serde_json::json!({"name": tool, "arguments": arguments.unwrap_or(&empty)}).to_string()
}

/// A request line (no newline).
pub fn request(id: u64, method: &str, params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#)
}

/// A notification line (no newline).
pub fn notification(method: &str, params: Option<&str>) -> String {
    match params {
        Some(p) => format!(r#"{{"jsonrpc":"2.0","method":"{method}","params":{p}}}"#),
        None => format!(r#"{{"jsonrpc":"2.0","method":"{method}"}}"#),
    }
}

/// `notifications/cancelled` for a request given up on.
pub fn cancelled(id: u64) -> String {
    notification(
        "notifications/cancelled",
        Some(&format!(r#"{{"requestId":{id},"reason":"timeout"}}"#)),
    )
}

#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<ErrorObject>,
}

#[derive(Deserialize)]
struct ErrorObject {
    #[serde(default)]
    code: i64,
    #[serde(default)]
    message: String,
}

#[derive(Deserialize)]
struct CallResult {
    #[serde(rename = "isError", default)]
    is_error: Option<bool>,
}

/// What one incoming message is.
#[derive(Debug, PartialEq)]
pub enum Incoming<'a> {
    /// An answer to request `id`.
    Answer { id: u64, answer: Answer },
    /// A request from the server (sampling, roots, ping…): its raw id, to refuse it.
    Request { id: &'a str },
    /// A notification, an answer with an id we never use, or garbage.
    Other,
}

/// Read one message.
pub fn read(bytes: &[u8]) -> Incoming<'_> {
    let Ok(head) = serde_json::from_slice::<Head>(bytes) else {
        return Incoming::Other;
    };
    let Some(id) = head.id else {
        return Incoming::Other;
    };
    if head.method.is_some() {
        return Incoming::Request { id: id.get() };
    }
    let Ok(id) = id.get().parse::<u64>() else {
        return Incoming::Other;
    };
    let answer = match (head.result, head.error) {
        (_, Some(e)) => Answer::Error {
            code: e.code,
            message: e.message,
        },
        (Some(r), None) => match serde_json::from_str::<CallResult>(r.get()) {
            Ok(CallResult {
                is_error: Some(true),
            }) => Answer::ToolError,
            Ok(_) => Answer::Ok,
            // `result` that is not an object: fine for other methods, wrong for tools/call;
            // every request the load makes expects an object.
            Err(_) => Answer::Malformed,
        },
        (None, None) => Answer::Malformed,
    };
    Incoming::Answer { id, answer }
}

/// The refusal of a server's request (the load offers no client capabilities).
pub fn refuse(raw_id: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{raw_id},"error":{{"code":-32601,"message":"brownout load offers no client capabilities"}}}}"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_sorted_out() {
        fn r(s: &str) -> Incoming<'_> {
            read(s.as_bytes())
        }
        assert_eq!(
            r(r#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#),
            Incoming::Answer {
                id: 3,
                answer: Answer::Ok
            }
        );
        assert_eq!(
            r(r#"{"jsonrpc":"2.0","id":4,"result":{"content":[],"isError":true}}"#),
            Incoming::Answer {
                id: 4,
                answer: Answer::ToolError
            }
        );
        assert_eq!(
            r(r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32000,"message":"pool exhausted"}}"#),
            Incoming::Answer {
                id: 5,
                answer: Answer::Error {
                    code: -32000,
                    message: "pool exhausted".into()
                }
            }
        );
        assert_eq!(
            r(r#"{"jsonrpc":"2.0","id":6,"result":7}"#),
            Incoming::Answer {
                id: 6,
                answer: Answer::Malformed
            }
        );
        assert_eq!(
            r(r#"{"jsonrpc":"2.0","id":"s1","method":"roots/list"}"#),
            Incoming::Request { id: "\"s1\"" }
        );
        assert_eq!(
            r(r#"{"jsonrpc":"2.0","method":"notifications/message"}"#),
            Incoming::Other
        );
        assert_eq!(r("not json"), Incoming::Other);
    }

    #[test]
    fn requests_are_json() {
        let p = call_params(
            "search",
            serde_json::json!({"query": "db \"x\""}).as_object(),
        );
        let line = request(7, "tools/call", &p);
        let v: serde_json::Value = serde_json::from_str(&line).expect("json");
        assert_eq!(v["params"]["arguments"]["query"], "db \"x\"");
        assert_eq!(v["id"], 7);
        let c: serde_json::Value = serde_json::from_str(&cancelled(7)).expect("json");
        assert_eq!(c["params"]["requestId"], 7);
    }
}
