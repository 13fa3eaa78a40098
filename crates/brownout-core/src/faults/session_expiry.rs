//! `session_expiry`: the server forgets the session. From the hit on, every request and
//! notification of that session is answered `404` over HTTP (what the spec says a server
//! answers for an expired session, so the client must initialize again) and a JSON-RPC
//! error on stdio (notifications: dropped); the server never sees them. Other sessions are
//! untouched; a new session, or an `initialize` on the same one (stdio), starts afresh. The
//! engine keeps the session's answer; this file owns it. Looks at every method but
//! `initialize` unless `methods` says otherwise.

use super::simulated::{SimOutcome, SimulatedCall};
use super::{AddedDelay, FaultKind, KindInfo, Phase, Targets, EVERY};
use super::{Ctx, Shaping};
use crate::jsonrpc::Id;
use crate::select::{Direction, Globs};
use crate::splice;
use crate::verdict::HttpAction;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// JSON-RPC error code of a request on an expired session.
pub const EXPIRED: i64 = -32001;

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct SessionExpiry {}

/// The answer to anything sent on an expired session.
pub fn expired(id: Option<&Id>, s: &mut Shaping<'_>) {
    let error = splice::error_response(id, EXPIRED, "brownout: session expired", None);
    s.http = Some(HttpAction::Status {
        code: 404,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: error.clone(),
    });
    if id.is_some() {
        s.reply = Some(error);
    } else {
        s.drop = true;
    }
}

impl SessionExpiry {
    pub fn apply(&self, c: &Ctx<'_>, s: &mut Shaping<'_>) -> String {
        expired(c.id, s);
        s.expire = Some(expired);
        "session expired".into()
    }
}

pub const KIND: KindInfo = KindInfo::of::<SessionExpiry>(
    "session_expiry",
    "expire the session: 404 (stdio: an error) for everything it sends from then on",
    EVERY,
    Direction::ToServer,
    r#"{}"#,
);

impl FaultKind for SessionExpiry {
    /// An initialize starts a session: there is nothing yet to expire.
    fn targets(&self, method: &str, _tool: Option<&str>, _tools: Option<&Globs>) -> Targets {
        if method == "initialize" {
            Targets::Skip
        } else {
            Targets::BySelector
        }
    }

    fn acts_on_request(&self, _direction: Direction) -> bool {
        true
    }

    fn acts_on_response(&self, _direction: Direction) -> bool {
        false
    }

    /// The session is gone whatever else was going to happen to this call.
    fn overrides_reply(&self) -> bool {
        true
    }

    fn act(&self, phase: Phase, c: &mut Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        match phase {
            Phase::Request => Some(self.apply(c, s)),
            Phase::Response => None,
        }
    }

    /// An expired session fails the call it hits; the simulated client is taken to
    /// initialize again at once, so its later calls are not failed.
    fn simulate(&self, _direction: Direction, _c: &mut Ctx<'_>, out: &mut SimulatedCall) -> bool {
        out.worsen(SimOutcome::FailFast);
        true
    }

    fn max_added_delay(&self) -> AddedDelay {
        AddedDelay::NONE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(s: &Shaping<'_>) -> (u16, Vec<u8>) {
        match &s.http {
            Some(HttpAction::Status { code, body, .. }) => (*code, body.clone()),
            other => panic!("no status: {other:?}"),
        }
    }

    #[test]
    fn a_request_gets_404_and_a_stdio_error_with_its_id() {
        let id = Id::Num("12".into());
        let mut s = Shaping::new(b"{}");
        expired(Some(&id), &mut s);
        let (code, body) = status(&s);
        assert_eq!(code, 404);
        assert_eq!(
            s.reply.as_deref(),
            Some(body.as_slice()),
            "one error, both ways"
        );
        let reply: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(reply["id"], 12);
        assert_eq!(reply["error"]["code"], EXPIRED);
        assert_eq!(reply["error"]["message"], "brownout: session expired");
        assert!(!s.forwards());
    }

    #[test]
    fn a_notification_gets_404_and_is_dropped_on_stdio() {
        let mut s = Shaping::new(b"{}");
        expired(None, &mut s);
        assert_eq!(status(&s).0, 404);
        assert!(s.reply.is_none() && s.drop);
    }
}
