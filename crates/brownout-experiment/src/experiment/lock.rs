//! One run per target at a time: `brownout run` takes an exclusive `flock(2)` on a file
//! named by a hash of the target's identity before it reaches the target, and keeps it for
//! the run. The kernel releases it when the runner exits, however it dies (`kill -9`
//! included), so a dead run never blocks the next. A second run against a target whose lock
//! is held is refused (exit 3) with the holder's pid and start time, read from the file.
//!
//! A target's identity: its URL (a remote relay: its admin URL too), or for a stdio target
//! its command line and the directory its relative paths resolve from. The lock files live
//! beside the store the run keeps its journal in (`--store`, BROWNOUT_STORE, the default
//! store), or with `--no-store` in $XDG_RUNTIME_DIR (else the temporary directory).

use super::load::Loaded;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// A held lock: released when dropped (or when the process ends).
#[derive(Debug)]
pub struct TargetLock {
    _file: File,
    pub path: PathBuf,
}

/// Why the lock could not be taken.
#[derive(Debug)]
pub enum Busy {
    /// Another run holds it; what it wrote (`pid … started … target …`).
    Held { holder: String, path: PathBuf },
    /// The lock file could not be opened or locked.
    Io(String),
}

/// The target's identity, as hashed.
pub fn identity(x: &Loaded) -> String {
    let t = &x.spec.target;
    if let Some(servers) = &t.servers {
        let each: Vec<String> = servers
            .iter()
            .map(|(name, s)| match (&s.command, &s.url) {
                (Some(c), _) => format!("{name}=command {}", c.join("\u{1f}")),
                (None, Some(u)) => format!("{name}=url {u}"),
                (None, None) => format!("{name}=none"),
            })
            .collect();
        return format!("servers {} in {}", each.join(" "), x.dir.display());
    }
    if let Some(f) = &t.fleet {
        return format!("fleet {}", serde_json::to_string(f).unwrap_or_default());
    }
    match (&t.command, &t.url, &t.admin) {
        (Some(c), _, _) => format!("command {} in {}", c.join("\u{1f}"), x.dir.display()),
        (None, Some(u), admin) => {
            format!(
                "url {u}{}",
                admin
                    .as_deref()
                    .map_or(String::new(), |a| format!(" admin {a}"))
            )
        }
        (None, None, Some(a)) => format!("admin {a}"),
        (None, None, None) => "none".into(),
    }
}

/// Where lock files live for a run that keeps its journal as `keep` says.
pub fn dir(keep: &brownout_store::keep::KeepArgs) -> PathBuf {
    if !keep.no_store {
        let store = keep
            .store
            .clone()
            .or_else(|| std::env::var_os("BROWNOUT_STORE").map(PathBuf::from))
            .unwrap_or_else(brownout_store::store::default_path);
        if let Some(parent) = store.parent().filter(|p| !p.as_os_str().is_empty()) {
            return parent.to_path_buf();
        }
        return PathBuf::from(".");
    }
    std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
}

/// [`acquire`], trying again every 200 ms for up to `wait` while another run holds it (a
/// run being stopped releases it once its rollbacks are done).
pub fn acquire_within(
    x: &Loaded,
    dir: &Path,
    wait: std::time::Duration,
) -> Result<TargetLock, Busy> {
    let deadline = std::time::Instant::now() + wait;
    loop {
        match acquire(x, dir) {
            Err(Busy::Held { .. }) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            other => return other,
        }
    }
}

/// Take the lock for `x`'s target in `dir`.
pub fn acquire(x: &Loaded, dir: &Path) -> Result<TargetLock, Busy> {
    let id = identity(x);
    // FNV-1a: stable across builds and versions, as a lock file's name must be.
    let path = dir.join(format!(
        "brownout-target-{:016x}.lock",
        brownout_core::rng::hash_str(&id)
    ));
    std::fs::create_dir_all(dir).map_err(|e| Busy::Io(format!("{}: {e}", dir.display())))?;
    let mut file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(|e| Busy::Io(format!("{}: {e}", path.display())))?
    };
    // SAFETY: flock on a descriptor this function owns; no memory is passed.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
            let mut holder = String::new();
            let _ = Read::by_ref(&mut file)
                .take(1024)
                .read_to_string(&mut holder);
            return Err(Busy::Held {
                holder: holder.trim().to_string(),
                path,
            });
        }
        return Err(Busy::Io(format!("{}: {err}", path.display())));
    }
    let line = format!(
        "pid {} started {} target {}\n",
        std::process::id(),
        chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ"),
        id.replace('\u{1f}', " ")
    );
    let written = file
        .set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| file.write_all(line.as_bytes()));
    if let Err(e) = written {
        return Err(Busy::Io(format!("{}: {e}", path.display())));
    }
    Ok(TargetLock { _file: file, path })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(dir: &Path, target: &str) -> Loaded {
        let text = format!("title: t\ntarget: {target}\nload: {{workload: {{steps: [{{calls: [{{tool: echo}}]}}]}}}}\nmethod: [{{stage: a, duration: 1s, sessions: 10%}}]\nfaults: []\ngates: [\"error_rate < 1% over 1s\"]\n");
        crate::experiment::load::load_text(&text, "x.yaml", dir).expect("loads")
    }

    #[test]
    fn a_second_lock_on_the_same_target_is_refused_with_the_holder_named() {
        let d = tempfile::tempdir().expect("tmp");
        let a = loaded(d.path(), "{command: [brownout, fixture]}");
        let held = acquire(&a, d.path()).expect("first");
        match acquire(&a, d.path()) {
            Err(Busy::Held { holder, .. }) => {
                assert!(
                    holder.contains(&format!("pid {}", std::process::id())),
                    "{holder}"
                );
                assert!(holder.contains("brownout fixture"), "{holder}");
            }
            other => panic!("not refused: {other:?}"),
        }
        let b = loaded(d.path(), "{url: \"http://127.0.0.1:9/mcp\"}");
        assert!(acquire(&b, d.path()).is_ok(), "another target");
        drop(held);
        assert!(acquire(&a, d.path()).is_ok(), "released on drop");
    }
}
