//! A fleet's members: the relays a `target.fleet` lists, or the addresses its DNS name
//! resolves to (the system resolver, `getaddrinfo`: `/etc/hosts`, then DNS — a Kubernetes
//! headless Service answers with one address per ready pod), each turned into the relay's
//! MCP URL and admin URL.

use super::fleet_spec::{FleetDns, FleetSpec, MAX_RELAYS};
use std::collections::BTreeSet;
use std::net::IpAddr;

/// One relay of the fleet: where its load goes and where its faults go.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Member {
    /// The admin API's base URL (no trailing `/`): the relay's identity.
    pub admin: String,
    /// The MCP endpoint.
    pub url: String,
}

/// `http://10.0.0.5:9901`, or `http://[fd00::5]:9901` for IPv6.
fn base(scheme: &str, ip: IpAddr, port: u16) -> String {
    match ip {
        IpAddr::V4(v4) => format!("{scheme}://{v4}:{port}"),
        IpAddr::V6(v6) => format!("{scheme}://[{v6}]:{port}"),
    }
}

/// The members at the addresses `ips` (sorted, duplicates once, at most [`MAX_RELAYS`]).
pub fn members_at(d: &FleetDns, ips: impl IntoIterator<Item = IpAddr>) -> Vec<Member> {
    let ips: BTreeSet<IpAddr> = ips.into_iter().collect();
    ips.into_iter()
        .take(MAX_RELAYS)
        .map(|ip| Member {
            admin: base(d.scheme(), ip, d.admin_port),
            url: format!("{}{}", base(d.scheme(), ip, d.mcp_port), d.path()),
        })
        .collect()
}

/// Resolve `d.dns` now: every address it has is a relay. An error says the name and why.
pub async fn resolve(d: &FleetDns) -> anyhow::Result<Vec<Member>> {
    let host = d.dns.trim_end_matches('.');
    let addrs = tokio::net::lookup_host((host, d.admin_port))
        .await
        .map_err(|e| anyhow::anyhow!("cannot resolve the fleet's name `{host}`: {e}"))?;
    let ips: BTreeSet<IpAddr> = addrs.map(|a| a.ip()).collect();
    if ips.len() > MAX_RELAYS {
        eprintln!(
            "brownout: the fleet's name `{host}` resolves to {} addresses; only the first {MAX_RELAYS} (in address order) are relays of this run",
            ips.len()
        );
    }
    let found = members_at(d, ips);
    if found.is_empty() {
        anyhow::bail!("the fleet's name `{host}` resolves to no address");
    }
    Ok(found)
}

/// The fleet's members now: the list as written, or the name resolved.
pub async fn members(f: &FleetSpec) -> anyhow::Result<Vec<Member>> {
    match f {
        FleetSpec::List(list) => Ok(list
            .iter()
            .map(|r| Member {
                admin: r.admin.trim_end_matches('/').to_string(),
                url: r.url.clone(),
            })
            .collect()),
        FleetSpec::Dns(d) => resolve(d).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dns() -> FleetDns {
        FleetDns {
            dns: "relays.lab".into(),
            admin_port: 9901,
            mcp_port: 8900,
            scheme: None,
            path: None,
            every: None,
        }
    }

    #[test]
    fn every_address_is_one_relay_in_a_stable_order() {
        let ips: Vec<IpAddr> = ["10.0.0.3", "10.0.0.1", "fd00::2", "10.0.0.1"]
            .iter()
            .map(|s| s.parse().expect("ip"))
            .collect();
        let m = members_at(&dns(), ips);
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].admin, "http://10.0.0.1:9901");
        assert_eq!(m[0].url, "http://10.0.0.1:8900/mcp");
        assert_eq!(m[2].url, "http://[fd00::2]:8900/mcp");
    }

    #[tokio::test]
    async fn localhost_resolves_and_a_bad_name_is_named() {
        let d = FleetDns {
            dns: "localhost".into(),
            ..dns()
        };
        let m = resolve(&d).await.expect("localhost resolves");
        assert!(m.iter().any(|m| m.admin.contains("127.0.0.1")), "{m:?}");
        let bad = FleetDns {
            dns: "no-such-relay.invalid".into(),
            ..dns()
        };
        let e = resolve(&bad).await.expect_err("no such name");
        assert!(e.to_string().contains("no-such-relay.invalid"), "{e}");
    }
}
