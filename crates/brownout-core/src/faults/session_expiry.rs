//! `session_expiry`: the server forgets the session. From the hit on, every request and
//! notification of that session is answered `404` over HTTP (what the spec says a server
//! answers for an expired session, so the client must initialize again) and a JSON-RPC
//! error on stdio; the server never sees them. Other sessions, and a new session after a
//! re-initialize, are untouched. Looks at every method unless `methods` says otherwise.

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
