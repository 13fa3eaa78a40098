//! Who may talk to the front: DNS-rebinding protection (`Origin`, `Host`) and the limits on
//! a request's headers (their size, a session id's length).

use super::{plain, Front, LABEL_HEADER, MAX_SESSION_ID};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;

impl Front {
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
            .get("mcp-session-id")
            .map_or(0, |v| v.len())
            .max(headers.get(LABEL_HEADER).map_or(0, |v| v.len()));
        if id_len > MAX_SESSION_ID {
            return Err(plain(
                StatusCode::BAD_REQUEST,
                format!(
                    "brownout: a session id or label of {id_len} bytes is over the limit of {MAX_SESSION_ID}"
                ),
            ));
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("");
            let allowed = is_loopback_origin(origin)
                || self
                    .opts
                    .allowed_origins
                    .iter()
                    .any(|o| o == "*" || o.eq_ignore_ascii_case(origin));
            if !allowed {
                return Err(plain(
                    StatusCode::FORBIDDEN,
                    format!(
                        "brownout: Origin `{origin}` is not allowed (allow it with --allow-origin)"
                    ),
                ));
            }
        }
        if self.loopback || !self.opts.allowed_hosts.is_empty() {
            let host = headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("");
            let name = host_name(host);
            let allowed = is_loopback_name(name)
                || self.opts.allowed_hosts.iter().any(|h| {
                    h == "*" || h.eq_ignore_ascii_case(name) || h.eq_ignore_ascii_case(host)
                });
            if !allowed {
                return Err(plain(
                    StatusCode::MISDIRECTED_REQUEST,
                    format!("brownout: Host `{host}` is not allowed (allow it with --allow-host)"),
                ));
            }
        }
        Ok(())
    }
}

fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    host.rsplit_once(':').map_or(host, |(h, _)| h)
}

fn is_loopback_name(name: &str) -> bool {
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn is_loopback_origin(origin: &str) -> bool {
    reqwest::Url::parse(origin)
        .ok()
        .and_then(|u| u.host_str().map(|h| h.trim_matches(['[', ']']).to_string()))
        .is_some_and(|h| is_loopback_name(&h))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_and_loopback() {
        assert_eq!(host_name("127.0.0.1:8080"), "127.0.0.1");
        assert_eq!(host_name("[::1]:80"), "::1");
        assert_eq!(host_name("localhost"), "localhost");
        assert!(is_loopback_name("localhost"));
        assert!(is_loopback_name("::1"));
        assert!(!is_loopback_name("evil.example"));
        assert!(is_loopback_origin("http://localhost:3000"));
        assert!(is_loopback_origin("http://[::1]:3000"));
        assert!(!is_loopback_origin("https://evil.example"));
    }
}
