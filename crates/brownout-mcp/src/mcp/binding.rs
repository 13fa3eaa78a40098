//! What a person approves is what runs. An experiment's text may name files — its workload
//! (`load.workload`) and its fault plan (`faults`) — that an agent can rewrite after the
//! approval; so an approval is bound to the *resolved* experiment: the exact text, the
//! `seed` of the call, the bytes of every file the text names and the policy in force. The
//! files are read once per call into memory; the experiment is loaded (and checked, and
//! shown to the approver) from that copy, and a run is started from that copy — never from
//! the working directory again — after checking that the working directory still holds the
//! same bytes. Whole contents are kept and compared, not a hash.

use brownout_experiment::experiment::policy::Refusal;
use std::path::{Component, Path, PathBuf};

/// The largest file an experiment may name through MCP (bytes).
pub const MAX_FILE: usize = super::MAX_TEXT;

/// The keys of an experiment whose string value is a file path.
const FILE_KEYS: [&str; 2] = ["/load/workload", "/faults"];

/// An experiment as it would run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub text: String,
    /// The `seed` argument of the call (it overrides the experiment's own).
    pub seed: Option<u64>,
    /// Every file the text names: the path as written, and its bytes.
    pub files: Vec<(String, Vec<u8>)>,
    /// The policy in force (JSON): fixed for the server's life, bound all the same.
    pub policy: String,
}

fn refusal(detail: String) -> Refusal {
    Refusal {
        rule: "paths".into(),
        detail,
    }
}

impl Resolved {
    /// What the agent sends and approval is asked for: the exact text and the seed. A code
    /// or a form answer for one key never approves another.
    pub fn key(&self) -> String {
        format!("seed={:?}\n{}", self.seed, self.text)
    }

    /// What differs from what was approved, to name in a refusal (empty: nothing).
    pub fn changed_since(&self, approved: &Resolved) -> Vec<String> {
        let mut out = Vec::new();
        if self.text != approved.text {
            out.push("the experiment's text".to_string());
        }
        if self.seed != approved.seed {
            out.push("the seed".to_string());
        }
        for (path, bytes) in &self.files {
            let before = approved.files.iter().find(|(p, _)| p == path);
            if before.is_none_or(|(_, b)| b != bytes) {
                out.push(format!("the file `{}`", super::audit::clean_n(path, 200)));
            }
        }
        for (path, _) in &approved.files {
            if !self.files.iter().any(|(p, _)| p == path) {
                out.push(format!("the file `{}`", super::audit::clean_n(path, 200)));
            }
        }
        if self.policy != approved.policy {
            out.push("the policy".to_string());
        }
        out
    }

    /// Each file and its size, for the approver: `faults.yaml (212 bytes)`.
    pub fn files_text(&self) -> String {
        self.files
            .iter()
            .map(|(p, b)| format!("{} ({} bytes)", super::audit::clean_n(p, 120), b.len()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Write the files into `dir` at their relative paths, so an experiment read from `dir`
    /// (its relative paths resolved beside it) sees exactly these bytes.
    pub fn write_files(&self, dir: &Path) -> std::io::Result<()> {
        for (p, bytes) in &self.files {
            let to = dir.join(p);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(to, bytes)?;
        }
        Ok(())
    }
}

/// Read every file the experiment `text` names from `workdir`: each must be a relative
/// path inside it (no `..`, not through a link out of it), at most [`MAX_FILE`] bytes.
/// `format` picks the text's syntax (from a file name); a text that does not parse names no
/// file (the loader reports its syntax error).
pub fn capture(
    text: &str,
    format_of: &str,
    workdir: &Path,
    seed: Option<u64>,
    policy: &str,
) -> Result<Resolved, Refusal> {
    use brownout_core::plan::source::{parse, Format};
    let mut files = Vec::new();
    if let Ok(root) = parse(text, Format::from_path(format_of)) {
        let doc = root.to_json();
        for key in FILE_KEYS {
            if let Some(p) = doc.pointer(key).and_then(|v| v.as_str()) {
                let bytes = read_confined(workdir, p, &key[1..].replace('/', "."))?;
                if !files.iter().any(|(q, _): &(String, Vec<u8>)| q == p) {
                    files.push((p.to_string(), bytes));
                }
            }
        }
    }
    Ok(Resolved {
        text: text.to_string(),
        seed,
        files,
        policy: policy.to_string(),
    })
}

fn read_confined(workdir: &Path, p: &str, key: &str) -> Result<Vec<u8>, Refusal> {
    let path = Path::new(p);
    let plain = !p.is_empty()
        && path.is_relative()
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    let outside = || {
        refusal(format!(
            "`{key}` is `{}`: through MCP a file must be a relative path inside the server's working directory (--workdir), without `..`, that exists there; or write it inline",
            super::audit::clean(p)
        ))
    };
    if !plain {
        return Err(outside());
    }
    let root = workdir.canonicalize().map_err(|_| outside())?;
    let real: PathBuf = root.join(path).canonicalize().map_err(|_| outside())?;
    if !real.starts_with(&root) {
        return Err(outside());
    }
    use std::io::Read;
    let f = std::fs::File::open(&real).map_err(|_| outside())?;
    let mut bytes = Vec::new();
    f.take(MAX_FILE as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| {
            refusal(format!(
                "`{key}`: cannot read `{}`: {e}",
                super::audit::clean(p)
            ))
        })?;
    if bytes.len() > MAX_FILE {
        return Err(refusal(format!(
            "`{key}`: `{}` is over {MAX_FILE} bytes: too large through MCP",
            super::audit::clean(p)
        )));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewritten_file_a_new_seed_or_text_is_named() {
        let d = tempfile::tempdir().expect("tempdir");
        std::fs::write(d.path().join("f.yaml"), "faults: []\n").expect("write");
        let text = "title: t\nfaults: f.yaml\n";
        let a = capture(text, "x.yaml", d.path(), Some(1), "{}").expect("capture");
        assert_eq!(a.files.len(), 1);
        assert!(capture(text, "x.yaml", d.path(), Some(1), "{}")
            .expect("again")
            .changed_since(&a)
            .is_empty());
        std::fs::write(d.path().join("f.yaml"), "faults: [{kind: error}]\n").expect("write");
        let b = capture(text, "x.yaml", d.path(), Some(1), "{}").expect("capture");
        assert_eq!(b.changed_since(&a), vec!["the file `f.yaml`".to_string()]);
        let c = capture(text, "x.yaml", d.path(), Some(2), "{}").expect("capture");
        assert_ne!(c.key(), b.key(), "the seed is part of what is approved");
        assert!(c.changed_since(&b).contains(&"the seed".to_string()));
    }

    #[test]
    fn files_outside_the_workdir_are_refused() {
        let d = tempfile::tempdir().expect("tempdir");
        for p in ["/etc/passwd", "../x.yaml", "missing.yaml", ""] {
            let text = format!("title: t\nfaults: \"{p}\"\n");
            let r = capture(&text, "x.yaml", d.path(), None, "{}");
            assert_eq!(r.map_err(|e| e.rule), Err("paths".to_string()), "{p}");
        }
    }
}
