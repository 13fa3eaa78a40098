//! A cheap, borrowing view of a JSON-RPC 2.0 message.
//!
//! [`classify`] reads a line or an HTTP body and says what it is (request, notification,
//! response, error, batch or invalid) and reads its id, method and tool name, without
//! building a tree of the payload and without re-serializing anything: unknown fields are
//! never touched, so a message nobody changes can be forwarded byte for byte. Invalid input
//! is a value ([`Message::Invalid`]), never a panic.

use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// What kind of JSON-RPC message a view is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Request,
    Notification,
    Response,
    Error,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Request => "request",
            Kind::Notification => "notification",
            Kind::Response => "response",
            Kind::Error => "error",
        }
    }
}

/// A normalized request id: a string id and a numeric id never collide
/// (`"1"` and `1` are different ids in JSON-RPC).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Id {
    Num(String),
    Str(String),
}

impl Id {
    /// The id as JSON text, for logs and for building replies.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Id::Num(n) => serde_json::from_str(n).unwrap_or(serde_json::Value::Null),
            Id::Str(s) => serde_json::Value::String(s.clone()),
        }
    }
}

impl std::fmt::Display for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Id::Num(n) => f.write_str(n),
            Id::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// One JSON-RPC message, read but not rebuilt.
#[derive(Debug, Clone)]
pub struct View<'a> {
    pub kind: Kind,
    pub id: Option<Id>,
    pub method: Option<Cow<'a, str>>,
    /// `params.name` of a `tools/call` request.
    pub tool: Option<Cow<'a, str>>,
    pub params: Option<&'a RawValue>,
    pub result: Option<&'a RawValue>,
    pub error: Option<&'a RawValue>,
}

impl View<'_> {
    /// The JSON-RPC error code of an error response.
    pub fn error_code(&self) -> Option<i64> {
        #[derive(Deserialize)]
        struct E {
            code: i64,
        }
        let raw = self.error?;
        serde_json::from_str::<E>(raw.get()).ok().map(|e| e.code)
    }

    /// Whether a result carries `isError: true` (a tool error).
    pub fn is_tool_error(&self) -> bool {
        #[derive(Deserialize)]
        struct R {
            #[serde(rename = "isError", default)]
            is_error: bool,
        }
        self.result
            .and_then(|raw| serde_json::from_str::<R>(raw.get()).ok())
            .is_some_and(|r| r.is_error)
    }

    /// The `arguments` of a `tools/call` request, parsed (only when a selector needs them).
    pub fn tool_arguments(&self) -> Option<serde_json::Value> {
        #[derive(Deserialize)]
        struct P {
            arguments: Option<serde_json::Value>,
        }
        let raw = self.params?;
        serde_json::from_str::<P>(raw.get()).ok()?.arguments
    }
}

/// A classified line or body.
#[derive(Debug, Clone)]
pub enum Message<'a> {
    Single(View<'a>),
    /// A JSON-RPC batch (allowed by protocol version 2025-03-26); each element classified.
    /// An element that is not a valid message is `Err(reason)`.
    Batch(Vec<Result<View<'a>, String>>),
    /// Not JSON-RPC 2.0: the reason, for logs.
    Invalid(String),
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "raw_present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

/// Keep `"id": null` as a present raw value (plain `Option` would read it as absent).
fn raw_present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct NameParam<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
}

/// Classify one message (a line of stdio, or an HTTP body / SSE event data).
pub fn classify(bytes: &[u8]) -> Message<'_> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Message::Invalid("not valid UTF-8".into());
    };
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        let items: Vec<&RawValue> = match serde_json::from_str(text) {
            Ok(items) => items,
            Err(e) => return Message::Invalid(format!("not a JSON array: {e}")),
        };
        if items.is_empty() {
            return Message::Invalid("empty batch".into());
        }
        return Message::Batch(items.into_iter().map(|raw| view_of(raw.get())).collect());
    }
    match view_of(text) {
        Ok(v) => Message::Single(v),
        Err(e) => Message::Invalid(e),
    }
}

