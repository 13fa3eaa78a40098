//! `brownout run` and `brownout experiment`: guardrails that send the target nothing,
//! files checked with FILE:LINE:COL, the journal's schema.

mod common;
#[path = "experiment_support/mod.rs"]
mod support;

use common::brownout;
use std::process::Command;
use support::*;

#[test]
fn the_committed_journal_schema_is_the_generated_one() {
    let out = Command::new(brownout())
        .args(["experiment", "journal-schema"])
        .output()
        .expect("run");
    let generated: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let committed: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(common::repo().join("docs/journal.schema.json")).expect("read"),
    )
    .expect("json");
    assert_eq!(
        generated, committed,
        "regenerate: brownout experiment journal-schema > docs/journal.schema.json"
    );
}

#[test]
fn a_bad_experiment_is_reported_with_file_line_column_and_key() {
    let dir = common::tmp();
    let text = experiment_yaml(&Exp {
        extra: "retries: 3\n",
        ..Exp::fixture_green()
    });
    let file = write(dir.path(), &text);
    let out = Command::new(brownout())
        .args(["experiment", "check", &file])
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let line = text
        .lines()
        .position(|l| l.starts_with("retries"))
        .expect("line")
        + 1;
    assert!(err.contains(&format!("exp.yaml:{line}:1")), "{err}");
    assert!(err.contains("retries"), "{err}");
    // A gate that does not parse and a fault with a typo are located too.
    let text = experiment_yaml(&Exp {
        gates: "[\"error_rate < 1% over ten seconds\"]",
        faults: "[{kind: error, tools: [\"search_*\"], probabilty: 0.5}]",
        ..Exp::fixture_green()
    });
    let file = write(dir.path(), &text);
    let out = Command::new(brownout())
        .args(["run", &file])
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("`gates[0]`"), "{err}");
    assert!(err.contains("probabilty"), "{err}");
    let gates_line = text
        .lines()
        .position(|l| l.starts_with("gates"))
        .expect("l")
        + 1;
    assert!(err.contains(&format!("exp.yaml:{gates_line}:")), "{err}");
}

/// A refused experiment: exit 3, the rule named, journaled as `refused`, and the target
/// never started (its command would create a file) nor reached (a URL target's listener
/// sees no connection).
#[test]
fn production_labels_and_missing_gates_are_refused_with_nothing_sent() {
    let dir = common::tmp();
    let started = dir.path().join("started");
    let command = format!(
        "[sh, -c, \"touch {} && exec {} fixture\"]",
        started.display(),
        brownout()
    );
    for (labels, gates, rule) in [
        (
            "{env: prod, service: incidents}",
            "[\"error_rate < 1% over 2s\"]",
            "production_labels",
        ),
        ("{env: staging}", "[]", "numeric_gate"),
    ] {
        let e = Exp {
            labels,
            gates,
            target: &format!("{{command: {command}}}"),
            ..Exp::fixture_green()
        };
        let (code, j, err) = run_experiment(dir.path(), &e, &[]);
        assert_eq!(code, 3, "{err}");
        assert_eq!(j["status"], "refused");
        assert_eq!(j["refusal"]["rule"], rule, "{j}");
        assert!(err.is_empty() || !err.contains("panicked"), "{err}");
        assert!(!started.exists(), "the target's command ran");
        valid_journal(&j);
    }
    // A URL target: the listener is never connected to.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    let e = Exp {
        labels: "{cluster: prod-eu-1}",
        target: &format!("{{url: \"{url}\"}}"),
        ..Exp::fixture_green()
    };
    let (code, j, out) = run_experiment(dir.path(), &e, &[]);
    assert_eq!(code, 3, "{out}");
    assert!(
        j["reason"]
            .as_str()
            .unwrap_or("")
            .contains("cluster: prod-eu-1"),
        "{j}"
    );
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the target was contacted"
    );
}

#[test]
fn a_stage_that_skips_a_rung_is_refused_and_a_policy_file_can_allow_it() {
    let dir = common::tmp();
    let e = Exp {
        method:
            "[{stage: a, duration: 1s, sessions: 10%}, {stage: b, duration: 1s, sessions: 50%}]",
        ..Exp::fixture_green()
    };
    let (code, j, _) = run_experiment(dir.path(), &e, &["--dry-run"]);
    assert_eq!(code, 3);
    assert_eq!(j["refusal"]["rule"], "ladder");
    assert!(
        j["refusal"]["detail"]
            .as_str()
            .unwrap_or("")
            .contains("10% to 50%"),
        "{j}"
    );
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, "ladder: [\"10%\", \"50%\", \"100%\"]\n").expect("write");
    let (code, j, out) = run_experiment(
        dir.path(),
        &e,
        &["--dry-run", "--policy", &policy.display().to_string()],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(j["dry_run"], true);
    valid_journal(&j);
}

