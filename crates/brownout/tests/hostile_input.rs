//! Hostile or broken input at the command line ends with a clear error, never a crash:
//! endless files (`/dev/zero`) are refused at a size limit naming the file, a plan past the
//! document size cap is refused before it is parsed, a large mapping is checked in linear
//! time, and a closed stdout (`brownout … | head -1`) ends the command quietly.
//!
//! brownout runs here under an address-space limit, so a regression that reads without end
//! fails its test instead of exhausting the machine.

mod common;

use common::{brownout, repo, tmp};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

/// `brownout ARGS` with at most 4 GB of address space: (exit code, stdout, stderr).
fn bounded(args: &[&str], store: &std::path::Path) -> (Option<i32>, String, String) {
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 4000000; exec \"$0\" \"$@\"")
        .arg(brownout())
        .args(args)
        .env("BROWNOUT_STORE", store)
        .output()
        .expect("run brownout");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn endless_input_is_refused_at_a_limit_that_names_the_file() {
    let dir = tmp();
    let store = dir.path().join("journal.sqlite");
    for args in [
        &["plan", "check", "/dev/zero"][..],
        &["experiment", "check", "/dev/zero"],
        &["journal", "import", "/dev/zero"],
        &["sim", "--plan", "/dev/zero", "--workload", "/dev/zero"],
    ] {
        let (code, out, err) = bounded(args, &store);
        assert!(
            matches!(code, Some(1 | 2)),
            "{args:?}: exit {code:?}\n{out}\n{err}"
        );
        let said = format!("{out}{err}");
        assert!(
            said.contains("/dev/zero") && said.contains("limit of"),
            "{args:?}: no clear error naming the file and the limit:\n{said}"
        );
        assert!(!said.contains("panicked"), "{args:?}: {said}");
    }
}

#[test]
fn a_plan_past_the_size_cap_is_refused_before_parsing() {
    let dir = tmp();
    let plan = dir.path().join("huge.yaml");
    // 30 MB: a fault's payload padded far past any real plan.
    let pad = "a".repeat(30 << 20);
    std::fs::write(
        &plan,
        format!("seed: 1\nfaults:\n  - kind: error\n    message: \"{pad}\"\n"),
    )
    .expect("write");
    let p = plan.display().to_string();
    let (code, out, err) = bounded(&["plan", "check", &p], &dir.path().join("s.sqlite"));
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(
        err.contains("huge.yaml") && err.contains("over the limit of 4194304 bytes")
            || err.contains("limit of 4194304 bytes"),
        "{err}"
    );
}

/// A mapping with many keys (within the size cap) is read in time linear in its size: the
/// duplicate-key check used to compare each key with every earlier one.
#[test]
fn a_mapping_with_many_keys_is_read_in_linear_time() {
    let dir = tmp();
    let plan = dir.path().join("wide.yaml");
    let mut text = String::from("seed: 1\nfaults: []\nextra:\n");
    for i in 0..150_000 {
        text.push_str(&format!("  k{i}: 1\n"));
    }
    assert!(text.len() < 4 << 20);
    std::fs::write(&plan, &text).expect("write");
    let p = plan.display().to_string();
    let (code, out, err) = bounded(&["plan", "check", &p], &dir.path().join("s.sqlite"));
    // Whatever the verdict on the plan, it comes (the test harness's timeout is the bound).
    assert!(matches!(code, Some(0 | 1)), "{out}\n{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Each of these commands, its stdout closed before it writes (as `| head -1` does once it
/// has its line), ends without a panic and without exit code 101. Repeated: it is racy.
#[test]
fn a_closed_stdout_ends_a_command_quietly() {
    let dir = tmp();
    let store = dir.path().join("journal.sqlite");
    let journal = repo().join("crates/brownout/tests/data/journal-completed.json");
    let (code, _, err) = bounded(
        &["journal", "import", &journal.display().to_string()],
        &store,
    );
    assert_eq!(code, Some(0), "{err}");
    for args in [
        &["journal", "list"][..],
        &["journal", "export"],
        &["probe", "--schema"],
        &["experiment", "schema"],
        &["plan", "schema"],
    ] {
        for round in 0..5 {
            let mut child = Command::new(brownout())
                .args(args)
                .env("BROWNOUT_STORE", &store)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn");
            let stdout = child.stdout.take().expect("stdout");
            if round % 2 == 1 {
                // Read one line first, as `head -1` does, then close.
                let mut line = String::new();
                let _ = BufReader::new(stdout).read_line(&mut line);
            } else {
                drop(stdout);
            }
            let out = child.wait_with_output().expect("wait");
            let err = String::from_utf8_lossy(&out.stderr);
            assert_ne!(out.status.code(), Some(101), "{args:?}: {err}");
            assert!(
                !err.contains("panicked") && !err.contains("not a journal"),
                "{args:?}: {err}"
            );
            if let Some(code) = out.status.code() {
                assert_eq!(code, 0, "{args:?}: {err}");
            }
        }
    }
}