fn view_of(text: &str) -> Result<View<'_>, String> {
    if !text.trim_start().starts_with('{') {
        return Err("not a JSON object".into());
    }
    let env: Envelope<'_> = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    if env.jsonrpc.as_deref() != Some("2.0") {
        return Err("missing or wrong \"jsonrpc\" (must be \"2.0\")".into());
    }
    let id = match env.id {
        None => None,
        Some(raw) => Some(parse_id(raw)?),
    };
    let kind = match (&env.method, &id, env.result.is_some(), env.error.is_some()) {
        (Some(_), Some(Some(_)), false, false) => Kind::Request,
        (Some(_), None, false, false) => Kind::Notification,
        (None, Some(_), true, false) => Kind::Response,
        (None, Some(_), false, true) => Kind::Error,
        (Some(_), Some(None), _, _) => return Err("request with a null id".into()),
        (None, None, _, _) => return Err("neither a method nor an id".into()),
        (None, Some(_), true, true) => return Err("both result and error".into()),
        _ => return Err("not a request, notification or response".into()),
    };
    let tool = if kind == Kind::Request && env.method.as_deref() == Some("tools/call") {
        env.params
            .and_then(|p| serde_json::from_str::<NameParam<'_>>(p.get()).ok())
            .and_then(|p| p.name)
    } else {
        None
    };
    Ok(View {
        kind,
        id: id.flatten(),
        method: env.method,
        tool,
        params: env.params,
        result: env.result,
        error: env.error,
    })
}

/// `Ok(None)` is a JSON null id (allowed on error responses only).
fn parse_id(raw: &RawValue) -> Result<Option<Id>, String> {
    let s = raw.get().trim();
    match s.as_bytes().first() {
        Some(b'"') => serde_json::from_str::<String>(s)
            .map(|v| Some(Id::Str(v)))
            .map_err(|e| format!("bad id: {e}")),
        Some(b'-' | b'0'..=b'9') => Ok(Some(Id::Num(s.to_string()))),
        Some(b'n') if s == "null" => Ok(None),
        _ => Err("id must be a string or a number".into()),
    }
}

/// Build a JSON-RPC error response (used for short-circuits and relay errors).
pub fn error_response(
    id: Option<&Id>,
    code: i64,
    message: &str,
    data: Option<&serde_json::Value>,
) -> Vec<u8> {
    let mut err = serde_json::json!({ "code": code, "message": message });
    if let Some(d) = data {
        err["data"] = d.clone();
    }
    let msg = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id.map_or(serde_json::Value::Null, Id::to_json),
        "error": err,
    });
    serde_json::to_vec(&msg).unwrap_or_default()
}

/// Build a JSON-RPC success response around a result value.
pub fn result_response(id: Option<&Id>, result: serde_json::Value) -> Vec<u8> {
    let msg = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id.map_or(serde_json::Value::Null, Id::to_json),
        "result": result,
    });
    serde_json::to_vec(&msg).unwrap_or_default()
}

/// What [`TopLevelId`] found at the top level of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopId {
    /// The raw JSON text of the top-level `id` (a string, a number or `null`), exactly as
    /// the sender wrote it, so a reply can carry it unchanged.
    Found(String),
    /// The message is a complete object without a top-level `id`.
    Absent,
    /// The input ended before the top-level `id` was seen.
    Unknown,
    /// Not a JSON object, or an `id` that is not a string, a number or `null`.
    Invalid,
}

/// A streaming finder of the top-level `id` of a JSON-RPC message, fed in pieces (a
/// message too big to keep is read chunk by chunk and forgotten). Keys and values nested in
/// `params`, `result` or `arguments` never count, nor does `"id"` inside a string; escaped
/// keys (`"\u0069d"`) are decoded. It keeps only a few small buffers, whatever the size of
/// the message.
#[derive(Debug, Default)]
pub struct TopLevelId {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// At depth 1: the next string is a key.
    expect_key: bool,
    /// At depth 1: a `:` was seen and the value has not started.
    awaiting_value: bool,
    /// The top-level key being read (without quotes), while it is read.
    key: Option<Vec<u8>>,
    /// The last top-level key was `id`.
    key_is_id: bool,
    /// The raw text of the id value, while it is read.
    value: Option<Vec<u8>>,
    result: Option<TopId>,
}

/// Longest top-level key worth decoding (`"id"` escaped in full is 12 bytes).
const MAX_KEY: usize = 64;
/// Longest id text accepted.
const MAX_ID: usize = 1024;

impl TopLevelId {
    pub fn new() -> TopLevelId {
        TopLevelId::default()
    }

    /// Whether the answer is known (more input changes nothing).
    pub fn is_done(&self) -> bool {
        self.result.is_some()
    }

    /// Feed the next piece of the message.
    pub fn feed(&mut self, chunk: &[u8]) {
        for &b in chunk {
            if self.result.is_some() {
                return;
            }
            self.byte(b);
        }
    }

    /// What was found, once the whole message (or all of it there is) was fed.
    pub fn finish(mut self) -> TopId {
        if self.result.is_none() {
            if let Some(v) = self.value.take() {
                if v.first() != Some(&b'"') {
                    // A number or `null` at the very end of the input: it may go on.
                    return TopId::Unknown;
                }
            }
        }
        self.result.unwrap_or(TopId::Unknown)
    }

