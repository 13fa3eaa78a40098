//! A fleet with a relay that is slow, cut off, lying or flooding (review of issue 21 §1):
//! one such relay holds up neither the others, nor the stage's clock, nor the removal; an
//! answer is believed only when it names what was asked; an answer is read up to 1 MiB;
//! a relay cut off mid-stage and back is journaled; credentials in a fleet's URLs are
//! never shown. Loopback relays and a hostile stand-in (fleet_support/hostile.rs).

mod common;
#[path = "fleet_support/hostile.rs"]
mod hostile;
#[path = "experiment_support/mod.rs"]
mod support;

use common::brownout;
use hostile::Mode;
use serde_json::Value;
use std::process::Command;
use std::time::{Duration, Instant};
use support::*;

use common::http::relay_with_admin as relay;

/// Every search fails while the fault is on; the gate holds whatever happens.
fn experiment<'a>(target: &'a str, stage: &'a str) -> Exp<'a> {
    Exp {
        target,
        baseline: "500ms",
        method: stage,
        faults: "[{id: search-down, kind: error, tools: [\"search_*\"], probability: 1.0}]",
        gates: "[\"p99 < 10s over 2s\"]",
        probes: "[]",
        ..Exp::fixture_green()
    }
}

fn run(dir: &std::path::Path, e: &Exp) -> (i32, Value, String) {
    let policy = dir.join("policy.yaml");
    std::fs::write(&policy, "ladder: [\"100%\"]\n").expect("policy");
    run_experiment(
        dir,
        e,
        &["--no-store", "--policy", &policy.display().to_string()],
    )
}

fn record<'a>(j: &'a Value, admin: &str) -> &'a Value {
    j["fleet"]
        .as_array()
        .and_then(|f| f.iter().find(|r| r["admin"] == admin))
        .unwrap_or_else(|| panic!("no record of {admin}: {j:#}"))
}

/// F26/F2/F24: a relay that takes requests and never answers held the stage's start for
/// its POST's 10 s timeout, then failed the run ("cannot apply the faults"); the removal
/// waited for renewal rounds stuck on it. Now the stage starts on the relay that answered,
/// on time, and the silent one is journaled.
#[test]
fn a_silent_relay_holds_up_neither_the_stage_nor_the_other_relay() {
    let (_g, url, admin) = relay();
    let silent = hostile::start(Mode::Silent);
    let dir = common::tmp();
    let target = format!(
        "{{fleet: [{{url: \"{url}\", admin: \"{admin}\"}}, {{url: \"{url}\", admin: \"{}\"}}]}}",
        silent.url
    );
    let e = experiment(&target, "[{stage: all, duration: 3s, sessions: 100%}]");
    let began = Instant::now();
    let (_code, j, out) = run(dir.path(), &e);
    let wall = began.elapsed();
    valid_journal(&j);
    let stage = &j["stages"][0];
    assert_eq!(stage["completed"], true, "{out}\n{j:#}");
    let (start, end) = (
        stage["start_ms"].as_f64().expect("start"),
        stage["end_ms"].as_f64().expect("end"),
    );
    // Generous bounds on a busy machine; before, the stage did not run at all (and would
    // have started ≥ 10 s late).
    assert!(
        end - start < 3000.0 + 5000.0,
        "stage of 3 s lasted {} ms",
        end - start
    );
    let good = record(&j, &admin);
    let on = good["faults_on_ms"]
        .as_f64()
        .expect("the good relay took its faults");
    assert!(
        on - start < 5000.0,
        "faults on {} ms after the stage began",
        on - start
    );
    assert!(good["removed_ms"].is_number(), "{good}");
    assert!(good["stages"][0] == "all", "{good}");
    let bad = record(&j, &silent.url);
    assert!(bad["stages"].as_array().is_some_and(Vec::is_empty), "{bad}");
    let outages = bad["outages"]
        .as_array()
        .expect("the silent relay's outage");
    assert!(
        !outages.is_empty() && outages[0]["back_ms"].is_null(),
        "{bad}"
    );
    assert!(bad["unreachable_since_ms"].is_number(), "{bad}");
    assert!(
        wall < Duration::from_secs(60),
        "the run took {wall:?} (before: minutes)"
    );
}

