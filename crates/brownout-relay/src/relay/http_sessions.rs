//! Stable session keys for the HTTP front, so a run replays. [`SessionKeys`] keys the
//! sessions of a server at a URL (`super::url_back`); the child back numbers the sessions
//! it starts the same way (`super::child_back`).
//!
//! The engine draws a session's faults from its key (the `sessions:` blast radius,
//! per-session counters and probabilities). What identifies a session on the wire changes
//! from run to run — a random `Mcp-Session-Id` the server issues, the client's port, a
//! legacy endpoint with a random id in it — so brownout keys the engine by something that
//! does not:
//!
//! - the label the client sends in a `Brownout-Session` header, when it sends one
//!   (`label:<label>`): the same label, the same draws, whatever the order of arrival;
//! - otherwise the session's order of arrival in this run (`http-1`, `http-2`, …): the same
//!   seed and the same client behaviour (sessions opened in the same order) replay the same
//!   faults.
//!
//! The header is brownout's own and is not passed on to the server.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The header a client may label its session with.
pub const LABEL_HEADER: &str = "brownout-session";

/// [`LABEL_HEADER`], parsed once: the front looks it up on every request.
pub(crate) const LABEL: super::head::Name = super::head::Name::new(LABEL_HEADER);

/// Wire identities of sessions → their stable keys.
#[derive(Debug, Default)]
pub struct SessionKeys {
    inner: Mutex<Table>,
    /// The server's name when the relay fronts several (`brownout_core::session_key`).
    namespace: Option<String>,
}

#[derive(Debug, Default)]
struct Table {
    /// Sessions numbered so far in this run.
    arrived: u64,
    /// Wire identity → (stable key, last use).
    keys: HashMap<String, (String, Instant)>,
}

impl SessionKeys {
    pub fn new() -> SessionKeys {
        SessionKeys::default()
    }

    /// Keys of server `name`'s sessions, on a relay that fronts several servers.
    pub fn namespaced(name: &str) -> SessionKeys {
        SessionKeys {
            namespace: Some(name.to_string()),
            ..SessionKeys::default()
        }
    }

    /// `key` in this server's namespace, if it has one.
    fn scoped(&self, key: String) -> String {
        match &self.namespace {
            Some(ns) => brownout_core::session_key::namespaced(ns, &key),
            None => key,
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The engine's key for the session known on the wire as `wire`, labelled `label` by
    /// the client or numbered in order of arrival.
    pub fn key(&self, wire: &str, label: Option<&str>) -> String {
        if let Some(label) = label {
            return self.scoped(format!("label:{label}"));
        }
        let mut t = self.table();
        let now = Instant::now();
        if let Some((key, used)) = t.keys.get_mut(wire) {
            *used = now;
            return key.clone();
        }
        t.arrived += 1;
        let key = self.scoped(format!("http-{}", t.arrived));
        t.keys.insert(wire.to_string(), (key.clone(), now));
        key
    }

    /// The key of a wire identity already known (its last use renewed), without giving an
    /// unknown one a key: a request that cannot open a session (GET, DELETE) holds nothing.
    pub fn known(&self, wire: &str) -> Option<String> {
        let mut t = self.table();
        let (key, used) = t.keys.get_mut(wire)?;
        *used = Instant::now();
        Some(key.clone())
    }

    /// The session ended (DELETE, or the server refused it): forget its wire identity.
    pub fn forget(&self, wire: &str) {
        self.table().keys.remove(wire);
    }

    /// Forget wire identities unused for `idle` (the engine forgets such sessions too).
    pub fn reap(&self, idle: Duration) {
        let now = Instant::now();
        self.table()
            .keys
            .retain(|_, (_, used)| now.duration_since(*used) < idle);
    }

    /// Wire identities held.
    pub fn len(&self) -> usize {
        self.table().keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_arrival_or_label_not_the_wire() {
        let k = SessionKeys::new();
        assert_eq!(k.key("3f9a-random", None), "http-1");
        assert_eq!(k.key("conn:127.0.0.1:50123", None), "http-2");
        assert_eq!(k.key("3f9a-random", None), "http-1");
        assert_eq!(k.key("anything", Some("worker-7")), "label:worker-7");
        k.forget("3f9a-random");
        assert_eq!(k.len(), 1);
        assert_eq!(k.key("3f9a-random", None), "http-3");
        assert_eq!(k.known("never-posted"), None);
        assert_eq!(k.known("conn:127.0.0.1:50123"), Some("http-2".into()));
        assert_eq!(k.len(), 2);
        k.reap(Duration::ZERO);
        assert!(k.is_empty());
    }
}
