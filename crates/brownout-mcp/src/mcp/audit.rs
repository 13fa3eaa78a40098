//! The audit log: one JSON line per mutating call and per guardrail decision — who (the MCP
//! session and the client's name), when, what (the tool, the experiment's title and a digest
//! of its text, the run), the decision and the rule. Secrets never go in: no approval code,
//! no token, no environment, no URL credentials or query strings.

use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One decision.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Entry {
    pub at_unix_ms: u64,
    /// The MCP session (`stdio` over stdio).
    pub session: String,
    /// The client's declared name and version.
    pub client: String,
    pub tool: String,
    /// `allowed`, `refused`, `approval_required`, `approved`, `stopped`, `lease_lapsed`,
    /// `session_ended`, `renewed`, `failed`.
    pub decision: String,
    /// The guardrail that decided (`production_labels`, `ladder_from_history`, `approval`…).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experiment: Option<String>,
    /// FNV-1a of the experiment's text: which text was decided on, without the text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Who approved (elicitation: the client's person; code: `operator-code`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approver: Option<String>,
}

/// The log file, appended to under a lock (one line per entry, flushed at once).
pub struct Audit {
    path: PathBuf,
    lock: Mutex<()>,
}

impl Audit {
    /// The audit log at `path` (its directory created now, so a bad path fails at start).
    pub fn open(path: &Path) -> std::io::Result<Audit> {
        if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(d)?;
        }
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(Audit {
            path: path.to_path_buf(),
            lock: Mutex::new(()),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append an entry (its time set now). A write that fails is reported on stderr: the
    /// decision stands, and the operator learns the log is incomplete.
    pub fn write(&self, mut e: Entry) {
        e.at_unix_ms = brownout_experiment::experiment::clock::unix_ms();
        e.detail = redact(&e.detail);
        e.experiment = e.experiment.map(|t| redact(&t));
        e.approver = e.approver.map(|t| redact(&t));
        e.experiment = e.experiment.map(|t| redact(&t));
        e.approver = e.approver.map(|t| redact(&t));
        let Ok(line) = serde_json::to_string(&e) else {
            return;
        };
        let _g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let r = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.path)
            .and_then(|mut f| writeln!(f, "{line}"));
        if let Err(err) = r {
            eprintln!(
                "brownout mcp: warning: the audit log {} could not be written: {err}",
                self.path.display()
            );
        }
    }
}

/// The default audit log: beside the journal store (`mcp-audit.jsonl`).
pub fn default_path(store: Option<&Path>) -> PathBuf {
    // A database store (postgres://…) has no folder: the default data folder then.
    match brownout_store::store::Location::resolve(store) {
        Ok(at) => at.local_dir().join("mcp-audit.jsonl"),
        Err(_) => brownout_store::store::default_sqlite_path().with_file_name("mcp-audit.jsonl"),
    }
}

/// FNV-1a (64 bits) of a text, as 16 hex digits: stable across builds, enough to tell texts
/// apart in a log (not a security digest: nothing is protected by it).
pub fn digest(text: &str) -> String {
    format!("{:016x}", brownout_core::rng::hash_str(text))
}

/// A text safe to print on a terminal or a log line: control characters (newlines, escape
/// sequences) shown as `\u{..}`, at most 2,000 characters.
pub fn clean(text: &str) -> String {
    clean_n(text, 2000)
}

pub use brownout_core::human::clean_n;

/// What may wrap a URL in a text.
const WRAP: [char; 8] = ['`', ',', ';', '(', ')', '"', '\'', ':'];

/// A URL's credentials and query string removed wherever one appears in a text (which is
/// also [`clean`]ed).
pub fn redact(text: &str) -> String {
    let text = clean(text);
    text.split(' ')
        .map(|w| match reqwest::Url::parse(w.trim_matches(WRAP)) {
            Ok(mut u)
                if u.has_host()
                    && (!u.username().is_empty()
                        || u.query().is_some()
                        || u.password().is_some()) =>
            {
                let _ = u.set_username("");
                let _ = u.set_password(None);
                u.set_query(None);
                w.replace(w.trim_matches(WRAP), u.as_str())
            }
            _ => w.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_and_queries_never_reach_the_log() {
        let d = tempfile::tempdir().expect("tempdir");
        let a = Audit::open(&d.path().join("a/audit.jsonl")).expect("open");
        a.write(Entry {
            tool: "start_experiment".into(),
            decision: "refused".into(),
            detail: "target `http://bob:hunter2@10.0.0.1:80/mcp?token=s3cret` refused".into(),
            experiment: Some("slow \"http://u:pw@h/x?k=s3cret2\"\nfake line".into()),
            ..Entry::default()
        });
        let text = std::fs::read_to_string(a.path()).expect("read");
        assert!(
            !text.contains("hunter2") && !text.contains("s3cret"),
            "{text}"
        );
        assert!(text.contains("10.0.0.1"), "{text}");
        assert!(!text.contains("pw@"), "titles are redacted too: {text}");
        assert_eq!(text.lines().count(), 1, "no forged lines: {text}");
        let v: serde_json::Value = serde_json::from_str(text.trim()).expect("one JSON line");
        assert_eq!(v["decision"], "refused");
        assert!(v["at_unix_ms"].as_u64().unwrap_or(0) > 0);
    }

    #[test]
    fn digests_tell_texts_apart() {
        assert_ne!(digest("a"), digest("b"));
        assert_eq!(digest("same"), digest("same"));
    }
}
