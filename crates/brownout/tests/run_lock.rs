//! The operators' asks of `brownout run`: one run per target at a time (a second run is
//! refused with exit 3 naming the first's pid, and the lock goes with a runner killed with
//! SIGKILL), and a rung of the ladder skipped only with a person's approval, recorded in
//! the journal with who approved.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn experiment(title: &str, shares: &[&str], secs: u32) -> String {
    let method: Vec<String> = shares
        .iter()
        .enumerate()
        .map(|(i, s)| format!("  - {{stage: s{i}, duration: {secs}s, sessions: \"{s}\"}}"))
        .collect();
    format!(
        "title: {title}\nlabels: {{env: staging}}\ntarget: {{command: [brownout, fixture]}}\nload:\n  sessions: 2\n  workload: {{arrival: {{mode: closed, concurrency: 2}}, think_ms: 20, steps: [{{calls: [{{tool: echo, arguments: {{message: hi}}}}]}}]}}\nmethod:\n{}\nfaults:\n  - {{kind: latency, tools: [echo], added_ms: 1}}\ngates:\n  - error_rate < 50% over 1s\n",
        method.join("\n")
    )
}

fn run(dir: &Path, file: &str, args: &[&str]) -> (i32, Value, String) {
    let journal = dir.join(format!("{file}.journal.json"));
    let out = Command::new(brownout())
        .arg("run")
        .arg(dir.join(file))
        .arg("--journal")
        .arg(&journal)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("brownout run");
    let j = std::fs::read_to_string(&journal)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), j, text)
}

/// The lock file in `dir` held by `pid`, once it is.
fn wait_for_lock(dir: &Path, pid: u32) -> bool {
    let until = Instant::now() + Duration::from_secs(60);
    while Instant::now() < until {
        let held = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("brownout-target-")
            })
            .any(|e| {
                std::fs::read_to_string(e.path())
                    .unwrap_or_default()
                    .starts_with(&format!("pid {pid} "))
            });
        if held {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn a_second_run_against_the_same_target_is_refused_until_the_first_dies() {
    let dir = tmp();
    let d = dir.path();
    let store = d.join("store.sqlite");
    let store_arg = store.display().to_string();
    std::fs::write(d.join("long.yaml"), experiment("long", &["10%"], 120)).expect("write");
    std::fs::write(d.join("short.yaml"), experiment("short", &["10%"], 1)).expect("write");
    let mut first = Command::new(brownout())
        .arg("run")
        .arg(d.join("long.yaml"))
        .args(["--journal", "/dev/null", "--store", &store_arg])
        .current_dir(d)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("first run");
    let pid = first.id();
    assert!(wait_for_lock(d, pid), "the first run never took the lock");
    let (code, j, text) = run(d, "short.yaml", &["--store", &store_arg]);
    assert_eq!(code, 3, "{text}");
    assert_eq!(j["status"], "refused", "{j:#}");
    assert_eq!(j["refusal"]["rule"], "target_lock", "{j:#}");
    let detail = j["refusal"]["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains(&format!("pid {pid}")) && detail.contains("started"),
        "{detail}"
    );
    // Another target (a URL) is not held by it.
    std::fs::write(
        d.join("other.yaml"),
        experiment("other", &["10%"], 1).replace(
            "{command: [brownout, fixture]}",
            "{url: \"http://127.0.0.1:9/mcp\"}",
        ),
    )
    .expect("write");
    let (code, j, _) = run(d, "other.yaml", &["--store", &store_arg]);
    assert_ne!(j["refusal"]["rule"], "target_lock", "{code}: {j:#}");
    // A run told to wait (`--wait-for-target`, as `brownout mcp` starts them) does not give
    // up while the first holds the target, and takes it once the first lets it go.
    let waiter = {
        let (d, store_arg) = (d.to_path_buf(), store_arg.clone());
        std::thread::spawn(move || {
            run(
                &d,
                "short.yaml",
                &["--store", &store_arg, "--wait-for-target", "120"],
            )
        })
    };
    // A deliberate period (the test's subject, not a wait for state): the waiter must not
    // give up while the first run holds the target; its lock attempts leave no trace to
    // wait on.
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !waiter.is_finished(),
        "the waiting run gave up while the first held the target"
    );
    // SIGKILL: no cleanup of brownout's own runs; the kernel releases the lock.
    let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    let _ = first.wait();
    let (code, j, text) = waiter.join().expect("the waiting run");
    assert_eq!(code, 0, "{text}");
    assert_eq!(j["status"], "completed", "{j:#}");
}

#[test]
fn a_skipped_rung_needs_a_named_approver_and_the_journal_keeps_them() {
    let dir = tmp();
    let d = dir.path();
    let store = d.join("store.sqlite").display().to_string();
    std::fs::write(d.join("policy.yaml"), "ladder_from_history: true\n").expect("policy");
    std::fs::write(
        d.join("wide.yaml"),
        experiment("wide at once", &["10%", "25%"], 1),
    )
    .expect("write");
    let policy = d.join("policy.yaml").display().to_string();
    let (code, j, text) = run(d, "wide.yaml", &["--store", &store, "--policy", &policy]);
    assert_eq!(code, 3, "{text}");
    assert_eq!(j["refusal"]["rule"], "ladder_from_history", "{j:#}");
    assert!(j["ladder_skip"].is_null());
    let (code, j, text) = run(
        d,
        "wide.yaml",
        &[
            "--store",
            &store,
            "--policy",
            &policy,
            "--ladder-skip-approved-by",
            "alice (SRE on call)",
        ],
    );
    assert_eq!(code, 0, "{text}");
    assert_eq!(
        j["ladder_skip"]["approved_by"], "alice (SRE on call)",
        "{j:#}"
    );
    assert!(
        j["ladder_skip"]["refused"]
            .as_str()
            .unwrap_or_default()
            .contains("25%"),
        "{j:#}"
    );
    assert_eq!(j["stages"].as_array().map_or(0, Vec::len), 2);
}
