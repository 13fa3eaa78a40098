//! One run per target at a time, and one run per relay: `brownout run` takes an exclusive
//! `flock(2)` on a file per thing it will drive, named by a hash of that thing's identity,
//! before it reaches it, and keeps them for the run. The kernel releases them when the
//! runner exits, however it dies (`kill -9` included), so a dead run never blocks the next.
//! A second run that needs a lock held is refused (exit 3) naming what is held and the
//! holder's pid, run id and start time, read from the file.
//!
//! What is locked: a relay already running (`target.admin`, each relay of a
//! `target.fleet`) by its admin address normalised — the host resolved to its socket
//! addresses (`LOCALHOST:9901/` and `127.0.0.1:9901` are one relay), a DNS fleet's name
//! resolved now — so two fleets that share a relay, however listed or discovered, never
//! run at once. The locks of one run are taken all or none, in a sorted order. A relay that
//! joins a DNS fleet mid-run is locked as it joins ([`TargetLock::join`]); one another run
//! holds does not join. Any other target (a command, servers, a URL the runner fronts with
//! its own relay) is one lock: its command line and the directory its relative paths
//! resolve from, or its URL. The lock files live beside the store the run keeps its journal
//! in (`--store`, BROWNOUT_STORE, the default store), or with `--no-store` in
//! $XDG_RUNTIME_DIR (else the temporary directory): runners that share it exclude each
//! other. In a directory others can write (the temporary directory, a store under /tmp)
//! they live in a private subdirectory, `brownout-<uid>` (mode 0700, this user's), and a
//! lock file is opened without following a symbolic link and must be this user's regular
//! file: another user cannot plant a link that makes the runner overwrite a file of its
//! choice, nor a file it holds locked.

use super::fleet_spec::FleetSpec;
use super::load::Loaded;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::net::ToSocketAddrs;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The locks of one run: released when dropped (or when the process ends).
#[derive(Debug)]
pub struct TargetLock {
    held: Mutex<Vec<(String, File)>>,
    dir: PathBuf,
    run: String,
    /// The first lock file (for messages).
    pub path: PathBuf,
}

/// What a target needs to know of the run driving it.
#[derive(Clone, Default)]
pub struct RunOf {
    /// The run's id: every fault it posts on a relay carries it (two runs with one seed
    /// never share a fault id).
    pub id: String,
    /// The run's locks: a relay joining a DNS fleet is locked as it joins.
    pub lock: Option<std::sync::Arc<TargetLock>>,
}

/// Why a lock could not be taken.
#[derive(Debug)]
pub enum Busy {
    /// Another run holds it: what is held (`relay 127.0.0.1:9902`, `this target`) and what
    /// the holder wrote (`pid … started … run …`).
    Held {
        what: String,
        holder: String,
        path: PathBuf,
    },
    /// The lock file could not be opened or locked.
    Io(String),
}

impl std::fmt::Display for Busy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Busy::Held { what, holder, path } => write!(
                f,
                "another run is going against {what} ({holder}; lock {}): one run per target and per relay at a time",
                path.display()
            ),
            Busy::Io(e) => write!(f, "the target's run lock could not be taken: {e}"),
        }
    }
}

/// A relay's identity: its admin address's host resolved, with the port (`relay
/// 127.0.0.1:9901`, one per socket address); a host that does not resolve is kept as
/// written, lowercased.
pub fn relay_keys(admin: &str) -> Vec<String> {
    let Ok(u) = reqwest::Url::parse(admin.trim()) else {
        return vec![format!(
            "relay {}",
            admin.trim().trim_end_matches('/').to_lowercase()
        )];
    };
    let (host, port) = host_port(&u);
    let mut keys: Vec<String> = (host.as_str(), port)
        .to_socket_addrs()
        .map(|a| a.map(|a| format!("relay {a}")).collect())
        .unwrap_or_default();
    if keys.is_empty() {
        keys.push(format!("relay {host}:{port}"));
    }
    keys.sort();
    keys.dedup();
    keys
}

