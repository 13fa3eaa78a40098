//! The `Origin`/`Host` guard every HTTP listener of brownout applies (the MCP front and the
//! admin API): a web page must not be able to drive a relay on loopback, neither with a
//! cross-site request (a foreign `Origin`) nor through DNS rebinding (a foreign `Host`).

use axum::http::{header, HeaderMap, StatusCode};
use std::fmt;

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Its `Origin` is neither loopback nor allowed.
    Origin(String),
    /// Its `Host` is neither loopback nor allowed.
    Host(String),
}

impl Refusal {
    /// 403 for a foreign origin, 421 for a foreign host.
    pub fn status(&self) -> StatusCode {
        match self {
            Refusal::Origin(_) => StatusCode::FORBIDDEN,
            Refusal::Host(_) => StatusCode::MISDIRECTED_REQUEST,
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Origin(o) => write!(f, "Origin `{o}` is not allowed"),
            Refusal::Host(h) => write!(f, "Host `{h}` is not allowed"),
        }
    }
}

/// Check a request's headers. An `Origin`, when present, must be loopback or in
/// `allowed_origins`; on a loopback listener (or when `allowed_hosts` is given) the `Host`
/// must be loopback or in `allowed_hosts`. `*` in either list allows any.
pub fn check(
    headers: &HeaderMap,
    loopback: bool,
    allowed_origins: &[String],
    allowed_hosts: &[String],
) -> Result<(), Refusal> {
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let allowed = is_loopback_origin(origin)
            || allowed_origins
                .iter()
                .any(|o| o == "*" || o.eq_ignore_ascii_case(origin));
        if !allowed {
            return Err(Refusal::Origin(origin.to_string()));
        }
    }
    if loopback || !allowed_hosts.is_empty() {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        let name = host_name(host);
        let allowed = is_loopback_name(name)
            || allowed_hosts
                .iter()
                .any(|h| h == "*" || h.eq_ignore_ascii_case(name) || h.eq_ignore_ascii_case(host));
        if !allowed {
            return Err(Refusal::Host(host.to_string()));
        }
    }
    Ok(())
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

    #[test]
    fn foreign_origins_and_hosts_are_refused() {
        let headers = |pairs: &[(header::HeaderName, &str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(k.clone(), v.parse().expect("header value"));
            }
            h
        };
        let ok = headers(&[(header::HOST, "127.0.0.1:9901")]);
        assert_eq!(check(&ok, true, &[], &[]), Ok(()));
        let cross = headers(&[
            (header::HOST, "127.0.0.1:9901"),
            (header::ORIGIN, "https://evil.example"),
        ]);
        assert_eq!(
            check(&cross, true, &[], &[]),
            Err(Refusal::Origin("https://evil.example".into()))
        );
        assert_eq!(check(&cross, true, &["*".into()], &[]), Ok(()));
        let rebound = headers(&[(header::HOST, "evil.example:9901")]);
        assert_eq!(
            check(&rebound, true, &[], &[]).map_err(|r| r.status()),
            Err(StatusCode::MISDIRECTED_REQUEST)
        );
        assert_eq!(check(&rebound, false, &[], &[]), Ok(()));
    }
}
