//! `target.fleet` as written — a list of relays (`[{url, admin}, …]`) or a DNS name every
//! address of which is a relay (`{dns, admin_port, mcp_port}`, a Kubernetes headless
//! Service) — and what a schema cannot say about it, or about a stage's `relays:` share.

use super::spec::Dur;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The most relays a fleet may list, or a name may resolve to (more are ignored, said).
pub const MAX_RELAYS: usize = 256;
/// How often a DNS fleet is resolved again during the run, unless `every` says.
pub const RESOLVE_EVERY: Duration = Duration::from_secs(2);
/// The least `every` may say (a resolution is a DNS query per runner).
pub const MIN_RESOLVE_EVERY: Duration = Duration::from_millis(100);

/// A fleet of brownout relays, each in front of one replica of the MCP server.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum FleetSpec {
    /// The relays, listed.
    List(#[schemars(length(min = 1, max = 256))] Vec<FleetRelay>),
    /// Every address a DNS name resolves to is a relay.
    Dns(FleetDns),
}

/// One relay of a listed fleet.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FleetRelay {
    /// The relay's MCP endpoint (where the load goes), e.g. `http://10.0.0.5:8900/mcp`.
    #[serde(serialize_with = "redacted")]
    pub url: String,
    /// The relay's admin API (where the faults go), e.g. `http://10.0.0.5:9901`.
    #[serde(serialize_with = "redacted")]
    pub admin: String,
}

/// A fleet URL as written out (the journal's copy of the experiment, the store, reports):
/// without credentials.
fn redacted<S: serde::Serializer>(url: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&redact(url))
}

/// A fleet found by DNS: each address of `dns` is a relay, resolved again during the run.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FleetDns {
    /// The name, e.g. `mcp-relay.shop.svc.cluster.local` (a headless Service).
    pub dns: String,
    /// The admin API's port on every relay.
    #[schemars(range(min = 1, max = 65535))]
    pub admin_port: u16,
    /// The MCP endpoint's port on every relay.
    #[schemars(range(min = 1, max = 65535))]
    pub mcp_port: u16,
    /// `http` (default) or `https`, for both ports.
    #[serde(default)]
    pub scheme: Option<String>,
    /// The MCP endpoint's path (default `/mcp`).
    #[serde(default)]
    pub path: Option<String>,
    /// How often the name is resolved again (default `2s`): a relay that appears joins at
    /// the next stage, one that disappears is recorded.
    #[serde(default)]
    pub every: Option<Dur>,
}

impl FleetDns {
    pub fn scheme(&self) -> &str {
        self.scheme.as_deref().unwrap_or("http")
    }

    pub fn path(&self) -> &str {
        self.path.as_deref().unwrap_or("/mcp")
    }

    pub fn every(&self) -> Duration {
        self.every
            .as_ref()
            .map(Dur::get)
            .map_or(RESOLVE_EVERY, |d| d.max(MIN_RESOLVE_EVERY))
    }
}

/// A URL as it may be shown (stderr, journal, store, reports): credentials in it
/// (`user:pass@`) replaced by `***@`.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{scheme}://***@{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

pub fn is_http(u: &str) -> bool {
    u.starts_with("http://") || u.starts_with("https://")
}

/// Whether `name` can be a DNS name: 1–253 bytes of labels of `a-z 0-9 -` (and `_`, which
/// Kubernetes SRV-style names use), none empty or over 63 bytes.
pub fn is_dns_name(name: &str) -> bool {
    let name = name.strip_suffix('.').unwrap_or(name);
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && l.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// The fleet in one line, for `--dry-run` and messages.
pub fn describe(f: &FleetSpec) -> String {
    match f {
        FleetSpec::List(l) => format!(
            "a fleet of {} relays already running, faults through each one's admin API",
            l.len()
        ),
        FleetSpec::Dns(d) => format!(
            "a fleet of relays at every address of `{}` (MCP :{}, admin :{}), resolved again every {}",
            d.dns,
            d.mcp_port,
            d.admin_port,
            brownout_core::human::duration(d.every())
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::{is_dns_name, redact};

    #[test]
    fn credentials_in_a_url_are_never_shown() {
        assert_eq!(
            redact("http://alice:hunter2@10.0.0.5:9901"),
            "http://***@10.0.0.5:9901"
        );
        assert_eq!(
            redact("http://bob@h:1/mcp?x=a@b"),
            "http://***@h:1/mcp?x=a@b"
        );
        assert_eq!(
            redact("http://10.0.0.5:8900/mcp"),
            "http://10.0.0.5:8900/mcp"
        );
        assert_eq!(redact("not a url"), "not a url");
    }

    #[test]
    fn dns_names() {
        assert!(is_dns_name("mcp-relay.shop.svc.cluster.local"));
        assert!(is_dns_name("relays."));
        assert!(!is_dns_name(""));
        assert!(!is_dns_name("a..b"));
        assert!(!is_dns_name("http://x"));
        assert!(!is_dns_name("-a.b"));
    }
}
