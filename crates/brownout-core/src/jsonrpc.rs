//! A cheap, borrowing view of a JSON-RPC 2.0 message.
//!
//! [`classify`] reads a line or an HTTP body and says what it is (request, notification,
//! response, error, batch or invalid) and reads its id, method and tool name, without
//! building a tree of the payload and without re-serializing anything: unknown fields are
//! never touched, so a message nobody changes can be forwarded byte for byte. Invalid input
//! is a value ([`Message::Invalid`]), never a panic. A single message is read in one pass
//! (`scan`), which says of every input what serde_json says ([`reference`] keeps serde_json's
//! reading, and the tests and the fuzz target compare the two).

use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

#[doc(hidden)]
pub mod reference;
mod scan;
#[cfg(test)]
mod scan_tests;
mod top_id;
pub use top_id::{top_level_id, TopId, TopLevelId};

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

/// A request id: a string id and a numeric id never collide (`"1"` and `1` are different
/// ids in JSON-RPC). A numeric id keeps the text the client wrote (replies splice it back),
/// but compares by value: a server that answers `1e2` with `100` or `100.0` answers the same
/// call.
#[derive(Debug, Clone)]
pub enum Id {
    Num(String),
    Str(String),
}

impl Id {
    /// The number's value as comparable text: the text itself for a plain integer (no
    /// allocation on the common path), else the value's shortest form.
    fn value_key(&self) -> (u8, std::borrow::Cow<'_, str>) {
        match self {
            Id::Str(s) => (1, std::borrow::Cow::Borrowed(s.as_str())),
            Id::Num(n) => (0, number_key(n)),
        }
    }
}

fn number_key(n: &str) -> std::borrow::Cow<'_, str> {
    let digits = n.strip_prefix('-').unwrap_or(n);
    let plain = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    if plain && n != "-0" && (digits.len() == 1 || !digits.starts_with('0')) {
        return std::borrow::Cow::Borrowed(n);
    }
    match n.parse::<f64>() {
        Ok(0.0) => std::borrow::Cow::Borrowed("0"),
        Ok(v) if v.is_finite() && v.fract() == 0.0 && v.abs() < 9.007_199_254_740_992e15 => {
            std::borrow::Cow::Owned(format!("{}", v as i64))
        }
        Ok(v) if v.is_finite() => std::borrow::Cow::Owned(format!("{v:e}")),
        _ => std::borrow::Cow::Borrowed(n),
    }
}

impl PartialEq for Id {
    fn eq(&self, other: &Id) -> bool {
        self.value_key() == other.value_key()
    }
}

impl Eq for Id {}

impl std::hash::Hash for Id {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.value_key().hash(state);
    }
}

impl PartialOrd for Id {
    fn partial_cmp(&self, other: &Id) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Id {
    fn cmp(&self, other: &Id) -> std::cmp::Ordering {
        self.value_key().cmp(&other.value_key())
    }
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
    /// The JSON text of `params`, `result` and `error` (`None` when absent or `null`).
    pub params: Option<&'a str>,
    pub result: Option<&'a str>,
    pub error: Option<&'a str>,
    /// `result.isError` is `true` (read in the same pass).
    tool_error: bool,
}

impl View<'_> {
    /// The JSON-RPC error code of an error response.
    pub fn error_code(&self) -> Option<i64> {
        #[derive(Deserialize)]
        struct E {
            code: i64,
        }
        serde_json::from_str::<E>(self.error?).ok().map(|e| e.code)
    }

    /// Whether a result carries `isError: true` (a tool error).
    pub fn is_tool_error(&self) -> bool {
        self.tool_error
    }

    /// The `arguments` of a `tools/call` request, parsed (for taints' fingerprints).
    pub fn tool_arguments(&self) -> Option<serde_json::Value> {
        #[derive(Deserialize)]
        struct P {
            arguments: Option<serde_json::Value>,
        }
        serde_json::from_str::<P>(self.params?).ok()?.arguments
    }

    /// The `arguments` of a `tools/call` request, to read values from along JSON pointers
    /// ([`Arguments::at`]): found and checked once on the message's text, never parsed into
    /// a tree. `params` is read only as an object. `None` wherever
    /// [`View::tool_arguments`] is `None` (serde_json refuses the arguments).
    pub fn arguments(&self) -> Option<Arguments<'_>> {
        scan::arguments(self.params?).map(Arguments)
    }

    /// The value at a JSON pointer (split into unescaped `tokens`) inside the `arguments` of
    /// a `tools/call` request ([`View::arguments`], then [`Arguments::at`]).
    pub fn argument(&self, tokens: &[String]) -> Option<serde_json::Value> {
        self.arguments()?.at(tokens)
    }

    /// [`View::argument`] for several pointers, as a selector's argument conditions ask: the
    /// arguments are found and checked once, at the first pointer asked.
    pub fn argument_reader(&self) -> impl FnMut(&[String]) -> Option<serde_json::Value> + '_ {
        let mut arguments = None;
        move |tokens| {
            let found: Option<Arguments<'_>> = *arguments.get_or_insert_with(|| self.arguments());
            found?.at(tokens)
        }
    }
}

