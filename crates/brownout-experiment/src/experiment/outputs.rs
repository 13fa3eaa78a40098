//! Output paths checked before anything reaches the target: every file a run will write
//! (`--journal`, each `--report`, `--status`) must be writable *now*, so a typo in a path
//! fails the run at once instead of after its faults were injected.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

/// Why a path cannot be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the {what} {}: {why}", path.display())]
pub struct Unwritable {
    pub what: String,
    pub path: PathBuf,
    pub why: String,
}

/// Check that `path` can be written: its directory exists and takes a new file (one is
/// created and removed), and the path is not a directory or a read-only file.
pub fn check(what: &str, path: &Path) -> Result<(), Unwritable> {
    let fail = |why: String| Unwritable {
        what: what.to_string(),
        path: path.to_path_buf(),
        why,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    match std::fs::metadata(&dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(fail(format!("{} is not a directory", dir.display()))),
        Err(e) => return Err(fail(format!("its directory {}: {e}", dir.display()))),
    }
    if path.is_dir() {
        return Err(fail("it is a directory".into()));
    }
    if path.exists() {
        // Opened for appending (nothing changes) to learn whether it may be overwritten.
        OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| fail(e.to_string()))?;
        return Ok(());
    }
    let probe = dir.join(format!(
        ".brownout-write-check-{}-{}",
        std::process::id(),
        path.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    ));
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .map_err(|e| {
            fail(format!(
                "its directory {} does not take a new file: {e}",
                dir.display()
            ))
        })?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Check every output of a run; the first that cannot be written.
pub fn check_all<'a>(
    outputs: impl IntoIterator<Item = (&'a str, &'a Path)>,
) -> Result<(), Unwritable> {
    outputs.into_iter().try_for_each(|(what, p)| check(what, p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_directories_and_directories_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(check("journal", &dir.path().join("j.json")).is_ok());
        assert!(
            !dir.path().join("j.json").exists(),
            "the check leaves nothing"
        );
        let e = check("report", Path::new("/nonexistent/dir/r.html")).expect_err("missing");
        assert!(e.to_string().contains("/nonexistent/dir"), "{e}");
        assert!(check("journal", dir.path()).is_err());
        let left: Vec<_> = std::fs::read_dir(dir.path()).expect("read").collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
