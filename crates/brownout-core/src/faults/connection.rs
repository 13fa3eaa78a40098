//! `connection`: the transport misbehaves. `refuse` closes the connection without an answer
//! (the server never sees the call); `reset` forwards the call, then cuts the connection
//! before the answer reaches the client; `stall` accepts and never answers; `drop_stream`
//! cuts an SSE answer after N events or bytes. On stdio: refuse answers a JSON-RPC error,
//! reset and stall drop the answer or the call (the client waits), drop_stream does nothing.

use super::simulated::{SimOutcome, SimulatedCall};
use super::{AddedDelay, FaultKind, Invalid, KindInfo, Phase, CALLS};
use super::{Ctx, Shaping};
use crate::capability::{Capability, Need};
use crate::select::Direction;
use crate::splice;
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
    /// `refuse` (HTTP: closed unanswered; stdio: a JSON-RPC error), `reset` (the default;
    /// HTTP: forwarded, then cut before the answer; stdio: the answer is dropped), `stall`
    /// (HTTP: accepted, never answered; stdio: the call is dropped) or `drop_stream` (HTTP:
    /// the SSE answer is cut; stdio: no effect).
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
    /// Semantic checks the schema cannot express: the cut points belong to `drop_stream`.
    pub fn check(&self) -> Vec<(String, String)> {
        let mut errs = Vec::new();
        if self.mode != Mode::DropStream {
            for (key, v) in [
                ("after_events", self.after_events),
                ("after_bytes", self.after_bytes),
            ] {
                if v.is_some() {
                    errs.push((
                        key.to_string(),
                        format!("`{key}` needs `mode: drop_stream`"),
                    ));
                }
            }
        }
        errs
    }

    /// On the request.
    pub fn apply_request(&self, c: &Ctx<'_>, s: &mut Shaping<'_>) -> String {
        match self.mode {
            Mode::Refuse => {
                s.http = Some(HttpAction::Refuse);
                s.reply = Some(splice::error_response(
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

pub const KIND: KindInfo = KindInfo::of::<Connection>(
    "connection",
    "refuse, reset before the answer, stall, or cut an SSE stream after N events/bytes",
    CALLS,
    Direction::ToServer,
    r#"{}"#,
);

impl FaultKind for Connection {
    fn check(&self) -> Vec<Invalid> {
        Connection::check(self)
            .into_iter()
            .map(|(k, m)| Invalid::value(k, m))
            .collect()
    }

    fn acts_on_request(&self, _direction: Direction) -> bool {
        true
    }

    fn acts_on_response(&self, _direction: Direction) -> bool {
        Connection::acts_on_response(self)
    }

    fn needs(&self, _direction: Direction) -> Vec<Need> {
        match self.mode {
            Mode::DropStream => vec![Need::key(Capability::ShapeStreams, "mode")],
            _ => Vec::new(),
        }
    }

    fn act(&self, phase: Phase, c: &mut Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        match phase {
            Phase::Request => Some(self.apply_request(c, s)),
            Phase::Response => self.apply_response(s),
        }
    }

    fn simulate(&self, _direction: Direction, _c: &mut Ctx<'_>, out: &mut SimulatedCall) -> bool {
        out.worsen(match self.mode {
            Mode::Refuse => SimOutcome::FailFast,
            _ => SimOutcome::NoAnswer,
        });
        true
    }

    /// `stall` never answers (a failure the gates see, not a delay); the rest cut.
    fn max_added_delay(&self) -> AddedDelay {
        AddedDelay::NONE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::KindState;
    use crate::rng::StreamKey;
    use crate::time::Time;
    use serde_json::json;

    fn conn(v: serde_json::Value) -> Connection {
        serde_json::from_value(v).expect("valid")
    }

    /// Apply `f` to the request of a call with id 4.
    fn on_request(f: &Connection) -> Shaping<'static> {
        let mut state = KindState::default();
        let id = crate::jsonrpc::Id::Num("4".into());
        let c = Ctx {
            key: StreamKey::new(1, 2, 3),
            seq: 0,
            now: Time::ZERO,
            method: "tools/call",
            tool: Some("x"),
            id: Some(&id),
            tools: None,
            state: &mut state,
            schema: None,
        };
        let mut s = Shaping::new(b"{}");
        f.apply_request(&c, &mut s);
        s
    }

    #[test]
    fn refuse_answers_stdio_with_an_error() {
        let s = on_request(&conn(json!({"mode": "refuse"})));
        assert_eq!(s.http, Some(HttpAction::Refuse));
        let reply: serde_json::Value =
            serde_json::from_slice(s.reply.as_deref().unwrap_or_default()).expect("reply");
        assert_eq!(reply["id"], 4);
        assert_eq!(reply["error"]["message"], "brownout: connection refused");
        assert!(!s.forwards());
    }

    #[test]
    fn reset_forwards_and_loses_the_answer() {
        let f = conn(json!({}));
        assert_eq!(f.mode, Mode::Reset, "reset is the default");
        let s = on_request(&f);
        assert_eq!(s.http, Some(HttpAction::Reset));
        assert!(s.forwards(), "the server sees the call");
        assert!(f.acts_on_response());
        let mut answer = Shaping::new(b"{}");
        assert!(f.apply_response(&mut answer).is_some());
        assert!(answer.drop, "the answer never reaches a stdio client");
    }

    #[test]
    fn stall_drops_the_call() {
        let f = conn(json!({"mode": "stall"}));
        let s = on_request(&f);
        assert_eq!(s.http, Some(HttpAction::Stall));
        assert!(s.drop && s.reply.is_none(), "never answered");
        assert!(!f.acts_on_response());
    }

    #[test]
    fn drop_stream_cuts_after_one_event_by_default() {
        let s = on_request(&conn(json!({"mode": "drop_stream"})));
        assert_eq!(s.http, None);
        assert!(s.forwards() && s.reply.is_none(), "no effect on stdio");
        let shape = s.stream.expect("a shape");
        assert_eq!(
            (shape.drop_after_events, shape.drop_after_bytes),
            (Some(1), None)
        );
        let s = on_request(&conn(json!({"mode": "drop_stream", "after_bytes": 512})));
        let shape = s.stream.expect("a shape");
        assert_eq!(
            (shape.drop_after_events, shape.drop_after_bytes),
            (None, Some(512))
        );
        let s = on_request(&conn(
            json!({"mode": "drop_stream", "after_events": 3, "after_bytes": 512}),
        ));
        let shape = s.stream.expect("a shape");
        assert_eq!(
            (shape.drop_after_events, shape.drop_after_bytes),
            (Some(3), Some(512))
        );
    }

    #[test]
    fn cut_points_need_drop_stream() {
        assert!(conn(json!({"mode": "drop_stream", "after_events": 2}))
            .check()
            .is_empty());
        let errs = conn(json!({"mode": "reset", "after_bytes": 10})).check();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert_eq!(errs[0].0, "after_bytes");
        assert!(errs[0].1.contains("drop_stream"), "{errs:?}");
    }
}