/// The text of a request's `arguments`, known to be what serde_json reads as a `Value`
/// ([`View::arguments`]).
#[derive(Debug, Clone, Copy)]
pub struct Arguments<'a>(&'a str);

impl Arguments<'_> {
    /// The value at a JSON pointer (split into unescaped `tokens`): only that value is
    /// parsed, read from the text along the pointer's path (a selector's argument condition
    /// costs a walk along its path, not a tree of every argument). As `Value::pointer` on
    /// the parsed arguments.
    pub fn at(&self, tokens: &[String]) -> Option<serde_json::Value> {
        let text = scan::argument_at(self.0, tokens)?;
        serde_json::from_str(text).ok()
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

impl Message<'_> {
    /// The request ids this message answers: a response's or an error's id, each one of a
    /// batch's.
    pub fn answered_ids(&self) -> Vec<Id> {
        let answers = |v: &View<'_>| matches!(v.kind, Kind::Response | Kind::Error);
        match self {
            Message::Single(v) if answers(v) => v.id.iter().cloned().collect(),
            Message::Batch(items) => items
                .iter()
                .filter_map(|i| i.as_ref().ok())
                .filter(|v| answers(v))
                .filter_map(|v| v.id.clone())
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// Classify one message (a line of stdio, or an HTTP body / SSE event data).
pub fn classify(bytes: &[u8]) -> Message<'_> {
    classify_with(bytes, view_of)
}

/// [`classify`] with `view_of` reading each single message (the one-pass reader, or
/// [`reference`]'s).
fn classify_with<'a>(
    bytes: &'a [u8],
    view_of: fn(&'a str) -> Result<View<'a>, String>,
) -> Message<'a> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Message::Invalid("not valid UTF-8".into());
    };
    if text.trim_start().starts_with('[') {
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
    let env = scan::envelope(text).map_err(|e| format!("not JSON-RPC: {e}"))?;
    let (kind, id) = kind_and_id(
        env.jsonrpc.as_deref(),
        env.id,
        env.method.is_some(),
        env.result.is_some(),
        env.error.is_some(),
    )?;
    let tool = if kind == Kind::Request && env.method.as_deref() == Some("tools/call") {
        env.name
    } else {
        None
    };
    Ok(View {
        kind,
        id,
        method: env.method,
        tool,
        params: env.params,
        result: env.result,
        error: env.error,
        tool_error: env.is_error,
    })
}

/// What the envelope's members make of a message — its kind and id — or why it is none:
/// `jsonrpc`'s value, `id`'s text, and whether it has a method, a result and an error.
fn kind_and_id(
    jsonrpc: Option<&str>,
    id: Option<&str>,
    method: bool,
    result: bool,
    error: bool,
) -> Result<(Kind, Option<Id>), String> {
    if jsonrpc != Some("2.0") {
        return Err("missing or wrong \"jsonrpc\" (must be \"2.0\")".into());
    }
    let id = id.map(parse_id).transpose()?;
    let kind = kind_of(method, id.as_ref(), result, error)?;
    Ok((kind, id.flatten()))
}

/// What a message with these members is (a method, an id — `Some(None)` for a `null` one —,
/// a result, an error), or why it is none.
fn kind_of(
    method: bool,
    id: Option<&Option<Id>>,
    result: bool,
    error: bool,
) -> Result<Kind, String> {
    Ok(match (method, id, result, error) {
        (true, Some(Some(_)), false, false) => Kind::Request,
        (true, None, false, false) => Kind::Notification,
        (false, Some(_), true, false) => Kind::Response,
        (false, Some(_), false, true) => Kind::Error,
        (true, Some(None), _, _) => return Err("request with a null id".into()),
        (false, None, _, _) => return Err("neither a method nor an id".into()),
        (false, Some(_), true, true) => return Err("both result and error".into()),
        _ => return Err("not a request, notification or response".into()),
    })
}

/// `Ok(None)` is a JSON null id (allowed on error responses only).
fn parse_id(raw: &str) -> Result<Option<Id>, String> {
    match raw.as_bytes().first() {
        Some(b'"') => scan::decode_string(raw)
            .map(|v| Some(Id::Str(v.into_owned())))
            .ok_or_else(|| "bad id: a lone surrogate".to_string()),
        Some(b'-' | b'0'..=b'9') => Ok(Some(Id::Num(raw.to_string()))),
        Some(b'n') if raw == "null" => Ok(None),
        _ => Err("id must be a string or a number".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::splice::error_response;

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

    #[test]
    fn numeric_ids_compare_by_value_and_keep_their_text() {
        let num = |t: &str| Id::Num(t.to_string());
        assert_eq!(num("1e2"), num("100"));
        assert_eq!(num("100.0"), num("100"));
        assert_eq!(num("-0"), num("0"));
        assert_eq!(num("0.0"), num("0"));
        assert_ne!(num("100"), Id::Str("100".into()));
        assert_ne!(num("1.5"), num("1"));
        assert_ne!(
            num("12345678901234567890123"),
            num("12345678901234567890124")
        );
        let mut set = std::collections::HashSet::new();
        set.insert(num("1e2"));
        assert!(set.contains(&num("100.0")), "hashes agree with equality");
        assert_eq!(num("1e2").to_string(), "1e2", "the text is kept");
    }
}
