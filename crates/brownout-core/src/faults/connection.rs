//! `connection`: the transport misbehaves. `refuse` closes the connection without an answer
//! (the server never sees the call); `reset` forwards the call, then cuts the connection
//! before the answer reaches the client; `stall` accepts and never answers; `drop_stream`
//! cuts an SSE answer after N events or bytes. On stdio: refuse answers a JSON-RPC error,
//! reset and stall drop the answer or the call (the client waits), drop_stream does nothing.

use super::{Ctx, Shaping};
use crate::jsonrpc;
use crate::verdict::{HttpAction, StreamShape};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Refuse,
    #[default]
    Reset,
    Stall,
    DropStream,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct Connection {
    /// `refuse`, `reset` (the default), `stall` or `drop_stream`.
    #[serde(default)]
    pub mode: Mode,
    /// `drop_stream`: cut after this many SSE events (default 1 when no `after_bytes`).
    #[serde(default)]
    pub after_events: Option<u64>,
    /// `drop_stream`: cut after this many bytes of the answer.
    #[serde(default)]
    pub after_bytes: Option<u64>,
}

impl Connection {
    /// On the request.
    pub fn apply_request(&self, c: &Ctx<'_>, s: &mut Shaping<'_>) -> String {
        match self.mode {
            Mode::Refuse => {
                s.http = Some(HttpAction::Refuse);
                s.reply = Some(jsonrpc::error_response(
                    c.id,
                    -32000,
                    "brownout: connection refused",
                    None,
                ));
                "connection refused".into()
            }
            Mode::Reset => {
                s.http = Some(HttpAction::Reset);
                "connection reset before the answer".into()
            }
            Mode::Stall => {
                s.http = Some(HttpAction::Stall);
                s.drop = true;
                "connection stalled".into()
            }
            Mode::DropStream => {
                let shape = StreamShape {
                    drop_after_events: self.after_events.or(if self.after_bytes.is_none() {
                        Some(1)
                    } else {
                        None
                    }),
                    drop_after_bytes: self.after_bytes,
                    ..StreamShape::default()
                };
                let what = match (shape.drop_after_events, shape.drop_after_bytes) {
                    (Some(e), Some(b)) => format!("{e} events or {b} bytes"),
                    (Some(e), None) => format!("{e} events"),
                    (None, Some(b)) => format!("{b} bytes"),
                    (None, None) => String::new(),
                };
                s.merge_stream(&shape);
                format!("stream cut after {what}")
            }
        }
    }

    /// On the answer: a reset connection never delivers it (the stdio meaning; over HTTP
    /// the front cuts the connection when the answer would start).
    pub fn apply_response(&self, s: &mut Shaping<'_>) -> Option<String> {
        (self.mode == Mode::Reset).then(|| {
            s.drop = true;
            "answer lost to the reset".into()
        })
    }

    pub fn acts_on_response(&self) -> bool {
        self.mode == Mode::Reset
    }
}
