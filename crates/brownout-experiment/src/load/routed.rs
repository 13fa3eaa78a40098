//! One agent across several servers ([`super::LoadTarget::Servers`]): a session on every
//! server, all carrying the same label (`Brownout-Session: load-i`, so a relay in front of
//! them sees one agent), and each call sent to the server whose `tools/list` has its tool.

use super::session::{self, Session, INIT_TIMEOUT};
use super::{wire, LoadError, LoadTarget};
use std::collections::BTreeMap;

/// The most tools read from one server's `tools/list` for routing.
const MAX_TOOLS: usize = 10_000;

/// An agent's sessions, one per server, in the order of the target's servers.
pub struct Routed {
    pub parts: Vec<Session>,
}

/// Open agent `i`'s session on every server.
pub async fn open(servers: &[(String, String)], i: usize) -> Result<Session, LoadError> {
    let mut parts = Vec::with_capacity(servers.len());
    for (name, url) in servers {
        let target = LoadTarget::Http {
            url: url.clone(),
            headers: Vec::new(),
        };
        let parsed = reqwest::Url::parse(url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"));
        let s = session::open(&target, parsed, i, None)
            .await
            .map_err(|e| match e {
                LoadError::Initialize { session, reason } => LoadError::Initialize {
                    session,
                    reason: format!("server `{name}`: {reason}"),
                },
                other => other,
            })?;
        parts.push(s);
    }
    Ok(Session::Routed(Routed { parts }))
}

/// Which server (its index) has each of `tools`, from the servers' `tools/list` through
/// `agent`'s sessions. A tool no server lists, or that two list, is an error naming them.
pub async fn routes(
    agent: &Routed,
    names: &[String],
    tools: &[&str],
) -> Result<BTreeMap<String, usize>, LoadError> {
    let mut listed: Vec<Vec<String>> = Vec::with_capacity(agent.parts.len());
    for part in &agent.parts {
        let raw = part.request_raw("tools/list", "{}", INIT_TIMEOUT).await;
        listed.push(
            raw.map(|r| wire::tool_names(&r, MAX_TOOLS))
                .unwrap_or_default(),
        );
    }
    route_table(names, &listed, tools)
}

/// [`routes`] from each server's tool names.
pub fn route_table(
    names: &[String],
    listed: &[Vec<String>],
    tools: &[&str],
) -> Result<BTreeMap<String, usize>, LoadError> {
    let mut out = BTreeMap::new();
    for tool in tools {
        let has: Vec<usize> = listed
            .iter()
            .enumerate()
            .filter(|(_, l)| l.iter().any(|t| t == tool))
            .map(|(i, _)| i)
            .collect();
        let name = |i: &usize| format!("`{}`", names.get(*i).map_or("?", String::as_str));
        match has.as_slice() {
            [one] => {
                out.insert(tool.to_string(), *one);
            }
            [] => {
                let each: Vec<String> = names
                    .iter()
                    .zip(listed)
                    .map(|(n, l)| format!("`{n}`: {}", shown(l)))
                    .collect();
                return Err(LoadError::Route(format!(
                    "no server lists tool `{tool}` ({})",
                    each.join("; ")
                )));
            }
            many => {
                let who: Vec<String> = many.iter().map(name).collect();
                return Err(LoadError::Route(format!(
                    "tool `{tool}` is listed by {}: each tool of the workload must be on one server",
                    who.join(" and ")
                )));
            }
        }
    }
    Ok(out)
}

/// A server's tool names for a message: the first few.
fn shown(tools: &[String]) -> String {
    if tools.is_empty() {
        return "no tools".into();
    }
    let mut s: Vec<&str> = tools.iter().take(8).map(String::as_str).collect();
    if tools.len() > 8 {
        s.push("…");
    }
    s.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tool_goes_to_the_one_server_that_lists_it() {
        let names = vec!["incidents".to_string(), "ops".to_string()];
        let listed = vec![
            vec!["get_incident".to_string(), "echo".to_string()],
            vec!["restart_service".to_string(), "echo".to_string()],
        ];
        let r = route_table(&names, &listed, &["get_incident", "restart_service"]);
        let r = r.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((r["get_incident"], r["restart_service"]), (0, 1));
        let e = route_table(&names, &listed, &["echo"])
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("tool `echo` is listed by `incidents` and `ops`: each tool of the workload must be on one server")
        );
        let e = route_table(&names, &listed, &["nope"])
            .err()
            .map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("no server lists tool `nope`")
            && e.contains("`ops`: restart_service, echo")));
    }
}
