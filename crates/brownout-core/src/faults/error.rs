//! `error`: answer a call with a JSON-RPC error or with a tool error.
//!
//! `phase: request` (the default) short-circuits: the server never sees the call, which is
//! safe for tools that write. `phase: response` lets the server do the work and replaces its
//! answer. `tool_error: true` answers with a successful JSON-RPC response whose result has
//! `isError: true` and a text item, the way MCP servers report tool failures.

use super::simulated::{SimOutcome, SimulatedCall};
use super::{AddedDelay, FaultKind, KindInfo, Phase as At, CALLS};
use super::{Ctx, Shaping};
use crate::jsonrpc;
use crate::select::Direction;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    #[default]
    Request,
    Response,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct ErrorFault {
    /// `request` (short-circuit, default) or `response` (replace the server's answer).
    #[serde(default)]
    pub phase: Phase,
    /// JSON-RPC error code (default -32603, internal error).
    #[serde(default)]
    pub code: Option<i64>,
    /// Error message (default "brownout: injected error").
    #[serde(default)]
    pub message: Option<String>,
    /// Optional `error.data`.
    #[serde(default)]
    pub data: Option<Value>,
    /// Answer with an `isError: true` tool result instead of a JSON-RPC error.
    #[serde(default)]
    pub tool_error: bool,
    /// Text of the tool error (default: the message).
    #[serde(default)]
    pub text: Option<String>,
}

impl ErrorFault {
    fn message(&self) -> &str {
        self.message
            .as_deref()
            .unwrap_or("brownout: injected error")
    }

    /// The JSON-RPC answer this fault gives to call `id`.
    pub fn answer(&self, id: Option<&jsonrpc::Id>) -> Value {
        let id = id.map_or(Value::Null, jsonrpc::Id::to_json);
        if self.tool_error {
            let text = self.text.as_deref().unwrap_or(self.message());
            // `resultType` is required from protocol 2026-07-28 on and allowed before it.
            json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete", "content": [{"type": "text", "text": text}], "isError": true}})
        } else {
            let mut err = json!({"code": self.code.unwrap_or(-32603), "message": self.message()});
            if let Some(d) = &self.data {
                err["data"] = d.clone();
            }
            json!({"jsonrpc": "2.0", "id": id, "error": err})
        }
    }

    fn describe(&self) -> String {
        if self.tool_error {
            "tool error (isError)".to_string()
        } else {
            format!("JSON-RPC error {}", self.code.unwrap_or(-32603))
        }
    }

    pub fn apply_request(&self, c: &Ctx<'_>, s: &mut Shaping<'_>) -> String {
        s.reply = Some(crate::splice::to_vec_with_id(&self.answer(c.id), c.id));
        format!("short-circuit: {}", self.describe())
    }

    pub fn apply_response(&self, c: &Ctx<'_>, s: &mut Shaping<'_>) -> String {
        s.replace(self.answer(c.id));
        format!("replaced response: {}", self.describe())
    }
}

pub const KIND: KindInfo = KindInfo::of::<ErrorFault>(
    "error",
    "answer with a JSON-RPC error or an isError tool result",
    CALLS,
    Direction::ToServer,
    r#"{}"#,
);

impl FaultKind for ErrorFault {
    fn acts_on_request(&self, _direction: Direction) -> bool {
        self.phase == Phase::Request
    }

    fn acts_on_response(&self, _direction: Direction) -> bool {
        self.phase == Phase::Response
    }

    fn act(&self, phase: At, c: &mut Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        Some(match phase {
            At::Request => self.apply_request(c, s),
            At::Response => self.apply_response(c, s),
        })
    }

    fn simulate(&self, _direction: Direction, _c: &mut Ctx<'_>, out: &mut SimulatedCall) -> bool {
        out.worsen(if self.phase == Phase::Request {
            SimOutcome::FailFast
        } else {
            SimOutcome::FailAfter
        });
        true
    }

    fn max_added_delay(&self) -> AddedDelay {
        AddedDelay::NONE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_valid_jsonrpc() {
        let e: ErrorFault =
            serde_json::from_value(json!({"code": -32001, "message": "down", "data": {"x": 1}}))
                .expect("valid");
        let a = e.answer(Some(&jsonrpc::Id::Num("4".into())));
        assert_eq!(a["error"]["code"], -32001);
        assert_eq!(a["error"]["data"]["x"], 1);
        assert_eq!(a["id"], 4);
        let t: ErrorFault =
            serde_json::from_value(json!({"tool_error": true, "text": "disk full"}))
                .expect("valid");
        let a = t.answer(Some(&jsonrpc::Id::Str("x".into())));
        assert_eq!(a["result"]["isError"], true);
        assert_eq!(a["result"]["content"][0]["text"], "disk full");
    }
}
