//! Helpers for the store and report tests: the real journals in tests/data (written by
//! `brownout run` against `brownout fixture`: one completed, one aborted by its gate), and
//! `brownout journal …` with a store of the test's own.
#![allow(dead_code)]

use super::common::{brownout, repo};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn data(name: &str) -> PathBuf {
    repo().join("crates/brownout/tests/data").join(name)
}

pub fn completed() -> PathBuf {
    data("journal-completed.json")
}

pub fn aborted() -> PathBuf {
    data("journal-aborted.json")
}

pub fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).expect("read")).expect("json")
}

/// `brownout journal --store STORE ARGS…`: (exit code, stdout, stderr). BROWNOUT_STORE and
/// XDG_DATA_HOME point into the store's directory too, so nothing reaches the user's store.
pub fn journal(store: &Path, args: &[&str]) -> (i32, String, String) {
    let dir = store.parent().expect("store dir");
    let out = Command::new(brownout())
        .arg("journal")
        .arg("--store")
        .arg(store)
        .args(args)
        .env("XDG_DATA_HOME", dir)
        .env_remove("BROWNOUT_STORE")
        .output()
        .expect("run brownout journal");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `journal … --json`, parsed (asserting exit 0).
pub fn journal_json(store: &Path, args: &[&str]) -> Value {
    let (code, out, err) = journal(store, args);
    assert_eq!(code, 0, "journal {args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

/// A store with both journals imported.
pub fn store_with_both(dir: &Path) -> PathBuf {
    let store = dir.join("journal.sqlite");
    let (code, _, err) = journal(
        &store,
        &[
            "import",
            &completed().display().to_string(),
            &aborted().display().to_string(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    store
}
