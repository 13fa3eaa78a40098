//! W3C Trace Context (`traceparent`) as MCP carries it: in a request's `params._meta`
//! (the MCP specification's convention, SEP-414, shared by the OpenTelemetry semantic
//! conventions for MCP), and the ids of the spans brownout starts.

use serde::Deserialize;
use serde_json::value::RawValue;

/// A trace id (16 bytes) and the id of the span to continue (8 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parent {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    /// The `sampled` flag (bit 0 of trace-flags).
    pub sampled: bool,
}

/// Parse a `traceparent` value (`00-<32 hex>-<16 hex>-<2 hex>`). Anything else — another
/// length, upper-case hex, all-zero ids, version `ff` — is not a parent (W3C Trace Context
/// §3.2: such a header is ignored and a new trace starts).
pub fn parse_traceparent(text: &str) -> Option<Parent> {
    let parts: Vec<&str> = text.split('-').collect();
    let [version, trace, span, flags, rest @ ..] = parts.as_slice() else {
        return None;
    };
    // Version 00 has exactly four fields; a later version may append more.
    if version.len() != 2 || *version == "ff" || (*version == "00" && !rest.is_empty()) {
        return None;
    }
    let _ = hex::<1>(version)?;
    let trace_id = hex::<16>(trace)?;
    let span_id = hex::<8>(span)?;
    let [flags] = hex::<1>(flags)?;
    if trace_id == [0; 16] || span_id == [0; 8] {
        return None;
    }
    Some(Parent {
        trace_id,
        span_id,
        sampled: flags & 1 == 1,
    })
}

/// The `traceparent` value that makes a callee's span a child of `p`
/// (`00-<trace>-<span>-01`).
pub fn traceparent(p: &Parent) -> String {
    format!(
        "00-{}-{}-{:02x}",
        to_hex(&p.trace_id),
        to_hex(&p.span_id),
        u8::from(p.sampled)
    )
}

/// `N` bytes from exactly `2N` lower-case hex digits.
fn hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let b = text.as_bytes();
    if b.len() != 2 * N {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = digit(b[2 * i])? << 4 | digit(b[2 * i + 1])?;
    }
    Some(out)
}

/// Lower-case hex of `bytes` (ids in test output and docs).
pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A fresh, random span id (never all zero).
pub fn new_span_id() -> [u8; 8] {
    let mut id = [0u8; 8];
    while id == [0; 8] {
        // The OS's generator failing is not worth a lost span: a zero id is retried with the
        // clock's bits mixed in.
        if getrandom::fill(&mut id).is_err() {
            id = clock_bits().to_le_bytes();
        }
    }
    id
}

/// A fresh, random trace id (never all zero).
pub fn new_trace_id() -> [u8; 16] {
    let mut id = [0u8; 16];
    while id == [0; 16] {
        if getrandom::fill(&mut id).is_err() {
            id[..8].copy_from_slice(&clock_bits().to_le_bytes());
            id[8..].copy_from_slice(&new_span_id());
        }
    }
    id
}

fn clock_bits() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        | 1
}

/// What brownout reads of a client request: its id and its `params._meta` trace context.
#[derive(Deserialize)]
struct Request<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    params: Option<Params>,
}

#[derive(Deserialize)]
struct Params {
    #[serde(rename = "_meta")]
    meta: Option<Meta>,
}

#[derive(Deserialize)]
struct Meta {
    traceparent: Option<String>,
    tracestate: Option<String>,
}

/// Longest request id (as written) whose trace context is held for its call: a longer id
/// starts a new trace. A peer chooses its ids; what brownout holds for them is bounded by
/// bytes, not only by count.
pub const MAX_ID: usize = 256;

/// Longest `tracestate` kept (W3C allows 32 members of at most 256 characters; brownout keeps
/// what a collector needs, not what a peer may pad it to).
pub const MAX_TRACESTATE: usize = 512;

/// The key of a request id as the engine's call events carry it ([`id_key`]), and the trace
/// context of a request that has one. `None` when `bytes` is not a request with an id and a
/// valid `traceparent` (cheap for the many messages without one: no `traceparent` in the
/// bytes, no parse).
pub fn request_context(bytes: &[u8]) -> Option<(String, Parent, Option<String>)> {
    memchr::memmem::find(bytes, b"\"traceparent\"")?;
    let req: Request<'_> = serde_json::from_slice(bytes).ok()?;
    let meta = req.params?.meta?;
    let parent = parse_traceparent(meta.traceparent.as_deref()?)?;
    let id = req.id?.get();
    if id.len() > MAX_ID {
        return None;
    }
    let key = if id.starts_with('"') {
        format!("s:{}", serde_json::from_str::<String>(id).ok()?)
    } else {
        format!("n:{id}")
    };
    let state = meta
        .tracestate
        .filter(|s| s.len() <= MAX_TRACESTATE && s.is_ascii());
    Some((key, parent, state))
}

/// The key of a call's id: the same text [`request_context`] makes of the id as written.
pub fn id_key(id: &brownout_core::jsonrpc::Id) -> String {
    use brownout_core::jsonrpc::Id;
    match id {
        Id::Num(n) => format!("n:{n}"),
        Id::Str(s) => format!("s:{s}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_traceparent_is_read_and_bad_ones_are_not() {
        let p = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
            .expect("valid");
        assert_eq!(to_hex(&p.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(to_hex(&p.span_id), "00f067aa0ba902b7");
        assert!(p.sampled);
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        ] {
            assert_eq!(parse_traceparent(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_request_context_is_keyed_like_the_call_events_ids() {
        use brownout_core::jsonrpc::Id;
        let req = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"k=v"}}}"#;
        let (key, parent, state) = request_context(req).expect("context");
        assert_eq!(key, id_key(&Id::Num("7".into())));
        assert_eq!(to_hex(&parent.span_id), "00f067aa0ba902b7");
        assert_eq!(state.as_deref(), Some("k=v"));
        let req = br#"{"jsonrpc":"2.0","id":"a\u0062","method":"ping","params":{"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"}}}"#;
        let (key, parent, _) = request_context(req).expect("context");
        assert_eq!(key, id_key(&Id::Str("ab".into())));
        assert!(!parent.sampled);
        // No context, a notification, a broken one: nothing.
        assert!(request_context(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).is_none());
        assert!(request_context(br#"{"jsonrpc":"2.0","method":"n","params":{"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}}"#).is_none());
        assert!(request_context(
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"traceparent":"junk"}}}"#
        )
        .is_none());
    }
}