    fn byte(&mut self, b: u8) {
        if let Some(v) = &mut self.value {
            if v.first() == Some(&b'"') {
                v.push(b);
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.end_value();
                    return;
                }
            } else if b == b',' || b == b'}' || b.is_ascii_whitespace() {
                self.end_value();
                return;
            } else {
                v.push(b);
            }
            if self.value.as_ref().is_some_and(|v| v.len() > MAX_ID) {
                self.result = Some(TopId::Invalid);
            }
            return;
        }
        if self.in_string {
            let mut end = false;
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                end = true;
            }
            if end {
                self.in_string = false;
                if let Some(k) = self.key.take() {
                    self.key_is_id = key_is_id(&k);
                }
            } else if let Some(k) = &mut self.key {
                if k.len() <= MAX_KEY {
                    k.push(b);
                }
            }
            return;
        }
        if b.is_ascii_whitespace() {
            return;
        }
        if self.depth == 1 && self.awaiting_value {
            self.awaiting_value = false;
            if self.key_is_id {
                match b {
                    b'"' | b'-' | b'0'..=b'9' | b'n' => {
                        self.value = Some(vec![b]);
                        return;
                    }
                    _ => {
                        self.result = Some(TopId::Invalid);
                        return;
                    }
                }
            }
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.expect_key = false;
                    self.key = Some(Vec::new());
                }
            }
            b'{' | b'[' => {
                if self.depth == 0 && b == b'[' {
                    self.result = Some(TopId::Invalid);
                    return;
                }
                if self.depth == 0 {
                    self.expect_key = true;
                }
                self.depth += 1;
            }
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 0 {
                    self.result = Some(TopId::Absent);
                }
            }
            b':' if self.depth == 1 => self.awaiting_value = true,
            b',' if self.depth == 1 => {
                self.expect_key = true;
                self.key_is_id = false;
            }
            _ if self.depth == 0 => self.result = Some(TopId::Invalid),
            _ => {}
        }
    }

    fn end_value(&mut self) {
        let text = self.value.take().unwrap_or_default();
        self.result = Some(match serde_json::from_slice::<serde_json::Value>(&text) {
            Ok(
                serde_json::Value::String(_)
                | serde_json::Value::Number(_)
                | serde_json::Value::Null,
            ) => TopId::Found(String::from_utf8_lossy(&text).into_owned()),
            _ => TopId::Invalid,
        });
    }
}

