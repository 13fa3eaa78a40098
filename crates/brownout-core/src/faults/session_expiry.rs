//! `session_expiry`: the server forgets the session. From the hit on, every request and
//! notification of that session is answered `404` over HTTP (what the spec says a server
//! answers for an expired session, so the client must initialize again) and a JSON-RPC
//! error on stdio (notifications: dropped); the server never sees them. Other sessions are
//! untouched; a new session, or an `initialize` on the same one (stdio), starts afresh. The
//! engine keeps the expired flag; this file owns the answer. Looks at every method but
//! `initialize` unless `methods` says otherwise.

use super::{Ctx, Shaping};
use crate::jsonrpc::{self, Id};
use crate::verdict::HttpAction;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// JSON-RPC error code of a request on an expired session.
pub const EXPIRED: i64 = -32001;

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct SessionExpiry {}

/// The answer to anything sent on an expired session.
pub fn expired(id: Option<&Id>, s: &mut Shaping<'_>) {
    let error = jsonrpc::error_response(id, EXPIRED, "brownout: session expired", None);
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
        "session expired".into()
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
