//! Issue 23 §2: rollbacks that cannot be cut short, and no fault before every output path
//! is known to be writable.

mod common;
#[path = "experiment_support/mod.rs"]
mod support;

use common::brownout;
use std::process::Command;
use support::*;

/// Signals that arrive while rollbacks run are recorded, never obeyed: every rollback runs
/// to its end (before: one more SIGINT skipped the running rollback and every later one).
#[test]
fn signals_during_rollbacks_are_recorded_not_obeyed() {
    let dir = common::tmp();
    let status = dir.path().join("status.json");
    let e = Exp {
        method: "[{stage: canary, duration: 60s, sessions: 10%}]",
        rollbacks: "[{command: [sh, -c, \"touch first-started; sleep 3; touch first-done\"], timeout: 60s}, {command: [touch, second-done]}]",
        ..Exp::fixture_green()
    };
    let status_arg = status.display().to_string();
    let mut child = spawn_run(dir.path(), &e, &["--no-store", "--status", &status_arg]);
    wait_for_stage(&status);
    signal(&child, nix::sys::signal::Signal::SIGINT);
    wait_for_file(&dir.path().join("first-started"), 60);
    signal(&child, nix::sys::signal::Signal::SIGINT);
    signal(&child, nix::sys::signal::Signal::SIGTERM);
    assert_eq!(wait_exit(&mut child, 120), 130);
    assert!(
        dir.path().join("first-done").exists(),
        "the first rollback was cut short"
    );
    assert!(
        dir.path().join("second-done").exists(),
        "the second rollback was skipped"
    );
    let j = journal(dir.path());
    valid_journal(&j);
    let rollbacks = j["rollbacks"].as_array().expect("rollbacks");
    assert_eq!(rollbacks.len(), 3, "{rollbacks:#?}");
    assert_eq!(rollbacks[1]["ok"], true, "{:#}", rollbacks[1]);
    let detail = rollbacks[1]["detail"].as_str().unwrap_or("");
    assert!(detail.contains("recorded, not obeyed"), "{detail}");
    assert_eq!(rollbacks[2]["ok"], true, "{:#}", rollbacks[2]);
}

/// `--report html:/nonexistent/…` completed with exit 0 and no report; `--journal
/// /nonexistent/…` ran the whole experiment and then exited 2. Both now stop before the
/// target is reached.
#[test]
fn unwritable_output_paths_stop_the_run_before_the_target() {
    let dir = common::tmp();
    let e = Exp {
        rollbacks: "[{command: [touch, rolled-back]}]",
        ..Exp::fixture_green()
    };
    let file = write(dir.path(), &experiment_yaml(&e));
    std::fs::write(dir.path().join("workload.yaml"), e.workload).expect("workload");
    for args in [
        vec!["--report", "html:/nonexistent/dir/report.html"],
        vec!["--journal", "/nonexistent/dir/journal.json"],
        vec!["--status", "/nonexistent/dir/status.json"],
    ] {
        let out = Command::new(brownout())
            .arg("run")
            .arg(&file)
            .arg("--no-store")
            .args(&args)
            .current_dir(dir.path())
            .output()
            .expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("/nonexistent/dir"), "{args:?}: {err}");
        assert!(err.contains("nothing was sent"), "{args:?}: {err}");
        assert!(
            !dir.path().join("rolled-back").exists(),
            "{args:?}: the experiment ran"
        );
    }
}

/// Issue 23 §1: the relay started in an environment marked production without a word.
#[test]
fn the_proxy_refuses_an_environment_marked_production() {
    let proxy = |env: Option<&str>, args: &[&str]| {
        let mut cmd = Command::new(brownout());
        cmd.args(["proxy", "stdio"])
            .args(args)
            .args(["--", brownout(), "fixture"])
            .env_remove("BROWNOUT_ENV")
            .stdin(std::process::Stdio::null());
        if let Some(e) = env {
            cmd.env("BROWNOUT_ENV", e);
        }
        let out = cmd.output().expect("proxy");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for (env, args) in [
        (Some("production"), vec![]),
        (None, vec!["--label", "env=prod"]),
        (None, vec!["--label", "cluster=prod-eu"]),
    ] {
        let (code, err) = proxy(env, &args);
        assert_ne!(code, Some(0), "{env:?} {args:?}: {err}");
        assert!(
            err.contains("marked production") && err.contains("--i-know-this-is-production"),
            "{env:?} {args:?}: {err}"
        );
    }
    // Overridden, it starts (and ends with its closed stdin), saying why on stderr.
    let (code, err) = proxy(Some("production"), &["--i-know-this-is-production"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("starting anyway"), "{err}");
    let (code, err) = proxy(Some("staging"), &[]);
    assert_eq!(code, Some(0), "{err}");
}

/// Issue 23 §2: a 3-second run drawn second by second put the error rise inside the
/// baseline's band; the series' spans follow the run's length now.
#[test]
fn a_short_runs_series_is_finer_than_a_second() {
    let dir = common::tmp();
    let (code, j, out) = run_experiment(dir.path(), &Exp::fixture_green(), &["--no-store"]);
    assert_eq!(code, 0, "{out}");
    let series = j["series"].as_array().cloned().unwrap_or_default();
    assert!(series.len() > 10, "{} spans: {out}", series.len());
    for s in &series {
        assert_eq!(s["width_ms"], 100.0, "{s}");
    }
    let calls: u64 = series
        .iter()
        .filter_map(|s| s["slis"]["calls"].as_u64())
        .sum();
    assert!(calls > 0, "{j:#}");
}
