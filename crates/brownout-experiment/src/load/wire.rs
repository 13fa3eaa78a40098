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
    /// A result without `isError` whose `structuredContent` is missing or breaks the tool's
    /// advertised `outputSchema`: answered, but not correct (a silent failure).
    Wrong,
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
struct CallResult<'a> {
    #[serde(rename = "isError", default)]
    is_error: Option<bool>,
    #[serde(rename = "structuredContent", borrow, default)]
    structured: Option<&'a RawValue>,
}

/// What one incoming message is.
#[derive(Debug)]
pub enum Incoming<'a> {
    /// An answer to request `id`; for an `ok` result, its `structuredContent` if any.
    Answer {
        id: u64,
        answer: Answer,
        structured: Option<&'a RawValue>,
    },
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
    let mut structured = None;
    let answer = match (head.result, head.error) {
        (_, Some(e)) => Answer::Error {
            code: e.code,
            message: e.message,
        },
        (Some(r), None) => match serde_json::from_str::<CallResult>(r.get()) {
            Ok(CallResult {
                is_error: Some(true),
                ..
            }) => Answer::ToolError,
            Ok(c) => {
                structured = c.structured;
                Answer::Ok
            }
            // `result` that is not an object: fine for other methods, wrong for tools/call;
            // every request the load makes expects an object.
            Err(_) => Answer::Malformed,
        },
        (None, None) => Answer::Malformed,
    };
    Incoming::Answer {
        id,
        answer,
        structured,
    }
}

/// The output schemas tools advertise, compiled: a `tools/list` result's tools by name.
pub type Schemas = std::collections::HashMap<String, std::sync::Arc<jsonschema::Validator>>;

/// Compile the `outputSchema`s of a `tools/list` answer (a whole JSON-RPC message).
pub fn schemas(tools_list: &[u8]) -> Schemas {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(tools_list) else {
        return Schemas::new();
    };
    v["result"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| {
            let name = t.get("name")?.as_str()?.to_string();
            let validator = jsonschema::validator_for(t.get("outputSchema")?).ok()?;
            Some((name, std::sync::Arc::new(validator)))
        })
        .collect()
}

/// The tool names of a `tools/list` answer (a whole JSON-RPC message), at most `max`.
pub fn tool_names(tools_list: &[u8], max: usize) -> Vec<String> {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(tools_list) else {
        return Vec::new();
    };
    v["result"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| Some(t.get("name")?.as_str()?.to_string()))
        .take(max)
        .collect()
}

/// An `ok` answer checked against the tool's output schema, if it has one.
pub fn checked(
    answer: Answer,
    structured: Option<&RawValue>,
    schema: Option<&jsonschema::Validator>,
) -> Answer {
    match (answer, schema) {
        (Answer::Ok, Some(schema)) => {
            let valid = structured
                .and_then(|s| serde_json::from_str::<serde_json::Value>(s.get()).ok())
                .is_some_and(|v| schema.is_valid(&v));
            if valid {
                Answer::Ok
            } else {
                Answer::Wrong
            }
        }
        (a, _) => a,
    }
}

/// The largest answer whose result the load keeps for later steps (`{from, path}`
/// arguments), in bytes: a task keeps at most one result per call later steps read from.
pub const MAX_KEPT: usize = 1 << 20;

/// The value a `tools/call` answer offers later steps (`structuredContent`, else the JSON in
/// its first text item): read only for calls whose result a later step takes from. None
/// for an answer over [`MAX_KEPT`] bytes or without a result.
pub fn kept(message: &[u8]) -> Option<serde_json::Value> {
    if message.len() > MAX_KEPT {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(message).ok()?;
    brownout_sim::chain::result_value(v.get("result")?)
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
        let answer = |s: &str| match r(s) {
            Incoming::Answer { id, answer, .. } => Some((id, answer)),
            _ => None,
        };
        assert_eq!(
            answer(r#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#),
            Some((3, Answer::Ok))
        );
        assert_eq!(
            answer(r#"{"jsonrpc":"2.0","id":4,"result":{"content":[],"isError":true}}"#),
            Some((4, Answer::ToolError))
        );
        assert_eq!(
            answer(
                r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32000,"message":"pool exhausted"}}"#
            ),
            Some((
                5,
                Answer::Error {
                    code: -32000,
                    message: "pool exhausted".into()
                }
            ))
        );
        assert_eq!(
            answer(r#"{"jsonrpc":"2.0","id":6,"result":7}"#),
            Some((6, Answer::Malformed))
        );
        assert!(matches!(
            r(r#"{"jsonrpc":"2.0","id":"s1","method":"roots/list"}"#),
            Incoming::Request { id: "\"s1\"" }
        ));
        assert!(matches!(
            r(r#"{"jsonrpc":"2.0","method":"notifications/message"}"#),
            Incoming::Other
        ));
        assert!(matches!(r("not json"), Incoming::Other));
    }

    #[test]
    fn output_schemas_decide_correctness() {
        let list = br#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"n","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}},{"name":"plain","inputSchema":{"type":"object"}}]}}"#;
        let s = schemas(list);
        assert_eq!(s.len(), 1);
        let check = |text: &str| match read(text.as_bytes()) {
            Incoming::Answer {
                answer, structured, ..
            } => checked(answer, structured, s.get("n").map(|v| &**v)),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            check(r#"{"id":1,"result":{"structuredContent":{"x":1}}}"#),
            Answer::Ok
        );
        assert_eq!(
            check(r#"{"id":1,"result":{"structuredContent":{"x":"1"}}}"#),
            Answer::Wrong
        );
        assert_eq!(check(r#"{"id":1,"result":{"content":[]}}"#), Answer::Wrong);
        assert_eq!(
            check(r#"{"id":1,"result":{"isError":true}}"#),
            Answer::ToolError
        );
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