/// F20: an admin API answering 200 with bytes that are not a relay's answer was believed:
/// no fault ever went on, and the run "Completed — every gate holding". Now the faults are
/// not confirmed on, and the run says so instead of claiming the stage.
#[test]
fn an_admin_answering_garbage_is_not_believed() {
    let (_g, url, _) = relay();
    let garbage = hostile::start(Mode::Garbage);
    let dir = common::tmp();
    let target = format!(
        "{{fleet: [{{url: \"{url}\", admin: \"{}\"}}]}}",
        garbage.url
    );
    let e = experiment(&target, "[{stage: all, duration: 1s, sessions: 100%}]");
    let (code, j, out) = run(dir.path(), &e);
    assert_ne!(code, 0, "{out}");
    assert_ne!(j["status"], "completed", "{out}\n{j:#}");
    let reason = j["reason"].as_str().unwrap_or("");
    assert!(
        reason.contains("cannot apply the faults") && reason.contains("does not name it"),
        "{reason}"
    );
    assert!(
        j["stages"]
            .as_array()
            .is_none_or(|s| s.iter().all(|s| s["completed"] != true)),
        "{j:#}"
    );
}

/// F1: an answer was read whole, however big (the runner reached 2 GB). Now the pre-run
/// check and `faults list --fleet` stop after 1 MiB: the flood's writer sees the client
/// leave after a few MiB (the kernel's buffers), not hundreds.
#[test]
fn a_flooding_admin_answer_is_not_read_past_its_cap() {
    let (_g, url, admin) = relay();
    let flood = hostile::start(Mode::Huge);
    let out = Command::new(brownout())
        .args(["faults", "list", "--fleet"])
        .arg(format!("{admin},{}", flood.url))
        .output()
        .expect("faults list");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("NOT REACHED") && text.contains("bytes"),
        "{text}"
    );
    let after_list = flood.written();
    assert!(
        after_list < 64 << 20,
        "{after_list} bytes taken by `faults list`"
    );

    let dir = common::tmp();
    let target = format!(
        "{{fleet: [{{url: \"{url}\", admin: \"{admin}\"}}, {{url: \"{url}\", admin: \"{}\"}}]}}",
        flood.url
    );
    let e = experiment(&target, "[{stage: all, duration: 1s, sessions: 100%}]");
    let (code, j, out) = run(dir.path(), &e);
    assert_ne!(code, 0, "{out}");
    assert!(
        j["reason"].as_str().unwrap_or("").contains(&flood.url),
        "{out}\n{j:#}"
    );
    let by_run = flood.written() - after_list;
    assert!(by_run < 64 << 20, "{by_run} bytes taken by the runner");
}

/// F11: a fleet URL's `user:pass@` was echoed on stderr and written to the journal.
#[test]
fn credentials_in_fleet_urls_are_never_shown() {
    let port = common::http::free_port();
    let dir = common::tmp();
    let target = format!(
        "{{fleet: [{{url: \"http://bob:pw2secret@127.0.0.1:{port}/mcp\", admin: \"http://alice:hunter2@127.0.0.1:{port}\"}}]}}"
    );
    let e = experiment(&target, "[{stage: all, duration: 1s, sessions: 100%}]");
    let (code, j, out) = run(dir.path(), &e);
    assert_ne!(code, 0, "{out}");
    let journal = j.to_string();
    for secret in ["hunter2", "pw2secret"] {
        assert!(!out.contains(secret), "{secret} shown: {out}");
        assert!(!journal.contains(secret), "{secret} journaled: {journal}");
    }
    assert!(journal.contains("***@127.0.0.1"), "{journal}");
    let list = Command::new(brownout())
        .args(["faults", "list", "--fleet"])
        .arg(format!("http://user:pass1word@127.0.0.1:{port}"))
        .output()
        .expect("faults list");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&list.stdout),
        String::from_utf8_lossy(&list.stderr)
    );
    assert!(!text.contains("pass1word"), "{text}");
}

