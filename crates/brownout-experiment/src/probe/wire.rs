//! What both MCP wires share: reading a JSON-RPC 2.0 message strictly, and matching an
//! answer to its request.

use super::reason::Failure;
use serde_json::Value;

/// Parse a message (or a batch); anything not JSON-RPC 2.0 is a `protocol_error`.
pub fn parse_message(bytes: &[u8]) -> Result<Value, Failure> {
    let v: Value = serde_json::from_slice(bytes).map_err(|_| {
        let shown: String = String::from_utf8_lossy(&bytes[..bytes.len().min(60)]).into();
        Failure::protocol(format!("not JSON: `{}`", shown.escape_debug()))
    })?;
    let ok = |m: &Value| m.get("jsonrpc").and_then(Value::as_str) == Some("2.0");
    let fine = match &v {
        Value::Array(items) => !items.is_empty() && items.iter().all(ok),
        m => ok(m),
    };
    if !fine {
        return Err(Failure::protocol(
            "not a JSON-RPC 2.0 message (`jsonrpc` is not \"2.0\")",
        ));
    }
    Ok(v)
}

/// Whether `v` is the answer (a result or an error) to request `id`.
pub fn answers(v: &Value, id: u64) -> bool {
    v.get("id").and_then(Value::as_u64) == Some(id)
        && (v.get("result").is_some() || v.get("error").is_some())
}
