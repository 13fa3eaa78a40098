//! What a schema cannot say about an experiment file, checked when it loads (load.rs):
//! `target.servers` with the faults' `servers` and the probes' `server`, `target.fleet`
//! with the stages' `relays`, and a tolerance's history keys. Each check gives (JSON
//! pointer or key, message) per mistake.

use super::fleet_spec::{is_dns_name, is_http, FleetSpec};
use super::spec::{Experiment, Tolerance};
use serde_json::Value;

/// The longest server name (it is part of every session key and of tool names in taints).
const MAX_NAME: usize = 32;

/// What a schema cannot say about `target.servers`, the faults' `servers` and the probes'
/// `server`: (JSON pointer, message) per mistake.
pub fn servers(spec: &Experiment, plan_doc: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let t = &spec.target;
    let faults = plan_doc["faults"].as_array().cloned().unwrap_or_default();
    let Some(servers) = &t.servers else {
        for (i, f) in faults.iter().enumerate() {
            if f.get("servers").is_some() {
                out.push((
                    format!("/faults/{i}/servers"),
                    "the target is one server: `servers` picks among the servers of \
                     `target.servers: {NAME: {command | url}}`"
                        .into(),
                ));
            }
        }
        for (i, p) in spec.steady_state.iter().enumerate() {
            if p.call.server.is_some() {
                out.push((
                    format!("/steady_state/{i}/call/server"),
                    "the target is one server: `server` names one of `target.servers`".into(),
                ));
            }
        }
        return out;
    };
    for key in ["command", "url", "admin", "admin_token_env"] {
        let set = match key {
            "command" => t.command.is_some(),
            "url" => t.url.is_some(),
            "admin" => t.admin.is_some(),
            _ => t.admin_token_env.is_some(),
        };
        if set {
            out.push((
                format!("/target/{key}"),
                format!("give `servers` or `{key}`, not both: with `servers`, each server has its own `command` or `url`"),
            ));
        }
    }
    for (name, s) in servers {
        let at = |key: &str| format!("/target/servers/{}{key}", pointer_escape(name));
        let good = !name.is_empty()
            && name.len() <= MAX_NAME
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
        if !good {
            out.push((
                at(""),
                format!("`{name}` is not a server name: 1 to {MAX_NAME} of a-z, 0-9, `-`, `_`"),
            ));
        }
        match (&s.command, &s.url) {
            (Some(_), Some(_)) => {
                out.push((at("/url"), "give `command` or `url`, not both".into()))
            }
            (None, None) => out.push((
                at(""),
                "give `command: [PROGRAM, ARGS…]` (a stdio server) or `url:` (an HTTP server)"
                    .into(),
            )),
            (None, Some(u)) if !(u.starts_with("http://") || u.starts_with("https://")) => out
                .push((
                    at("/url"),
                    format!("`{u}` is not an http:// or https:// URL"),
                )),
            _ => {}
        }
    }
    let names: Vec<&str> = servers.keys().map(String::as_str).collect();
    let unknown = |n: &str| {
        let hint = brownout_core::plan::suggest(n, names.iter().copied())
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        format!(
            "no server `{n}`{hint}; the target's servers: {}",
            names.join(", ")
        )
    };
    for (i, f) in faults.iter().enumerate() {
        for (j, n) in f["servers"].as_array().into_iter().flatten().enumerate() {
            let Some(n) = n.as_str() else { continue };
            let glob = n.contains(['*', '?', '[', '{']);
            if !glob && !servers.contains_key(n) {
                out.push((format!("/faults/{i}/servers/{j}"), unknown(n)));
            }
        }
    }
    for (i, p) in spec.steady_state.iter().enumerate() {
        if let Some(n) = &p.call.server {
            if !servers.contains_key(n) {
                out.push((format!("/steady_state/{i}/call/server"), unknown(n)));
            }
        }
    }
    out
}

fn pointer_escape(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// With a relay already running (`admin`, `fleet`) a run adds its own suffix to each fault
/// id ([`super::fault_ids`]): an id too long to take it is refused here, not mid-run by the
/// relay.
pub fn remote_ids(spec: &Experiment, plan_doc: &Value) -> Vec<(String, String)> {
    let t = &spec.target;
    if t.fleet.is_none() && t.admin.is_none() {
        return Vec::new();
    }
    let most = brownout_core::plan::MAX_ID_CHARS - super::fault_ids::MAX_SUFFIX;
    plan_doc["faults"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, f)| {
            let n = f["id"].as_str()?.chars().count();
            (n > most).then(|| {
                (
                    format!("/faults/{i}/id"),
                    format!(
                        "is {n} characters long: with a relay already running (`admin`, `fleet`) the run adds up to {} of its own (`--brownout-run-<seed>-<run id>`), so at most {most}",
                        super::fault_ids::MAX_SUFFIX
                    ),
                )
            })
        })
        .collect()
}

