//! `drop`: the message vanishes. On a response the client waits for an answer that never
//! comes; on a request (`direction: to_server`) the server never sees the call.

use super::{Ctx, Shaping};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct Drop {}

impl Drop {
    pub fn apply(&self, _c: &Ctx<'_>, s: &mut Shaping<'_>) -> String {
        s.drop = true;
        "dropped".to_string()
    }
}
