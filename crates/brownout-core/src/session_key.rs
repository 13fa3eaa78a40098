//! Session keys of a relay in front of several servers at once (an experiment's
//! `target.servers`): one engine sees every server's sessions, each key namespaced by its
//! server as `@SERVER/KEY`. What the namespace gives the engine:
//!
//! - a fault's `servers` selector matches the server a session belongs to;
//! - the blast radius (`sessions: 10%`) is drawn from the key without its server, so an agent
//!   whose sessions carry one label (`Brownout-Session: load-3`) on every server is inside the
//!   radius on all of them or on none;
//! - taints are kept per **agent** — the label shared by the agent's sessions — so a value a
//!   fault changed on one server and passed to another is seen crossing (docs/silent.md).
//!
//! A key without the `@` prefix is a single server's, as before.

/// The prefix of a namespaced key.
const MARK: char = '@';

/// `@SERVER/KEY`: `key` of a session of `server`.
pub fn namespaced(server: &str, key: &str) -> String {
    format!("{MARK}{server}/{key}")
}

/// The server a key names, and the key below it (`None` and the key itself when it has no
/// namespace). Server names hold no `/` (experiment files check them).
pub fn split(key: &str) -> (Option<&str>, &str) {
    key.strip_prefix(MARK)
        .and_then(|rest| rest.split_once('/'))
        .map_or((None, key), |(server, base)| (Some(server), base))
}

/// The agent a namespaced session belongs to: the label its client sent (`label:…`), shared
/// by the agent's sessions on every server. `None` for a key with no namespace or no label:
/// such a session's taints are its own.
pub fn agent(key: &str) -> Option<&str> {
    match split(key) {
        (Some(_), base) if base.starts_with("label:") => Some(base),
        _ => None,
    }
}

/// A tool's name as taints and their events show it: `SERVER/TOOL` for a namespaced
/// session (two servers may both have a tool of that name), else the name itself.
pub fn qualified<'a>(key: &str, tool: &'a str) -> std::borrow::Cow<'a, str> {
    match split(key).0 {
        Some(server) => std::borrow::Cow::Owned(format!("{server}/{tool}")),
        None => std::borrow::Cow::Borrowed(tool),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_split_into_server_and_base() {
        let k = namespaced("ops", "label:load-3");
        assert_eq!(k, "@ops/label:load-3");
        assert_eq!(split(&k), (Some("ops"), "label:load-3"));
        assert_eq!(agent(&k), Some("label:load-3"));
        assert_eq!(qualified(&k, "restart_service"), "ops/restart_service");
        // Keys of a single server are left alone, whatever they hold.
        assert_eq!(split("label:a/b"), (None, "label:a/b"));
        assert_eq!(agent("label:load-3"), None);
        assert_eq!(qualified("http-1", "echo"), "echo");
        // A namespaced session without a label has no agent.
        assert_eq!(agent(&namespaced("ops", "http-4")), None);
    }
}
