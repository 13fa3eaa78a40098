//! Who may talk to the front: DNS-rebinding protection (`Origin`, `Host`, shared with the
//! admin API in [`crate::http_guard`]) and the limits on
//! a request's headers (their size, a session id's length).

use super::{Front, MAX_SESSION_ID};
use crate::relay::head::SESSION_ID;
use crate::relay::http_answer::plain;
use crate::relay::http_sessions::LABEL;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

impl<B> Front<B> {
    /// DNS-rebinding protection and the header-size limit.
    pub(super) fn guard(&self, headers: &HeaderMap) -> Result<(), Response> {
        let size: usize = headers
            .iter()
            .map(|(k, v)| k.as_str().len() + v.len() + 4)
            .sum();
        if size > self.opts.max_header_bytes {
            return Err(plain(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                format!(
                    "brownout: request headers of {size} bytes are over the limit of {} bytes",
                    self.opts.max_header_bytes
                ),
            ));
        }
        let id_len = headers
            .get(SESSION_ID.header())
            .map_or(0, |v| v.len())
            .max(headers.get(LABEL.header()).map_or(0, |v| v.len()));
        if id_len > MAX_SESSION_ID {
            return Err(plain(
                StatusCode::BAD_REQUEST,
                format!(
                    "brownout: a session id or label of {id_len} bytes is over the limit of {MAX_SESSION_ID}"
                ),
            ));
        }
        if let Err(r) = crate::http_guard::check(
            headers,
            self.loopback,
            &self.opts.allowed_origins,
            &self.opts.allowed_hosts,
        ) {
            let flag = match r {
                crate::http_guard::Refusal::Origin(_) => "--allow-origin",
                crate::http_guard::Refusal::Host(_) => "--allow-host",
            };
            return Err(plain(
                r.status(),
                format!("brownout: {r} (allow it with {flag})"),
            ));
        }
        Ok(())
    }
}
