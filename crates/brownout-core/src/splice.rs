//! Messages the engine writes keep the caller's id exactly as the caller wrote it.
//!
//! A JSON-RPC id is compared by value, but a client matches answers by the id it sent, and
//! a `serde_json::Value` cannot hold every number a client may send: `1e2` would come back
//! `100.0`, and `12345678901234567890123` would lose digits. So a reply the engine makes
//! (an injected error, a rate-limit answer, an expired session) and a message a fault
//! rewrites (schema drift, partial results) are serialized with the id's raw text spliced
//! in, never re-encoded through a number.

use crate::jsonrpc::{classify, Id, Message};
use serde_json::Value;

/// The id as JSON text: a numeric id exactly as it was written, a string id as a JSON
/// string (same value; escapes may be spelled differently). `null` for text that is not a
/// JSON number (an id a driver built by hand).
pub fn raw_id(id: Option<&Id>) -> String {
    match id {
        None => "null".into(),
        Some(Id::Num(n)) if is_json_number(n) => n.clone(),
        Some(Id::Num(_)) => "null".into(),
        Some(Id::Str(s)) => serde_json::to_string(s).unwrap_or_else(|_| "null".into()),
    }
}

fn is_json_number(text: &str) -> bool {
    text.starts_with(|c: char| c == '-' || c.is_ascii_digit())
        && matches!(serde_json::from_str::<Value>(text), Ok(Value::Number(_)))
}

/// Serialize a JSON-RPC message; where its `id` member is (by value) `id`, write `id`'s raw
/// text instead of the number the value holds. Members keep their order.
pub fn to_vec_with_id(message: &Value, id: Option<&Id>) -> Vec<u8> {
    let (Value::Object(members), Some(id)) = (message, id) else {
        return serde_json::to_vec(message).unwrap_or_default();
    };
    let keep = members.get("id").is_some_and(|v| *v == id.to_json());
    if !keep || matches!(id, Id::Str(_)) {
        // A string id round-trips through a value unchanged.
        return serde_json::to_vec(message).unwrap_or_default();
    }
    let mut out = Vec::with_capacity(128);
    out.push(b'{');
    for (i, (k, v)) in members.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(serde_json::to_string(k).unwrap_or_default().as_bytes());
        out.push(b':');
        if k == "id" {
            out.extend_from_slice(raw_id(Some(id)).as_bytes());
        } else {
            out.extend_from_slice(&serde_json::to_vec(v).unwrap_or_default());
        }
    }
    out.push(b'}');
    out
}

/// Serialize a rewritten message, keeping the id of the message it was made from
/// (`original`: the bytes that arrived).
pub fn to_vec_like(message: &Value, original: &[u8]) -> Vec<u8> {
    let numeric = matches!(message.get("id"), Some(Value::Number(_)));
    let id = match (numeric, classify(original)) {
        (true, Message::Single(v)) => v.id,
        _ => None,
    };
    to_vec_with_id(message, id.as_ref())
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
    to_vec_with_id(&msg, id)
}

/// Build a JSON-RPC success response around a result value.
pub fn result_response(id: Option<&Id>, result: serde_json::Value) -> Vec<u8> {
    let msg = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id.map_or(serde_json::Value::Null, Id::to_json),
        "result": result,
    });
    to_vec_with_id(&msg, id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numeric_ids_keep_their_text() {
        for raw in ["1e2", "12345678901234567890123", "-0", "7", "1.50"] {
            let id = Id::Num(raw.into());
            let v = json!({"jsonrpc": "2.0", "id": id.to_json(), "result": {"x": 1}});
            let out = String::from_utf8(to_vec_with_id(&v, Some(&id))).expect("utf8");
            assert_eq!(
                out,
                format!(r#"{{"jsonrpc":"2.0","id":{raw},"result":{{"x":1}}}}"#)
            );
        }
    }

    #[test]
    fn a_changed_id_is_not_overwritten() {
        let id = Id::Num("1e2".into());
        let v = json!({"jsonrpc": "2.0", "id": 5, "result": {}});
        assert_eq!(
            to_vec_with_id(&v, Some(&id)),
            br#"{"jsonrpc":"2.0","id":5,"result":{}}"#.to_vec()
        );
    }

    #[test]
    fn hand_built_ids_that_are_not_numbers_become_null() {
        assert_eq!(raw_id(Some(&Id::Num("abc".into()))), "null");
        assert_eq!(raw_id(Some(&Id::Str("a\"b".into()))), r#""a\"b""#);
        assert_eq!(raw_id(None), "null");
    }
}