fn key_is_id(k: &[u8]) -> bool {
    if k == b"id" {
        return true;
    }
    if k.len() > MAX_KEY || !k.contains(&b'\\') {
        return false;
    }
    let mut quoted = Vec::with_capacity(k.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(k);
    quoted.push(b'"');
    serde_json::from_slice::<String>(&quoted).is_ok_and(|s| s == "id")
}

/// The top-level id of a whole message (see [`TopLevelId`]).
pub fn top_level_id(bytes: &[u8]) -> TopId {
    let mut f = TopLevelId::new();
    f.feed(bytes);
    f.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_level_id_ignores_nested_and_quoted_ids() {
        let found = |s: &str| TopId::Found(s.to_string());
        assert_eq!(
            top_level_id(br#"{"jsonrpc":"2.0","id":7,"method":"x"}"#),
            found("7")
        );
        // `arguments.id` comes first in the text; the caller's id is the top-level one.
        assert_eq!(
            top_level_id(
                br#"{"params":{"name":"get","arguments":{"id":"INC-1"}},"id":42,"jsonrpc":"2.0"}"#
            ),
            found("42")
        );
        assert_eq!(
            top_level_id(br#"{"method":"m","params":[{"id":1},["id",{"id":2}]],"id":"abc"}"#),
            found(r#""abc""#)
        );
        // "id" inside strings, as a value and with escaped quotes, never counts.
        assert_eq!(
            top_level_id(br#"{"note":"\"id\": 5","x":"id","id" : -3 }"#),
            found("-3")
        );
        // An escaped key is still `id`; an escaped string id keeps its exact text.
        assert_eq!(top_level_id(br#"{"\u0069d":1e2}"#), found("1e2"));
        assert_eq!(top_level_id(br#"{"id":"a\"b\\"}"#), found(r#""a\"b\\""#));
        assert_eq!(top_level_id(br#"{"id":null}"#), found("null"));
        assert_eq!(
            top_level_id(b"{\"id\":123456789012345678901234567890}"),
            found("123456789012345678901234567890")
        );
        // A key that only looks like `id`.
        assert_eq!(top_level_id(br#"{"ids":1,"xid":2}"#), TopId::Absent);
    }

    #[test]
    fn top_level_id_knows_what_it_does_not_know() {
        assert_eq!(
            top_level_id(br#"{"jsonrpc":"2.0","method":"x"}"#),
            TopId::Absent
        );
        assert_eq!(
            top_level_id(br#"{"params":{"arguments":{"id":9,"blob":"xxxx"#),
            TopId::Unknown
        );
        assert_eq!(top_level_id(br#"{"id":12"#), TopId::Unknown);
        assert_eq!(top_level_id(br#"{"id":{"a":1}}"#), TopId::Invalid);
        assert_eq!(top_level_id(br#"{"id":true}"#), TopId::Invalid);
        assert_eq!(top_level_id(br#"[{"id":1}]"#), TopId::Invalid);
        assert_eq!(top_level_id(b"garbage"), TopId::Invalid);
    }

    #[test]
    fn top_level_id_streams_in_any_pieces() {
        let msg = br#"{"params":{"arguments":{"id":"nested","s":"}{\"id\":0"}}, "\u0069d" : "real\"one" ,"method":"m"}"#;
        for size in 1..msg.len() {
            let mut f = TopLevelId::new();
            for chunk in msg.chunks(size) {
                f.feed(chunk);
            }
            assert_eq!(
                f.finish(),
                TopId::Found(r#""real\"one""#.to_string()),
                "chunks of {size}"
            );
        }
    }

    fn single(s: &str) -> View<'_> {
        match classify(s.as_bytes()) {
            Message::Single(v) => v,
            other => panic!("expected a single message, got {other:?}"),
        }
    }

    #[test]
    fn classifies_every_kind() {
        let r = single(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"m":1}}}"#,
        );
        assert_eq!(r.kind, Kind::Request);
        assert_eq!(r.id, Some(Id::Num("1".into())));
        assert_eq!(r.tool.as_deref(), Some("echo"));
        let n = single(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert_eq!(n.kind, Kind::Notification);
        assert_eq!(n.id, None);
        let ok = single(r#"{"jsonrpc":"2.0","id":"a","result":{"isError":true}}"#);
        assert_eq!(ok.kind, Kind::Response);
        assert!(ok.is_tool_error());
        assert_eq!(ok.id, Some(Id::Str("a".into())));
        let e = single(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#);
        assert_eq!(e.kind, Kind::Error);
        assert_eq!(e.error_code(), Some(-32700));
        assert_eq!(e.id, None);
    }

    #[test]
    fn string_and_number_ids_differ_and_escapes_normalize() {
        let a = single(r#"{"jsonrpc":"2.0","id":"1","result":{}}"#);
        let b = single(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        let c = single(r#"{"jsonrpc":"2.0","id":"\u0031","result":{}}"#);
        assert_ne!(a.id, b.id);
        assert_eq!(a.id, c.id);
    }

    #[test]
    fn escaped_tool_names_are_read() {
        let r =
            single(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\"b"}}"#);
        assert_eq!(r.tool.as_deref(), Some("a\"b"));
    }

    #[test]
    fn batches_classify_each_element() {
        let m = classify(
            br#" [{"jsonrpc":"2.0","id":1,"method":"ping"}, 5, {"jsonrpc":"2.0","method":"x"}]"#,
        );
        let Message::Batch(items) = m else {
            panic!("not a batch")
        };
        assert_eq!(items.len(), 3);
        assert!(items[0].is_ok());
        assert!(items[1].is_err());
        assert_eq!(
            items[2].as_ref().map(|v| v.kind).ok(),
            Some(Kind::Notification)
        );
    }

    #[test]
    fn invalid_input_is_a_value() {
        for bad in [
            &b"{"[..],
            b"",
            b"[]",
            b"42",
            b"\xff\xfe",
            br#"{"jsonrpc":"1.0","id":1,"method":"x"}"#,
            br#"{"id":1,"method":"x"}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":1,"error":{}}"#,
            br#"{"jsonrpc":"2.0","id":{},"method":"x"}"#,
            br#"{"jsonrpc":"2.0"}"#,
        ] {
            assert!(
                matches!(classify(bad), Message::Invalid(_)),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn error_response_is_valid_jsonrpc() {
        let bytes = error_response(Some(&Id::Num("7".into())), -32000, "boom", None);
        let v = single(std::str::from_utf8(&bytes).unwrap_or_default());
        assert_eq!(v.kind, Kind::Error);
        assert_eq!(v.error_code(), Some(-32000));
    }
}