/// A URL's host (lower case, IPv6 without brackets) and port (the scheme's when not given).
fn host_port(u: &reqwest::Url) -> (String, u16) {
    let host = u
        .host_str()
        .unwrap_or_default()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_lowercase();
    (host, u.port_or_known_default().unwrap_or(0))
}

/// An MCP server the runner fronts with its own relay (`target.url`): its URL with the host
/// resolved (`http://LOCALHOST:8900/mcp/` and `http://127.0.0.1:8900/mcp` are one server);
/// a URL that does not parse or resolve is kept as written.
fn url_keys(url: &str) -> Vec<String> {
    let Ok(u) = reqwest::Url::parse(url.trim()) else {
        return vec![format!("url {}", url.trim())];
    };
    let (host, port) = host_port(&u);
    let path = u.path().trim_end_matches('/');
    let mut keys: Vec<String> = (host.as_str(), port)
        .to_socket_addrs()
        .map(|a| {
            a.map(|a| format!("url {}://{a}{path}", u.scheme()))
                .collect()
        })
        .unwrap_or_default();
    if keys.is_empty() {
        keys.push(format!("url {}://{host}:{port}{path}", u.scheme()));
    }
    keys
}

/// What `x`'s run locks, sorted, each once.
pub fn identities(x: &Loaded) -> Vec<String> {
    let t = &x.spec.target;
    let mut keys = if let Some(servers) = &t.servers {
        let each: Vec<String> = servers
            .iter()
            .map(|(name, s)| match (&s.command, &s.url) {
                (Some(c), _) => format!("{name}=command {}", c.join("\u{1f}")),
                (None, Some(u)) => format!("{name}=url {u}"),
                (None, None) => format!("{name}=none"),
            })
            .collect();
        vec![format!("servers {} in {}", each.join(" "), x.dir.display())]
    } else if let Some(f) = &t.fleet {
        match f {
            FleetSpec::List(l) => l.iter().flat_map(|r| relay_keys(&r.admin)).collect(),
            FleetSpec::Dns(d) => {
                let host = d.dns.trim_end_matches('.');
                let found: Vec<String> = (host, d.admin_port)
                    .to_socket_addrs()
                    .map(|a| a.map(|a| format!("relay {a}")).collect())
                    .unwrap_or_default();
                if found.is_empty() {
                    // Unresolved now: the run fails to start; the name keeps two such runs apart.
                    vec![format!(
                        "fleet dns {}:{}",
                        host.to_lowercase(),
                        d.admin_port
                    )]
                } else {
                    found
                }
            }
        }
    } else {
        match (&t.command, &t.url, &t.admin) {
            (Some(c), _, _) => vec![format!(
                "command {} in {}",
                c.join("\u{1f}"),
                x.dir.display()
            )],
            (None, _, Some(a)) => relay_keys(a),
            (None, Some(u), None) => url_keys(u),
            (None, None, None) => vec!["none".into()],
        }
    };
    keys.sort();
    keys.dedup();
    keys
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

/// [`acquire`], trying again every 200 ms for up to `wait` while another run holds a lock
/// it needs (a run being stopped releases its locks once its rollbacks are done).
pub fn acquire_within(
    x: &Loaded,
    dir: &Path,
    run: &str,
    wait: std::time::Duration,
) -> Result<TargetLock, Busy> {
    let deadline = std::time::Instant::now() + wait;
    loop {
        match acquire(x, dir, run) {
            Err(Busy::Held { .. }) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            other => return other,
        }
    }
}

/// The lock file of `key` in `dir`.
fn file_of(dir: &Path, key: &str) -> PathBuf {
    // FNV-1a: stable across builds and versions, as a lock file's name must be.
    dir.join(format!(
        "brownout-target-{:016x}.lock",
        brownout_core::rng::hash_str(key)
    ))
}

/// What a key is called in a message.
fn shown(key: &str) -> String {
    match key.strip_prefix("relay ") {
        Some(addr) => format!("relay {addr}"),
        None => "this target".into(),
    }
}

/// Take one lock, without waiting.
fn take(dir: &Path, key: &str, run: &str) -> Result<File, Busy> {
    let path = file_of(dir, key);
    let mut file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .map_err(|e| Busy::Io(format!("{}: {e}", path.display())))?
    };
    mine(&file, &path)?;
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
                what: shown(key),
                holder: brownout_core::human::clean_n(holder.trim(), 400),
                path,
            });
        }
        return Err(Busy::Io(format!("{}: {err}", path.display())));
    }
    let line = format!(
        "pid {} started {} run {run} target {}\n",
        std::process::id(),
        chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ"),
        key.replace('\u{1f}', " ")
    );
    let written = file
        .set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| file.write_all(line.as_bytes()));
    if let Err(e) = written {
        return Err(Busy::Io(format!("{}: {e}", path.display())));
    }
    Ok(file)
}

