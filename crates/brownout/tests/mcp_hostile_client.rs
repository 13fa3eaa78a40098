//! `brownout mcp` against a hostile client (the official Python SDK's client,
//! peers/python/hostile.py): it approves its own runs through elicitation ("Totally A
//! Human"), rewrites a plan file after the person approved the experiment naming it, reuses
//! a code with another seed, names a server secret as the admin token, hides a command line
//! in one argument, sends arguments no tool declares — and a server started with an empty
//! token. Each attack is refused, and a control shows the honest path still works.

mod common;
#[path = "mcp_support/mod.rs"]
mod support;

use common::*;
use serde_json::{json, Value};
use std::process::Command;
use std::time::{Duration, Instant};
use support::*;

/// Run the hostile agent's script over stdio against `server`.
fn hostile_stdio(script: &Value, server: &[String], extra: &[&str]) -> Value {
    let mut cmd = Command::new(python());
    cmd.arg(repo().join("peers/python/hostile.py"))
        .arg("--script")
        .arg(script.to_string())
        .args(extra)
        .arg("--")
        .args(server);
    run_agent(cmd)
}

/// Run the hostile agent's script over streamable HTTP.
fn hostile_http(script: &Value, url: &str, extra: &[&str]) -> Value {
    let mut cmd = Command::new(python());
    cmd.arg(repo().join("peers/python/hostile.py"))
        .arg("--script")
        .arg(script.to_string())
        .arg("--url")
        .arg(url)
        .args(extra);
    run_agent(cmd)
}

/// The experiment of the live tests with its faults in a file of the working directory.
fn with_faults_file(r: &Remote, title: &str) -> String {
    let x = light(r, title);
    let inline =
        "faults:\n  - {id: search-slow, kind: latency, tools: [search_incidents], added_ms: 20}\n";
    assert!(x.contains(inline), "{x}");
    x.replace(inline, "faults: faults-swap.yaml\n")
}

fn light(r: &Remote, title: &str) -> String {
    experiment(
        title,
        &remote_target(r),
        "{env: staging}",
        &["10%"],
        "[\"error_rate < 50% over 2s\"]",
        60,
    )
}

fn decision(doc: &Value, i: usize) -> (String, String, String) {
    let v = sc(doc, i);
    let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
    (s("decision"), s("rule"), s("detail"))
}

fn started_count(env: &Env) -> usize {
    env.audit_entries()
        .iter()
        .filter(|e| e["decision"] == "started")
        .count()
}

/// Over HTTP the default approval is the operator's code: a client declaring elicitation
/// is never sent the form and cannot approve its own run, on 2025-11-25 or 2026-07-28.
/// Only `--approval elicitation` (warned at start) lets it — the control that the hostile
/// client's form answer would have worked.
#[test]
fn self_approval_by_elicitation_over_http_is_refused_by_default() {
    let env = Env::new();
    let r = remote();
    let (_g, url) = http_server(&env, &["--allow-run"]);
    for mode in ["legacy", "2026-07-28"] {
        let x = light(&r, &format!("self approval {mode}"));
        let script = json!([call("start_experiment", json!({"experiment": x}))]);
        let doc = hostile_http(&script, &url, &["--mode", mode, "--elicit", "accept"]);
        let (d, rule, _) = decision(&doc, 0);
        assert_eq!(
            (d.as_str(), rule.as_str()),
            ("approval_required", "approval"),
            "{mode}: {doc:#}"
        );
        assert_eq!(doc["elicitations"], 0, "{mode}: a form was sent: {doc:#}");
    }
    assert_eq!(r.tool_calls(), 0, "nothing may reach the target");
    assert!(r.faults().is_empty());
    let audit = std::fs::read_to_string(env.audit()).unwrap_or_default();
    assert!(!audit.contains("Totally A Human"), "{audit}");
    assert_eq!(started_count(&env), 0);

    // The operator's explicit choice: warned, and then the form does approve.
    let env = Env::new();
    let (g, url) = http_server(&env, &["--allow-run", "--approval", "elicitation"]);
    assert!(g.stderr_text().contains("WARNING"), "{}", g.stderr_text());
    let x = light(&r, "elicitation over http, chosen");
    let script = json!([
        call("start_experiment", json!({"experiment": x})),
        call("stop_all", json!({})),
    ]);
    let doc = hostile_http(&script, &url, &["--elicit", "accept"]);
    assert_eq!(decision(&doc, 0).0, "started", "{doc:#}");
    assert_eq!(doc["elicitations"], 1);
    assert!(r.wait_clean());
}

