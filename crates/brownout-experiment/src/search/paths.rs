//! `brownout search -o FILE` for an experiment: the paths it names (its workload, its faults
//! file) are relative to the experiment's folder, so written into another folder they are
//! rewritten relative to FILE's, and the written experiment runs as it is.

use crate::experiment::load::{load_text, resolve};
use crate::experiment::spec::{Faults, WorkloadRef};
use std::path::{Component, Path, PathBuf};

/// `text` (an experiment read from `from_dir`) with its relative paths rewritten for a file
/// in `to_dir`; and the paths that could not be rewritten (kept as they were).
pub fn rebase(text: &str, file: &str, from_dir: &Path, to_dir: &Path) -> (String, Vec<String>) {
    let Ok(x) = load_text(text, file, from_dir) else {
        return (text.to_string(), Vec::new());
    };
    let mut named: Vec<(&str, String)> = Vec::new();
    if let WorkloadRef::Path(p) = &x.spec.load.workload {
        named.push(("workload", p.clone()));
    }
    if let Faults::File(p) = &x.spec.faults {
        named.push(("faults", p.clone()));
    }
    let mut out = text.to_string();
    let mut kept = Vec::new();
    for (key, p) in named {
        if Path::new(&p).is_absolute() {
            continue;
        }
        let Some(new) = relative_to(&resolve(from_dir, &p), to_dir) else {
            kept.push(p);
            continue;
        };
        let new = new.display().to_string();
        if new == p {
            continue;
        }
        match replace_value(&out, key, &p, &new) {
            Some(t) => out = t,
            None => kept.push(p),
        }
    }
    (out, kept)
}

/// `key: VALUE` (VALUE plain or quoted) replaced by `key: NEW` at its first place.
fn replace_value(text: &str, key: &str, value: &str, new: &str) -> Option<String> {
    for q in ["", "\"", "'"] {
        let old = format!("{key}: {q}{value}{q}");
        if let Some(at) = text.find(&old) {
            let quoted = serde_json::to_string(new).ok()?;
            let mut t = text.to_string();
            t.replace_range(at..at + old.len(), &format!("{key}: {quoted}"));
            return Some(t);
        }
    }
    None
}

/// `target` as a path from `dir` (both made absolute; `..` where they part).
fn relative_to(target: &Path, dir: &Path) -> Option<PathBuf> {
    let abs = |p: &Path| -> Option<PathBuf> {
        let p = if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        };
        std::fs::canonicalize(p).ok()
    };
    let (t, d) = (abs(target)?, abs(dir)?);
    let (tc, dc): (Vec<Component>, Vec<Component>) =
        (t.components().collect(), d.components().collect());
    let common = tc.iter().zip(&dc).take_while(|(a, b)| a == b).count();
    let mut r = PathBuf::new();
    for _ in common..dc.len() {
        r.push("..");
    }
    for c in &tc[common..] {
        r.push(c.as_os_str());
    }
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_said_from_the_other_folder() {
        let d = tempfile::tempdir().expect("tmp");
        let (a, b) = (d.path().join("x/y"), d.path().join("z"));
        std::fs::create_dir_all(&a).expect("a");
        std::fs::create_dir_all(&b).expect("b");
        std::fs::write(a.join("w.yaml"), "x").expect("w");
        assert_eq!(
            relative_to(&a.join("w.yaml"), &b),
            Some(PathBuf::from("../x/y/w.yaml"))
        );
        let t = replace_value(
            "load:\n  workload: w.yaml\n",
            "workload",
            "w.yaml",
            "../w.yaml",
        );
        assert_eq!(t.as_deref(), Some("load:\n  workload: \"../w.yaml\"\n"));
    }
}