/// The directory lock files go in: `dir` when only its owner can write it, else its
/// subdirectory `brownout-<uid>`, made private to this user (see the module documentation).
fn private(dir: &Path) -> Result<PathBuf, Busy> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let io = |p: &Path, e: &dyn std::fmt::Display| Busy::Io(format!("{}: {e}", p.display()));
    std::fs::create_dir_all(dir).map_err(|e| io(dir, &e))?;
    let meta = std::fs::metadata(dir).map_err(|e| io(dir, &e))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    if meta.mode() & 0o022 == 0 {
        return Ok(dir.to_path_buf());
    }
    let sub = dir.join(format!("brownout-{uid}"));
    match std::fs::DirBuilder::new().mode(0o700).create(&sub) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io(&sub, &e)),
    }
    // Not followed if it is a link: it must be this user's own directory, closed to others.
    let meta = std::fs::symlink_metadata(&sub).map_err(|e| io(&sub, &e))?;
    if !meta.is_dir() || meta.uid() != uid || meta.permissions().mode() & 0o077 != 0 {
        return Err(io(
            &sub,
            &format!(
                "not a private directory of this user (uid {uid}, mode 0700): another user may have made it; remove it, or keep the journal in a store of your own (--store)"
            ),
        ));
    }
    Ok(sub)
}

/// Refuse a lock file that is not this user's regular file (one another user planted).
fn mine(file: &File, path: &Path) -> Result<(), Busy> {
    use std::os::unix::fs::MetadataExt;
    let meta = file
        .metadata()
        .map_err(|e| Busy::Io(format!("{}: {e}", path.display())))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    if !meta.is_file() || meta.uid() != uid {
        return Err(Busy::Io(format!(
            "{}: not a regular file of this user (uid {uid}): refusing it as a lock file",
            path.display()
        )));
    }
    Ok(())
}

/// Take every lock `x`'s run needs in `dir`, for the run `run`: all, or none.
pub fn acquire(x: &Loaded, dir: &Path, run: &str) -> Result<TargetLock, Busy> {
    let dir = &private(dir)?;
    let keys = identities(x);
    let mut held = Vec::with_capacity(keys.len());
    // In sorted order, so two runs never each hold a part of the other's; on a refusal the
    // ones taken are dropped (released) with `held`.
    for key in keys {
        let file = take(dir, &key, run)?;
        held.push((key, file));
    }
    let path = held
        .first()
        .map_or_else(|| dir.to_path_buf(), |(k, _)| file_of(dir, k));
    Ok(TargetLock {
        held: Mutex::new(held),
        dir: dir.to_path_buf(),
        run: run.to_string(),
        path,
    })
}

