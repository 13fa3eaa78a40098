//! Reloading a running relay's plan from its file: on SIGHUP, and with `--watch` whenever
//! the file changes. A broken edit never replaces the running plan: brownout says why on
//! stderr and keeps going with the plan it has.

use super::Control;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// How often `--watch` looks at the plan file. Polling the file's length and modification
/// time is portable and cheap, and catches editors that save by renaming a new file over
/// the old one (an inotify watch on the old inode would not).
const WATCH_EVERY: Duration = Duration::from_millis(200);

/// The file's identity for change detection: modification time and length.
fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

/// Load the file and, if it is a valid plan, make it the relay's plan. Returns what to say.
pub fn reload(control: &Control, path: &Path) -> Result<String, String> {
    match control.replace_from_file(path) {
        Ok(n) => Ok(format!(
            "brownout: plan reloaded from {} ({n} fault{})",
            path.display(),
            if n == 1 { "" } else { "s" }
        )),
        Err(e) => Err(format!(
            "brownout: plan {} not reloaded, the running plan stays: {e:#}",
            path.display()
        )),
    }
}

/// Watch for SIGHUP (and, with `watch`, for changes to the file) for as long as the relay
/// runs; the task ends with the runtime.
pub fn spawn(control: Arc<Control>, path: PathBuf, watch: bool) -> std::io::Result<()> {
    let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    tokio::spawn(async move {
        let mut last = stamp(&path);
        let mut tick = tokio::time::interval(WATCH_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                got = hup.recv() => {
                    if got.is_none() {
                        return;
                    }
                    last = stamp(&path);
                }
                _ = tick.tick(), if watch => {
                    let now = stamp(&path);
                    if now == last || now.is_none() {
                        continue;
                    }
                    last = now;
                }
            }
            // Parsing and compiling a large plan takes a while: not on the relay's runtime.
            let (c, p) = (Arc::clone(&control), path.clone());
            match tokio::task::spawn_blocking(move || reload(&c, &p)).await {
                Ok(Ok(said) | Err(said)) => eprintln!("{said}"),
                Err(e) => eprintln!("brownout: plan {} not reloaded: {e}", path.display()),
            }
        }
    });
    Ok(())
}

/// Without a plan file there is nothing to reload; SIGHUP must still not kill the relay
/// (its default action would), so it is answered with a note on stderr.
pub fn spawn_without_plan() -> std::io::Result<()> {
    let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    tokio::spawn(async move {
        while hup.recv().await.is_some() {
            eprintln!("brownout: SIGHUP: no --plan file to reload");
        }
    });
    Ok(())
}