/// The load is live: its workload needs no simulated `servers:` (a workload that has them
/// runs in `brownout sim` too, but one written for live load alone must not be refused).
#[test]
fn a_workload_without_simulated_servers_is_accepted() {
    let dir = common::tmp();
    std::fs::write(
        dir.path().join("live.yaml"),
        "arrival: {mode: closed, concurrency: 2}\nsteps:\n  - calls: [{tool: echo, arguments: {message: hi}}]\n",
    )
    .expect("write");
    let text =
        "title: live workload\nlabels: {env: test}\ntarget: {command: [brownout, fixture]}\n\
load: {workload: live.yaml, sessions: 2}\nbaseline: 1s\n\
method:\n  - {stage: a, duration: 1s, sessions: 10%}\n\
faults:\n  - {kind: error, tools: [echo], probability: 0.1}\n\
gates:\n  - error_rate < 50% over 1s\n";
    let file = dir.path().join("exp.yaml");
    std::fs::write(&file, text).expect("write");
    let out = Command::new(brownout())
        .args(["experiment", "check"])
        .arg(&file)
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("servers"), "{err}");
}

/// A rollback naming `brownout` runs this brownout (as a target's command does), even
/// where brownout is not on PATH; and an inline workload needs no file.
#[test]
fn a_rollback_naming_brownout_runs_this_executable_and_workloads_can_be_inline() {
    let dir = common::tmp();
    let e = Exp {
        target: "{command: [brownout, fixture]}",
        rollbacks: "[{command: [brownout, plan, kinds]}]",
        ..Exp::fixture_green()
    };
    let text = experiment_yaml(&e).replace(
        "workload: workload.yaml",
        "workload: {arrival: {mode: closed, concurrency: 4}, steps: [{calls: [{tool: search_incidents, arguments: {query: db}}]}]}",
    );
    assert!(
        text.contains("workload: {arrival"),
        "the workload is inline: {text}"
    );
    let file = write(dir.path(), &text);
    let journal = dir.path().join("j.json");
    let out = Command::new(brownout())
        .arg("run")
        .arg(&file)
        .arg("--journal")
        .arg(&journal)
        .arg("--no-store")
        .env("PATH", "/usr/bin:/bin")
        .current_dir(dir.path())
        .output()
        .expect("run");
    let log = String::from_utf8_lossy(&out.stderr);
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&journal).expect("journal")).expect("json");
    assert_eq!(out.status.code(), Some(0), "{log}\n{j:#}");
    let rb = j["rollbacks"]
        .as_array()
        .and_then(|r| {
            r.iter()
                .find(|r| r["action"].as_str().unwrap_or("").contains("plan kinds"))
        })
        .cloned()
        .expect("the rollback ran");
    assert_eq!(rb["ok"], true, "{rb:#}");
}

#[test]
fn faults_that_change_results_without_a_gate_that_sees_it_are_warned_about_or_refused() {
    let dir = common::tmp();
    let blind = experiment_yaml(&Exp {
        faults: "[{id: wrong, kind: corrupt, tools: [get_incident], path: /service}]",
        ..Exp::fixture_green()
    });
    let file = write(dir.path(), &blind);
    let out = Command::new(brownout())
        .args(["experiment", "check", &file])
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "a warning, not an error: {err}");
    assert!(
        err.contains("warning") && err.contains("`wrong` (corrupt)") && err.contains("silent_rate"),
        "{err}"
    );
    // With a gate that sees it: no warning.
    let seen = experiment_yaml(&Exp {
        faults: "[{id: wrong, kind: corrupt, tools: [get_incident], path: /service}]",
        gates: "[\"error_rate < 5% over 2s\", \"silent_rate < 1% over 2s\"]",
        ..Exp::fixture_green()
    });
    let file = write(dir.path(), &seen);
    let out = Command::new(brownout())
        .args(["experiment", "check", &file])
        .output()
        .expect("run");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));
    // An operator's policy that requires one refuses the blind experiment before any fault.
    let file = write(dir.path(), &blind);
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, "require_silent_gate: true\n").expect("policy");
    let out = Command::new(brownout())
        .args(["run", &file, "--policy"])
        .arg(&policy)
        .arg("--journal")
        .arg(dir.path().join("j.json"))
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("j.json")).unwrap_or_default(),
    )
    .unwrap_or_default();
    assert_eq!(j["refusal"]["rule"], "require_silent_gate", "{j}");
}