/// The person approves an experiment whose faults are in `faults-swap.yaml` (1 ms of
/// latency on 1 % of calls); the agent rewrites the file to `error` on every tool at 100 %
/// and starts with the code: refused, naming the file, the code withdrawn, nothing run.
/// The approver saw the resolved faults (the file's, not its name); asking again shows the
/// new faults, and that approval starts the run.
#[test]
fn an_approval_does_not_survive_a_rewritten_plan_file() {
    let env = Env::new();
    let r = remote();
    let work = tmp();
    let plan = work.path().join("faults-swap.yaml");
    std::fs::write(
        &plan,
        "faults:\n  - {id: swap, kind: latency, added_ms: 1, probability: 0.01}\n",
    )
    .expect("write the plan");
    let x = with_faults_file(&r, "rewritten plan");
    let approvals = path_of(&env.approvals());
    let script = json!([
        call("start_experiment", json!({"experiment": x})),
        {"op": "read_code", "file": approvals},
        {"op": "write_file", "path": path_of(&plan),
         "text": "faults:\n  - {id: swap, kind: error, tools: [\"*\"], probability: 1}\n"},
        call("start_experiment", json!({"experiment": x, "approval_code": "$code"})),
        call("start_experiment", json!({"experiment": x, "approval_code": "$code"})),
        call("start_experiment", json!({"experiment": x})),
        {"op": "read_code", "file": approvals},
        call("start_experiment", json!({"experiment": x, "approval_code": "$code"})),
        call("stop_all", json!({})),
    ]);
    let doc = hostile_stdio(
        &script,
        &env.server(&["--allow-run", "--workdir", &path_of(work.path())]),
        &[],
    );
    assert_eq!(decision(&doc, 0).0, "approval_required", "{doc:#}");
    let (d, rule, detail) = decision(&doc, 3);
    assert_eq!(
        (d.as_str(), rule.as_str()),
        ("refused", "approval"),
        "{doc:#}"
    );
    assert!(
        detail.contains("faults-swap.yaml"),
        "names the file: {detail}"
    );
    let (d, _, detail) = decision(&doc, 4);
    assert_eq!(d, "refused", "the code was withdrawn: {detail}");
    assert_eq!(decision(&doc, 5).0, "approval_required");
    assert_eq!(decision(&doc, 7).0, "started", "{doc:#}");
    assert_eq!(started_count(&env), 1, "only the re-approved run started");
    assert!(r.wait_clean());
    // What the operator was shown: the faults as resolved from the file, each time.
    let shown = std::fs::read_to_string(env.approvals()).expect("approvals");
    let lines: Vec<&str> = shown.lines().filter(|l| l.contains(" code ")).collect();
    assert_eq!(lines.len(), 2, "{shown}");
    assert!(
        lines[0].contains("latency")
            && lines[0].contains("0.01")
            && lines[0].contains("faults-swap.yaml"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains("\"error\"") && lines[1].contains("\"*\""),
        "{}",
        lines[1]
    );
}

/// A code is for one seed: the same text with another `seed` is a new approval.
#[test]
fn another_seed_needs_another_approval() {
    let env = Env::new();
    let r = remote();
    let x = light(&r, "seeded");
    let script = json!([
        call("start_experiment", json!({"experiment": x, "seed": 1})),
        {"op": "read_code", "file": path_of(&env.approvals())},
        call("start_experiment", json!({"experiment": x, "seed": 2, "approval_code": "$code"})),
        call("start_experiment", json!({"experiment": x, "approval_code": "$code"})),
        call("start_experiment", json!({"experiment": x, "seed": 1, "approval_code": "$code"})),
        call("stop_all", json!({})),
    ]);
    let doc = hostile_stdio(&script, &env.server(&["--allow-run"]), &[]);
    for i in [2, 3] {
        let (d, rule, detail) = decision(&doc, i);
        assert_eq!(
            (d.as_str(), rule.as_str()),
            ("refused", "approval"),
            "op {i}: {detail}"
        );
        assert!(detail.contains("seed"), "op {i}: {detail}");
    }
    assert_eq!(decision(&doc, 4).0, "started", "the seed approved: {doc:#}");
    assert_eq!(started_count(&env), 1);
    assert!(r.wait_clean());
    let shown = std::fs::read_to_string(env.approvals()).expect("approvals");
    assert!(shown.contains("seed: 1 (the call's)"), "{shown}");
}

/// Wait (60 s at most) for `brownout mcp` to exit; its code and stderr.
fn exit_of(mut cmd: Command) -> (Option<i32>, String) {
    let dir = tmp();
    let err = dir.path().join("stderr");
    let file = std::fs::File::create(&err).expect("stderr file");
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(file)
        .spawn()
        .expect("brownout mcp");
    let until = Instant::now() + Duration::from_secs(60);
    let code = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s.code();
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (code, std::fs::read_to_string(&err).unwrap_or_default())
}

/// An empty token would serve every request without authentication: refused at start with
/// exit code 2 — nothing listens, so no request is ever answered — whether given as
/// `--token ""` or as an empty BROWNOUT_MCP_TOKEN, beyond loopback or on it.
#[test]
fn an_empty_token_is_refused_at_start() {
    let env = Env::new();
    let cases: Vec<(Vec<&str>, Option<&str>)> = vec![
        (
            vec!["--http", "0.0.0.0:0", "--allow-remote", "--token", ""],
            None,
        ),
        (
            vec!["--http", "0.0.0.0:0", "--allow-remote", "--token", "  "],
            None,
        ),
        (vec!["--http", "0.0.0.0:0", "--allow-remote"], Some("")),
        (vec!["--http", "127.0.0.1:0", "--token", ""], None),
    ];
    for (args, var) in cases {
        let a = env.server(&args);
        let mut cmd = Command::new(&a[0]);
        cmd.args(&a[1..]).env_remove("BROWNOUT_MCP_TOKEN");
        if let Some(v) = var {
            cmd.env("BROWNOUT_MCP_TOKEN", v);
        }
        let (code, err) = exit_of(cmd);
        assert_eq!(code, Some(2), "{args:?} {var:?}: {err}");
        assert!(!err.contains("serving MCP"), "{args:?}: {err}");
        assert!(err.contains("token"), "a clear message: {err}");
    }
}

/// `target.admin_token_env` sends one of the server's environment variables to the admin
/// URL: through MCP refused unless the policy lists the variable (`mcp_admin_token_envs`).
#[test]
fn an_admin_token_variable_the_policy_does_not_list_is_refused() {
    let env = Env::new();
    let r = remote();
    let with_var = |var: &str| {
        let x = light(&r, "token thief");
        let t = remote_target(&r);
        let stolen = format!("{}, admin_token_env: {var}}}", &t[..t.len() - 1]);
        x.replace(&t, &stolen)
    };
    let x = with_var("HOME");
    let script = json!([
        call("start_experiment", json!({"experiment": x})),
        call("validate_experiment", json!({"experiment": x})),
    ]);
    let doc = hostile_stdio(&script, &env.server(&["--allow-run"]), &[]);
    let (d, rule, detail) = decision(&doc, 0);
    assert_eq!(
        (d.as_str(), rule.as_str()),
        ("refused", "mcp_admin_token_envs"),
        "{doc:#}"
    );
    assert!(detail.contains("HOME"), "{detail}");
    assert_eq!(
        sc(&doc, 1)["policy_check"]["rule"],
        "mcp_admin_token_envs",
        "{doc:#}"
    );
    // Listed by the operator: past the guardrails, to a person's approval.
    let policy = env.policy("mcp_admin_token_envs: [BROWNOUT_TEST_ADMIN_TOKEN]\n");
    let x = with_var("BROWNOUT_TEST_ADMIN_TOKEN");
    let script = json!([call("start_experiment", json!({"experiment": x}))]);
    let doc = hostile_stdio(
        &script,
        &env.server(&["--allow-run", "--policy", &policy]),
        &[],
    );
    assert_eq!(decision(&doc, 0).0, "approval_required", "{doc:#}");
    assert_eq!(
        r.tool_calls(),
        0,
        "a start only looks at the target (initialize, tools/list)"
    );
    assert_eq!(started_count(&env), 0);
    // A misspelt key is an error at start, not a policy silently without it.
    let policy = env.policy("mcp_admin_token_env: [X]\n");
    let a = env.server(&["--allow-run", "--policy", &policy]);
    let mut cmd = Command::new(&a[0]);
    cmd.args(&a[1..]);
    let (code, err) = exit_of(cmd);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("mcp_admin_token_env"), "{err}");
}