impl TargetLock {
    /// Lock a relay that joins the run (a DNS fleet's new address), unless this run holds
    /// it already; refused when another run holds it.
    pub fn join(&self, admin: &str) -> Result<(), Busy> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let mut fresh = Vec::new();
        for key in relay_keys(admin) {
            if held.iter().any(|(k, _)| *k == key) {
                continue;
            }
            let file = take(&self.dir, &key, &self.run)?;
            fresh.push((key, file));
        }
        held.extend(fresh);
        Ok(())
    }

    /// What this run holds (for tests and messages).
    pub fn keys(&self) -> Vec<String> {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.iter().map(|(k, _)| k.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(dir: &Path, target: &str) -> Loaded {
        let text = format!("title: t\ntarget: {target}\nload: {{workload: {{steps: [{{calls: [{{tool: echo}}]}}]}}}}\nmethod: [{{stage: a, duration: 1s, sessions: 10%}}]\nfaults: []\ngates: [\"error_rate < 1% over 1s\"]\n");
        crate::experiment::load::load_text(&text, "x.yaml", dir).expect("loads")
    }

    fn fleet(dir: &Path, admins: &[&str]) -> Loaded {
        let each: Vec<String> = admins
            .iter()
            .enumerate()
            .map(|(i, a)| {
                format!(
                    "{{url: \"http://127.0.0.1:{}/mcp\", admin: \"{a}\"}}",
                    8900 + i
                )
            })
            .collect();
        loaded(dir, &format!("{{fleet: [{}]}}", each.join(", ")))
    }

    #[test]
    fn a_second_lock_on_the_same_target_is_refused_with_the_holder_named() {
        let d = tempfile::tempdir().expect("tmp");
        let a = loaded(d.path(), "{command: [brownout, fixture]}");
        let held = acquire(&a, d.path(), "run-a").expect("first");
        match acquire(&a, d.path(), "run-b") {
            Err(Busy::Held { holder, what, .. }) => {
                assert!(
                    holder.contains(&format!("pid {}", std::process::id())),
                    "{holder}"
                );
                assert!(holder.contains("run run-a"), "{holder}");
                assert!(holder.contains("brownout fixture"), "{holder}");
                assert_eq!(what, "this target");
            }
            other => panic!("not refused: {other:?}"),
        }
        let b = loaded(d.path(), "{url: \"http://127.0.0.1:9/mcp\"}");
        let held_b = acquire(&b, d.path(), "run-b").expect("another target");
        // Review G13: one server under two spellings is one target.
        let b2 = loaded(d.path(), "{url: \"http://LOCALHOST:9/mcp/\"}");
        assert!(
            matches!(acquire(&b2, d.path(), "run-c"), Err(Busy::Held { .. })),
            "http://LOCALHOST:9/mcp/ is http://127.0.0.1:9/mcp"
        );
        let other_path = loaded(d.path(), "{url: \"http://127.0.0.1:9/other\"}");
        assert!(
            acquire(&other_path, d.path(), "run-c").is_ok(),
            "another endpoint"
        );
        drop(held_b);
        drop(held);
        assert!(acquire(&a, d.path(), "run-b").is_ok(), "released on drop");
    }

    /// F17: the lock was one file for the whole fleet list, so fleets [1, 2] and [3, 2]
    /// (or [2, 1], or [2]) ran at once on relay 2.
    #[test]
    fn two_fleets_sharing_a_relay_never_hold_it_at_once_and_a_refusal_takes_nothing() {
        let d = tempfile::tempdir().expect("tmp");
        let first = fleet(
            d.path(),
            &["http://127.0.0.1:9901", "http://127.0.0.1:9902"],
        );
        let held = acquire(&first, d.path(), "run-1").expect("first");
        for other in [
            &["http://127.0.0.1:9903", "http://127.0.0.1:9902"][..],
            &["http://127.0.0.1:9902", "http://127.0.0.1:9901"][..],
            &["http://LOCALHOST:9902/"][..],
        ] {
            let x = fleet(d.path(), other);
            match acquire(&x, d.path(), "run-2") {
                Err(e @ Busy::Held { .. }) => {
                    let text = e.to_string();
                    assert!(text.contains("relay 127.0.0.1:990"), "{other:?}: {text}");
                    assert!(text.contains("run run-1"), "{other:?}: {text}");
                }
                got => panic!("{other:?} not refused: {got:?}"),
            }
        }
        // All or nothing: the refused run [3, 2] left relay 3 free.
        let third = fleet(d.path(), &["http://127.0.0.1:9903"]);
        let h3 = acquire(&third, d.path(), "run-3").expect("relay 3 is free");
        // A relay joining the first run's fleet while run 3 holds it does not join.
        let e = held
            .join("http://127.0.0.1:9903")
            .expect_err("held by run 3");
        assert!(e.to_string().contains("run run-3"), "{e}");
        drop(h3);
        held.join("http://127.0.0.1:9903").expect("free now");
        assert!(held.keys().contains(&"relay 127.0.0.1:9903".to_string()));
        // A single remote relay (`target.admin`) is the same relay as a fleet's.
        let remote = loaded(
            d.path(),
            "{url: \"http://127.0.0.1:8900/mcp\", admin: \"http://127.0.0.1:9901\"}",
        );
        assert!(matches!(
            acquire(&remote, d.path(), "run-4"),
            Err(Busy::Held { .. })
        ));
        drop(held);
        assert!(acquire(&remote, d.path(), "run-4").is_ok());
    }

    /// Review G2: in a directory others can write (/tmp with `--no-store`), a link planted
    /// at a lock file's (predictable) path made the runner truncate and rewrite the file it
    /// points to.
    #[test]
    fn a_link_planted_where_a_lock_file_goes_is_never_followed() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().expect("tmp");
        let victim = d.path().join("victim.txt");
        std::fs::write(&victim, "precious").expect("victim");
        let x = fleet(d.path(), &["http://127.0.0.1:9902"]);
        // A shared directory (sticky, everyone writes), with the link planted in it.
        let shared = d.path().join("tmp");
        std::fs::create_dir(&shared).expect("dir");
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
        std::os::unix::fs::symlink(&victim, file_of(&shared, "relay 127.0.0.1:9902"))
            .expect("link");
        let held = acquire(&x, &shared, "run-1").expect("locked in a private subdirectory");
        assert_eq!(std::fs::read_to_string(&victim).expect("read"), "precious");
        // SAFETY: no preconditions.
        let uid = unsafe { libc::geteuid() };
        let sub = shared.join(format!("brownout-{uid}"));
        assert!(held.path.starts_with(&sub), "{}", held.path.display());
        let mode = std::fs::metadata(&sub).expect("sub").permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        drop(held);
        // In a directory of this user's alone, a link at a lock file's path is refused.
        let own = d.path().join("own");
        std::fs::create_dir(&own).expect("dir");
        std::os::unix::fs::symlink(&victim, file_of(&own, "relay 127.0.0.1:9902")).expect("link");
        match acquire(&x, &own, "run-2") {
            Err(Busy::Io(e)) => assert!(e.contains("brownout-target-"), "{e}"),
            other => panic!("a link was taken for a lock file: {other:?}"),
        }
        assert_eq!(std::fs::read_to_string(&victim).expect("read"), "precious");
    }

    #[test]
    fn a_relay_is_its_resolved_socket_address() {
        assert_eq!(
            relay_keys("http://127.0.0.1:9901/"),
            ["relay 127.0.0.1:9901"]
        );
        assert!(relay_keys("http://LocalHost:9901").contains(&"relay 127.0.0.1:9901".to_string()));
        assert_eq!(relay_keys("http://10.0.0.5"), ["relay 10.0.0.5:80"]);
        assert_eq!(
            relay_keys("http://no-such-relay.invalid:9901"),
            ["relay no-such-relay.invalid:9901"]
        );
    }
}