/// What a schema cannot say about `target.fleet` and the stages' `relays`: (JSON pointer,
/// message) per mistake.
pub fn fleet(spec: &Experiment) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let t = &spec.target;
    let Some(fleet) = &t.fleet else {
        for (i, s) in spec.method.iter().enumerate() {
            if s.relays.is_some() {
                out.push((
                    format!("/method/{i}/relays"),
                    "`relays` is a share of a fleet's relays: it goes with `target.fleet` \
                     (for one target, `sessions` is the blast radius)"
                        .into(),
                ));
            }
        }
        return out;
    };
    let others = [
        ("command", t.command.is_some()),
        ("url", t.url.is_some()),
        ("admin", t.admin.is_some()),
        ("servers", t.servers.is_some()),
    ];
    for (key, set) in others {
        if set {
            out.push((
                format!("/target/{key}"),
                format!("give `fleet` or `{key}`, not both: each relay of the fleet has its own `url` and `admin`"),
            ));
        }
    }
    match fleet {
        FleetSpec::List(relays) => {
            let mut seen = std::collections::BTreeMap::new();
            for (i, r) in relays.iter().enumerate() {
                for (key, u) in [("url", &r.url), ("admin", &r.admin)] {
                    if !is_http(u) {
                        out.push((
                            format!("/target/fleet/{i}/{key}"),
                            format!(
                                "`{}` is not an http:// or https:// URL",
                                super::fleet_spec::redact(u)
                            ),
                        ));
                    }
                }
                let admin = r.admin.trim_end_matches('/');
                if let Some(first) = seen.insert(admin.to_string(), i) {
                    let admin = super::fleet_spec::redact(admin);
                    out.push((
                        format!("/target/fleet/{i}/admin"),
                        format!("`{admin}` is listed twice (also relay {first}): each relay once"),
                    ));
                }
            }
        }
        FleetSpec::Dns(d) => {
            if !is_dns_name(&d.dns) {
                out.push((
                    "/target/fleet/dns".into(),
                    format!(
                        "`{}` is not a DNS name (e.g. `mcp-relay.shop.svc.cluster.local`)",
                        d.dns
                    ),
                ));
            }
            if !matches!(d.scheme(), "http" | "https") {
                let hint = brownout_core::plan::suggest(d.scheme(), ["http", "https"])
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                out.push((
                    "/target/fleet/scheme".into(),
                    format!("`{}` is not `http` or `https`{hint}", d.scheme()),
                ));
            }
            if !d.path().starts_with('/') {
                out.push((
                    "/target/fleet/path".into(),
                    format!(
                        "`{}` is not a path: it starts with `/`, e.g. `/mcp`",
                        d.path()
                    ),
                ));
            }
            if let Some(e) = d.every.as_ref().map(|e| e.get()) {
                if e < super::fleet_spec::MIN_RESOLVE_EVERY {
                    out.push((
                        "/target/fleet/every".into(),
                        format!(
                            "`every: {}` would ask the resolver too often: at least {}",
                            brownout_core::human::duration(e),
                            brownout_core::human::duration(super::fleet_spec::MIN_RESOLVE_EVERY)
                        ),
                    ));
                }
            }
            if d.admin_port == d.mcp_port {
                out.push((
                    "/target/fleet/admin_port".into(),
                    "the admin API and the MCP endpoint listen on two ports".into(),
                ));
            }
        }
    }
    for (i, s) in spec.method.iter().enumerate() {
        if let Some(r) = &s.relays {
            match r.fraction() {
                Some(f) if f > 0.0 && f <= 1.0 => {}
                _ => out.push((
                    format!("/method/{i}/relays"),
                    format!("`{}` is not a share above 0 % and at most 100 %", r.0),
                )),
            }
        }
    }
    out
}

/// What a schema cannot say about a tolerance's history keys: (key, why) for each misuse.
pub fn tolerance(t: &Tolerance) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if t.from_baseline.is_none() {
        for (key, set) in [
            ("sigma", t.sigma.is_some()),
            ("percentile", t.percentile.is_some()),
            ("runs", t.runs.is_some()),
            ("min_runs", t.min_runs.is_some()),
        ] {
            if set {
                out.push((
                    key,
                    format!("`{key}` goes with `from_baseline: p95` (or p50, p99, success)"),
                ));
            }
        }
    } else if t.sigma.is_some() && t.percentile.is_some() {
        out.push((
            "percentile",
            "give `sigma` or `percentile`, not both".to_string(),
        ));
    }
    if let (Some(r), Some(m)) = (t.runs, t.min_runs) {
        if m > r {
            out.push((
                "min_runs",
                format!("`min_runs: {m}` is more than `runs: {r}`: no history could satisfy it"),
            ));
        }
    }
    out
}