/// `mcp_commands` are matched argument by argument: `["brownout fixture", "x"]` is not the
/// command line `brownout fixture x`, for describe_target and start_experiment alike.
#[test]
fn a_command_line_hidden_in_one_argument_is_refused() {
    let env = Env::new();
    let mut x = light(&remote(), "one argument");
    let target_line = x
        .lines()
        .find(|l| l.starts_with("target:"))
        .expect("target")
        .to_string();
    x = x.replace(
        &target_line,
        "target: {command: [\"brownout fixture\", \"x\"]}",
    );
    let script = json!([
        call(
            "describe_target",
            json!({"target": {"command": ["brownout fixture", "x"]}})
        ),
        call("start_experiment", json!({"experiment": x})),
        call(
            "describe_target",
            json!({"target": {"command": ["brownout", "fixture"]}})
        ),
    ]);
    let doc = hostile_stdio(&script, &env.server(&["--allow-run"]), &[]);
    let r = &doc["ops"][0]["result"];
    assert_eq!(r["isError"], true, "{r:#}");
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("mcp_commands"),
        "{r:#}"
    );
    let (d, rule, _) = decision(&doc, 1);
    assert_eq!(
        (d.as_str(), rule.as_str()),
        ("refused", "mcp_commands"),
        "{doc:#}"
    );
    assert_eq!(
        sc(&doc, 2)["server"]["name"],
        "brownout-fixture",
        "the control"
    );
}

