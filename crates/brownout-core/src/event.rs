//! Event records: one per fault decision, one per completed call.
//!
//! The relay writes them as JSON Lines with `--events FILE` (schema in `docs/events.md`);
//! the summary is computed from the same records. Times are milliseconds of run time.

use crate::jsonrpc::Id;
use serde::{Serialize, Serializer};

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A fault hit a message.
    Fault(FaultEvent),
    /// A call completed (or was given up on), as the client saw it.
    Call(CallEvent),
    /// A fault changed a result, or the agent acted on, noticed or ignored a changed one
    /// (docs/silent.md).
    Taint(TaintEvent),
}

/// What became of a result a fault changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaintEvent {
    pub t_ms: f64,
    pub session: String,
    /// `altered` (a fault changed a delivered result), `propagated` (a later request carried
    /// a value it introduced), `noticed` (the agent re-called the tool with the same
    /// arguments, or cancelled) or `unobserved` (neither within the window).
    pub class: &'static str,
    pub fault: String,
    pub kind: &'static str,
    /// The tool whose result was changed, and its call's per-session sequence number.
    pub from_tool: String,
    pub from_seq: u64,
    /// The request that acted on it or noticed (`propagated`, `noticed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_tool: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_seq: Option<u64>,
    /// Where the value sat in the changed result and where in the request's arguments
    /// (JSON pointers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_pointer: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_pointer: Option<String>,
    /// The value, truncated to 24 characters (never whole when long).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `altered`: how many distinctive values the fault introduced (0: none to follow; the
    /// result can still be noticed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub values: Option<usize>,
    /// `propagated`: the result had been noticed first (re-fetched), and acted on after all.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub after_notice: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FaultEvent {
    pub t_ms: f64,
    pub session: String,
    /// Per-session sequence number of the call (or loose message) the fault hit.
    pub seq: u64,
    /// The call's id, written as the client wrote it (`1e2` stays `1e2`).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "id_as_written"
    )]
    pub id: Option<Id>,
    pub method: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// `to_server` or `to_client`: the message the effect landed on.
    pub direction: &'static str,
    pub fault: String,
    pub kind: &'static str,
    /// What the fault did, in words.
    pub action: String,
}

/// How a call ended, as the client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A result without `isError`.
    Ok,
    /// A JSON-RPC error.
    Error,
    /// A result with `isError: true`.
    ToolError,
    /// The client got bytes that are not a valid JSON-RPC response to its request.
    Malformed,
    /// The response was dropped or withheld: the client got nothing.
    Dropped,
    /// No response came before the call left the pending table (expired, evicted, closed).
    Unanswered,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Error => "error",
            Outcome::ToolError => "tool_error",
            Outcome::Malformed => "malformed",
            Outcome::Dropped => "dropped",
            Outcome::Unanswered => "unanswered",
        }
    }

    pub fn is_success(self) -> bool {
        self == Outcome::Ok
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallEvent {
    pub t_ms: f64,
    pub session: String,
    pub seq: u64,
    /// The call's id, written as the client wrote it (`1e2` stays `1e2`).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "id_as_written"
    )]
    pub id: Option<Id>,
    pub method: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// From the request reaching brownout to the answer leaving it (including injected delay).
    pub latency_ms: f64,
    pub outcome: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<i64>,
    /// Ids of the faults that acted on this call.
    pub faults: Vec<String>,
    /// A fault changed the payload (drift, partial, registry): the call may look
    /// successful and still be wrong.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub mutated: bool,
}

/// Write an id as its raw JSON text (see [`crate::splice`]).
fn id_as_written<S: Serializer>(id: &Option<Id>, s: S) -> Result<S::Ok, S::Error> {
    let text = crate::splice::raw_id(id.as_ref());
    match serde_json::value::RawValue::from_string(text) {
        Ok(raw) => raw.serialize(s),
        Err(e) => Err(serde::ser::Error::custom(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_written_as_the_client_wrote_them() {
        for (id, text) in [
            (Id::Num("1e2".into()), r#""id":1e2,"#),
            (
                Id::Num("12345678901234567890123".into()),
                r#""id":12345678901234567890123,"#,
            ),
            (Id::Str("a\"b".into()), r#""id":"a\"b","#),
        ] {
            let ev = Event::Fault(FaultEvent {
                t_ms: 0.0,
                session: "s".into(),
                seq: 0,
                id: Some(id),
                method: "tools/call".into(),
                tool: None,
                direction: "to_server",
                fault: "f".into(),
                kind: "error",
                action: "x".into(),
            });
            let line = serde_json::to_string(&ev).expect("serializes");
            assert!(line.contains(text), "{line}");
        }
    }
}