/// F9/F3: a relay cut off mid-stage (SIGSTOP, longer than a lease) and back left no trace:
/// the journal said it carried the stage. Now its outage (since its last lease, back at)
/// is journaled, and a fault that lapsed meanwhile and was put back is listed.
#[test]
fn a_relay_cut_off_mid_stage_and_back_is_journaled() {
    let (_g1, url, admin) = relay();
    let (g2, _, cut_admin) = relay();
    let dir = common::tmp();
    let target = format!(
        "{{fleet: [{{url: \"{url}\", admin: \"{admin}\"}}, {{url: \"{url}\", admin: \"{cut_admin}\"}}]}}"
    );
    let e = experiment(&target, "[{stage: all, duration: 9s, sessions: 100%}]");
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, "ladder: [\"100%\"]\n").expect("policy");
    let mut child = spawn_run(
        dir.path(),
        &e,
        &["--no-store", "--policy", &policy.display().to_string()],
    );
    let until = Instant::now() + Duration::from_secs(60);
    while remote_faults(&cut_admin).is_empty() {
        assert!(Instant::now() < until, "the faults never went on");
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = nix::unistd::Pid::from_raw(g2.pid());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).expect("stop");
    // The cut itself: longer than one lease (3 s), so the relay's fault lapses.
    std::thread::sleep(Duration::from_millis(4500));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).expect("cont");
    wait_exit(&mut child, 90);
    let j = journal(dir.path());
    valid_journal(&j);
    let cut = record(&j, &cut_admin);
    let outages = cut["outages"].as_array().expect("an outage journaled");
    let o = &outages[0];
    let (since, lapse, back) = (
        o["since_ms"].as_f64().expect("since"),
        o["lapse_by_ms"].as_f64().expect("lapse"),
        o["back_ms"].as_f64().expect("back before the end"),
    );
    assert!((lapse - since - 3000.0).abs() < 1.0, "{cut}");
    assert!(back > since, "{cut}");
    if g2.stderr_text().contains("expired") {
        let lapses = cut["lapses"].as_array().expect("the lapse journaled");
        assert!(
            lapses[0]["fault"]
                .as_str()
                .is_some_and(|f| f.starts_with("search-down")),
            "{cut}"
        );
    }
    // The other relay carried the stage throughout (its own renewals may be slow on a
    // busy machine: that is journaled too, so not asserted here).
    assert_eq!(
        record(&j, &admin)["stages"],
        serde_json::json!(["all"]),
        "{j:#}"
    );
}

/// F10: a relay that answered 401 to `faults list --fleet` was "NOT REACHED" with exit 2;
/// it was reached and refused the token: exit 1, as for one relay.
#[test]
fn a_fleet_relay_refusing_the_token_is_refused_not_unreached() {
    let (g, _) = common::http::brownout_http(&[
        "--admin",
        "127.0.0.1:0",
        "--admin-token",
        "right-token",
        "--",
        brownout(),
        "fixture",
    ]);
    let admin = common::http::admin_url(&g);
    let out = Command::new(brownout())
        .args([
            "faults",
            "list",
            "--fleet",
            &admin,
            "--token",
            "wrong-token",
        ])
        .env_remove("BROWNOUT_ADMIN_TOKEN")
        .output()
        .expect("faults list");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("REFUSED") && !text.contains("NOT REACHED"),
        "{text}"
    );
    assert!(
        text.contains("1 relay, 0 faults, 1 refused the token"),
        "{text}"
    );
}

/// F25: one relay listed under two spellings passed and failed mid-run with 409 (the
/// faults already on from the first spelling). Now the run refuses before any fault.
#[test]
fn one_relay_under_two_spellings_is_refused_before_any_fault() {
    let (_g, url, admin) = relay();
    let port = admin.rsplit(':').next().expect("port");
    let dir = common::tmp();
    let target = format!(
        "{{fleet: [{{url: \"{url}\", admin: \"{admin}\"}}, {{url: \"{url}\", admin: \"http://LOCALHOST:{port}/\"}}]}}"
    );
    let e = experiment(&target, "[{stage: all, duration: 1s, sessions: 100%}]");
    let (code, j, out) = run(dir.path(), &e);
    assert_ne!(code, 0, "{out}");
    let reason = j["reason"].as_str().unwrap_or("");
    assert!(reason.contains("are one relay"), "{out}\n{reason}");
    assert!(j["stages"].as_array().is_none_or(Vec::is_empty), "{j:#}");
    assert!(remote_faults(&admin).is_empty());
}

/// F12: `every: 1ms` re-resolved the name a thousand times a second and `every: 0s` was
/// silently 2 s; both are refused by `experiment check` now.
#[test]
fn a_dns_fleet_resolved_too_often_is_refused() {
    let dir = common::tmp();
    for every in ["1ms", "0s"] {
        let target = format!(
            "{{fleet: {{dns: localhost, admin_port: 9901, mcp_port: 8900, every: {every}}}}}"
        );
        let e = experiment(&target, "[{stage: all, duration: 1s, sessions: 100%}]");
        let file = write(dir.path(), &experiment_yaml(&e));
        let out = Command::new(brownout())
            .args(["experiment", "check", &file])
            .output()
            .expect("experiment check");
        let text = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "every: {every}: {text}");
        assert!(
            text.contains("every") && text.contains("at least 100 ms"),
            "{text}"
        );
    }
}