/// Every tool checks its arguments against its own input schema: an undeclared `form`, an
/// unknown key, a negative seed are InvalidParams naming the key — never answered as
/// something else.
#[test]
fn arguments_a_tool_does_not_declare_are_invalid_params() {
    let env = Env::new();
    let script = json!([
        call("get_run", json!({"run_id": "nope", "form": "xml"})),
        call("get_run", json!({"run_id": "nope", "formats": "journal"})),
        call("list_fault_kinds", json!({"verbose": true})),
        call(
            "start_experiment",
            json!({"experiment": "title: t", "priority": 1})
        ),
        call(
            "start_experiment",
            json!({"experiment": "title: t", "seed": -1})
        ),
        call("list_fault_kinds", json!({})),
    ]);
    let doc = hostile_stdio(&script, &env.server(&["--allow-run"]), &[]);
    for (i, key) in [
        (0, "form"),
        (1, "formats"),
        (2, "verbose"),
        (3, "priority"),
        (4, "seed"),
    ] {
        let op = &doc["ops"][i];
        assert_eq!(op["ok"], false, "op {i} was answered: {op:#}");
        assert_eq!(op["error"]["code"], -32602, "InvalidParams: {op:#}");
        let m = op["error"]["message"].as_str().unwrap_or_default();
        assert!(m.contains(&format!("`{key}`")), "op {i} names `{key}`: {m}");
    }
    assert!(sc(&doc, 5)["kinds"].is_array(), "the control");
}
