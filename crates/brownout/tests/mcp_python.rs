//! `brownout mcp` driven by the official Python SDK client (`mcp` on PyPI), over stdio and
//! streamable HTTP: the tools listed with and without --allow-run, every structuredContent
//! against its tool's outputSchema (the SDK checks too), designed experiments that validate,
//! guardrails that refuse with the rule named and nothing sent to the target, approved runs
//! seen live and stopped, and no fault left when the client goes or the lease lapses — all
//! seen from the target's side (a relay with an admin API) and in the audit log.

mod common;
#[path = "mcp_support/mod.rs"]
mod support;

use common::*;
use serde_json::{json, Value};
use support::*;

/// A light experiment against the remote relay: one 10 % stage of `secs`.
fn light(r: &Remote, title: &str, secs: u32) -> String {
    experiment(
        title,
        &remote_target(r),
        "{env: staging}",
        &["10%"],
        "[\"error_rate < 50% over 2s\"]",
        secs,
    )
}

/// The operator-code flow, then `rest`: ask (a code is printed on the operator's side),
/// read the code as the operator would, start with it (ops 0, 1, 2).
fn with_approval(env: &Env, x: &str, rest: Value) -> Value {
    let mut ops = vec![
        call("start_experiment", json!({"experiment": x})),
        json!({"op": "read_code", "file": path_of(&env.approvals())}),
        call(
            "start_experiment",
            json!({"experiment": x, "approval_code": "$code"}),
        ),
    ];
    ops.extend(rest.as_array().cloned().unwrap_or_default());
    Value::Array(ops)
}

fn names(doc: &Value, i: usize) -> Vec<String> {
    doc["ops"][i]["result"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(String::from))
        .collect()
}

#[test]
fn read_only_unless_allowed_and_every_result_matches_its_output_schema() {
    let env = Env::new();
    let plan = "seed: 1\nfaults:\n  - {kind: error, tools: [search_incidents], probability: 0.2}\n";
    let workload = std::fs::read_to_string(repo().join("examples/workloads/fixture-agent.yaml"))
        .expect("workload");
    let script = json!([
        {"op": "list_tools"},
        call("list_fault_kinds", json!({})),
        call("validate_plan", json!({"plan": plan})),
        call("validate_plan", json!({"plan": "faults:\n  - {kind: latncy, added_ms: 5}\n"})),
        call("simulate", json!({"plan": plan, "workload": workload, "gates": ["error_rate < 1% over 10s"], "tasks": 300})),
        call("get_policy", json!({})),
        call("list_runs", json!({})),
        call("query_runs", json!({"sql": "SELECT count(*) AS n FROM runs"})),
        call("trend", json!({})),
        call("recommend", json!({})),
        call("describe_target", json!({"target": {"command": ["brownout", "fixture"]}})),
        call("start_experiment", json!({"experiment": "title: x"})),
        {"op": "list_resources"},
        {"op": "read_resource", "uri": "brownout://fault-kinds"},
        call("describe_target", json!({"target": {"command": ["brownout", "run", "examples/experiments/green.yaml"]}})),
        call("validate_experiment", json!({"experiment": "title: t\nload: {workload: /etc/shadow}\n"})),
    ]);
    let doc = agent_stdio(&script, &env.server(&[]), &[]);
    let listed = names(&doc, 0);
    assert!(listed.contains(&"simulate".to_string()), "{listed:?}");
    for t in [
        "start_experiment",
        "stop_experiment",
        "stop_all",
        "get_experiment",
        "renew_lease",
    ] {
        assert!(
            !listed.contains(&t.to_string()),
            "{t} listed without --allow-run"
        );
    }
    let tools = doc["ops"][0]["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for t in &tools {
        let ro = t["annotations"]["readOnlyHint"].as_bool();
        assert_eq!(
            ro,
            Some(true),
            "{}: read-only without --allow-run",
            t["name"]
        );
        assert!(t["outputSchema"].is_object(), "{}", t["name"]);
    }
    let schema_of = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["outputSchema"].clone())
            .expect("tool")
    };
    for i in 1..=10 {
        let name = doc["ops"][i]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert_valid(&schema_of(&name), &sc(&doc, i), &name);
    }
    assert_eq!(sc(&doc, 2)["ok"], true);
    let bad = sc(&doc, 3);
    assert_eq!(bad["ok"], false);
    assert_eq!(bad["errors"][0]["line"], 2, "{bad}");
    assert!(
        bad["errors"][0]["message"]
            .as_str()
            .unwrap_or("")
            .contains("latency"),
        "a suggestion: {bad}"
    );
    assert_eq!(
        sc(&doc, 4)["breached"],
        true,
        "20 % errors breach a 1 % gate"
    );
    assert_eq!(sc(&doc, 5)["allow_run"], false);
    assert_eq!(sc(&doc, 7)["rows"][0][0], 0);
    let described = sc(&doc, 10);
    assert_eq!(described["server"]["name"], "brownout-fixture");
    let get_incident = described["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "get_incident"))
        .cloned()
        .expect("get_incident");
    assert!(get_incident["output_schema"].is_object(), "{get_incident}");
    assert!(described["tools_list_ms"]
        .as_f64()
        .is_some_and(|ms| ms >= 0.0));
    // A run tool called anyway is refused: it is off, not merely unlisted.
    assert_eq!(doc["ops"][11]["ok"], false, "{:#}", doc["ops"][11]);
    assert!(doc["ops"][11]["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("--allow-run"));
    // Only the command lines the policy lists: `brownout run` is not `brownout fixture`.
    let r = &doc["ops"][14]["result"];
    assert_eq!(r["isError"], true, "{r:#}");
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("mcp_commands"),
        "{r:#}"
    );
    // No file outside the working directory is read.
    let v = sc(&doc, 15);
    assert_eq!(
        (v["ok"].as_bool(), v["errors"][0]["key"].as_str()),
        (Some(false), Some("paths")),
        "{v:#}"
    );
    let kinds = doc["ops"][13]["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(kinds.contains("schema_drift"), "{kinds}");

    let doc = agent_stdio(
        &json!([{"op": "list_tools"}]),
        &env.server(&["--allow-run"]),
        &[],
    );
    let listed = names(&doc, 0);
    for t in [
        "start_experiment",
        "stop_experiment",
        "stop_all",
        "get_experiment",
        "renew_lease",
    ] {
        assert!(
            listed.contains(&t.to_string()),
            "{t} not listed with --allow-run: {listed:?}"
        );
    }
    let tools = doc["ops"][0]["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let start = tools
        .iter()
        .find(|t| t["name"] == "start_experiment")
        .expect("start");
    assert_eq!(start["annotations"]["destructiveHint"], true);
    assert_eq!(start["annotations"]["readOnlyHint"], false);
}

/// design_experiments against a server no one here wrote and the fixture: every proposal
/// passes validate_experiment, has a numeric gate and a simulated estimate.
#[test]
fn designed_experiments_validate_against_server_everything_and_the_fixture() {
    let env = Env::new();
    // The example policy as it is, plus this machine's server-everything command line.
    let example =
        std::fs::read_to_string(repo().join("examples/mcp/policy.yaml")).expect("example policy");
    let policy = env.policy(&example.replace(
        "  - \"npx -y @modelcontextprotocol/server-everything stdio\"",
        "  - \"npx -y @modelcontextprotocol/server-everything stdio\"\n  - \"*/node */peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio\"",
    ));
    assert!(
        std::fs::read_to_string(&policy)
            .unwrap_or_default()
            .contains("*/node"),
        "the example changed: update this test"
    );
    let everything = everything();
    for (target, expect_tool) in [
        (json!({"command": ["brownout", "fixture"]}), "get_incident"),
        (json!({"command": everything}), "echo"),
    ] {
        let script = json!([call(
            "design_experiments",
            json!({"target": target, "max": 6, "timeout_ms": 60000, "goal": format!("does the agent survive drift on {expect_tool}?")})
        )]);
        let doc = agent_stdio(&script, &env.server(&["--policy", &policy]), &[]);
        let out = sc(&doc, 0);
        let exps = out["experiments"].as_array().cloned().unwrap_or_default();
        assert_eq!(exps.len(), 3, "the schema_drift series: {out:#}");
        assert_eq!(out["matched"][0]["scenario"], "schema_drift", "{out:#}");
        assert_eq!(out["matched"][0]["words"][0], "drift", "{out:#}");
        assert_eq!(
            exps[0]["tool"], expect_tool,
            "the goal's tool first: {out:#}"
        );
        assert!(out["gameday"]
            .as_str()
            .is_some_and(|g| g.contains("schema-drift-3")));
        let checks: Vec<Value> = exps
            .iter()
            .map(|e| {
                call(
                    "validate_experiment",
                    json!({"experiment": e["experiment"]}),
                )
            })
            .collect();
        let doc = agent_stdio(
            &Value::Array(checks),
            &env.server(&["--policy", &policy]),
            &[],
        );
        for (i, e) in exps.iter().enumerate() {
            let v = sc(&doc, i);
            assert_eq!(v["ok"], true, "{}: {v:#}", e["title"]);
            // The first step is allowed now; the next climb the ladder once it passed.
            if i == 0 {
                assert_eq!(v["policy_check"]["allowed"], true, "{}: {v:#}", e["title"]);
            } else {
                assert_eq!(v["policy_check"]["rule"], "ladder_from_history", "{v:#}");
                assert_eq!(e["requires"], exps[i - 1]["id"], "{e:#}");
            }
            assert!(!v["gates"].as_array().is_none_or(Vec::is_empty));
            assert!(e["estimate"]["verdict"].is_string(), "{e:#}");
            assert_eq!(e["fault"], "schema_drift", "{e:#}");
        }
    }
}

/// design_experiments maps goals to scenarios by its vocabulary (the words that matched
/// returned), or takes them by name; each scenario's faults match it: pool and retries,
/// `process`, `rate_limit`, `corrupt` with gates that see wrong results. The input schema
/// lists the scenarios.
#[test]
fn design_maps_goals_and_named_scenarios_to_matching_faults() {
    let env = Env::new();
    let target = json!({"command": ["brownout", "fixture"]});
    let goals = [
        "pool exhaustion with retry storm",
        "the server gets killed",
        "rate limiting",
        "tools return subtly wrong data",
    ];
    let mut script = vec![json!({"op": "list_tools"})];
    for g in goals {
        script.push(call(
            "design_experiments",
            json!({"target": target, "goal": g}),
        ));
    }
    script.push(call(
        "design_experiments",
        json!({"target": target, "goal": "anything", "scenarios": ["registry_stale", "error_burst"]}),
    ));
    let doc = agent_stdio(&Value::Array(script), &env.server(&[]), &[]);
    let tools = doc["ops"][0]["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let design = tools
        .iter()
        .find(|t| t["name"] == "design_experiments")
        .expect("listed");
    let listed = design["inputSchema"]["properties"]["scenarios"]["items"]["enum"].to_string();
    for s in [
        "pool_exhaustion",
        "process_kill",
        "silent_corruption",
        "dependency_outage",
    ] {
        assert!(listed.contains(s), "{listed}");
    }
    let set = |v: &Value| -> Vec<String> {
        v["scenarios"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s["scenario"].as_str().map(String::from))
            .collect()
    };
    let faults = |v: &Value| -> String {
        v["experiments"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| e["experiment"].as_str().unwrap_or_default().to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let pool = sc(&doc, 1);
    assert_eq!(set(&pool), ["pool_exhaustion", "retry_storm"], "{pool:#}");
    assert_eq!(pool["matched"][0]["words"], json!(["pool", "exhaustion"]));
    assert_eq!(pool["matched"][1]["words"], json!(["retry", "storm"]));
    let text = faults(&pool);
    assert!(
        text.contains("connection pool exhausted") && text.contains("\"retries\""),
        "{text}"
    );
    assert!(
        text.contains("\"unbounded\": true") && text.contains("amplification"),
        "{text}"
    );
    let kill = sc(&doc, 2);
    assert_eq!(set(&kill), ["process_kill"], "{kill:#}");
    assert!(faults(&kill).contains("\"kind\": \"process\""));
    let rate = sc(&doc, 3);
    assert_eq!(set(&rate), ["rate_limit"], "{rate:#}");
    assert!(faults(&rate).contains("\"kind\": \"rate_limit\""));
    let wrong = sc(&doc, 4);
    assert_eq!(set(&wrong), ["silent_corruption"], "{wrong:#}");
    let text = faults(&wrong);
    assert!(
        text.contains("\"kind\": \"corrupt\"")
            && text.contains("correctness")
            && text.contains("silent_rate"),
        "{text}"
    );
    let named = sc(&doc, 5);
    assert_eq!(
        set(&named),
        ["registry_stale", "error_burst"],
        "in the order named: {named:#}"
    );
    assert_eq!(named["matched"], json!([]));
    for v in [&pool, &kill, &rate, &wrong, &named] {
        let exps = v["experiments"].as_array().cloned().unwrap_or_default();
        assert!(!exps.is_empty(), "{v:#}");
        for e in exps {
            assert_eq!(e["valid"], true, "{e:#}");
            assert!(!e["experiment"]
                .as_str()
                .unwrap_or_default()
                .contains("restart_service"));
        }
    }
}

/// A run above the rung the store's history allows: refused outright; with `skip_ladder`
/// it waits for a person's approval (a wrong code refuses), and once approved it runs
/// and its journal names who approved the skip.
#[test]
fn a_skipped_rung_runs_only_with_a_persons_approval_recorded_in_the_journal() {
    let env = Env::new();
    let r = remote();
    let x = experiment(
        "skip a rung",
        &remote_target(&r),
        "{env: staging}",
        &["10%", "25%"],
        "[\"error_rate < 50% over 2s\"]",
        1,
    );
    let script = json!([
        call("start_experiment", json!({"experiment": x})),
        call("start_experiment", json!({"experiment": x, "skip_ladder": true})),
        call("start_experiment", json!({"experiment": x, "skip_ladder": true, "approval_code": "000-000-001"})),
        {"op": "read_code", "file": path_of(&env.approvals())},
        call("start_experiment", json!({"experiment": x, "skip_ladder": true, "approval_code": "$code"})),
        {"op": "sleep", "seconds": 12},
        call("get_experiment", json!({"run_id": "$run_id"})),
    ]);
    let doc = agent_stdio(&script, &env.server(&["--allow-run"]), &[]);
    let refused = sc(&doc, 0);
    assert_eq!(refused["decision"], "refused", "{refused:#}");
    assert_eq!(refused["rule"], "ladder_from_history");
    assert!(refused["detail"]
        .as_str()
        .unwrap_or("")
        .contains("skip_ladder"));
    assert_eq!(
        sc(&doc, 1)["decision"],
        "approval_required",
        "{:#}",
        sc(&doc, 1)
    );
    assert_eq!(
        sc(&doc, 2)["decision"],
        "refused",
        "a wrong code: {:#}",
        sc(&doc, 2)
    );
    let started = sc(&doc, 4);
    assert_eq!(started["decision"], "started", "{started:#}");
    let printed = std::fs::read_to_string(env.approvals()).unwrap_or_default();
    assert!(printed.contains("SKIPS A RUNG OF THE LADDER"), "{printed}");
    let end = sc(&doc, 6);
    assert_eq!(end["state"], "ended", "{end:#}");
    let id = started["run_id"].as_str().unwrap_or_default().to_string();
    let out = std::process::Command::new(brownout())
        .args(["journal", "--store"])
        .arg(env.store())
        .args(["show", &id, "--json"])
        .output()
        .expect("journal show");
    let j: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(
        j["ladder_skip"]["approved_by"],
        "operator (one-time code)",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(j["stages"].as_array().map_or(0, Vec::len), 2, "{j:#}");
    assert!(r.wait_clean());
    let started_audit = env
        .audit_entries()
        .into_iter()
        .find(|e| e["decision"] == "started")
        .expect("audited");
    assert!(started_audit["detail"]
        .as_str()
        .unwrap_or("")
        .contains("ladder rung skipped"));
}

/// Production labels, no numeric gate, a skipped rung, a rung above the history, a policy
/// passed by the agent, a wrong code, a program the policy does not allow: each refused with
/// its rule, nothing reaches the target, and the audit log has each decision.
#[test]
fn guardrails_refuse_with_the_rule_named_and_nothing_sent() {
    let env = Env::new();
    let r = remote();
    let t = remote_target(&r);
    let gate = "[\"error_rate < 50% over 2s\"]";
    let cases: Vec<(&str, String)> = vec![
        (
            "production_labels",
            experiment("prod", &t, "{env: production}", &["10%"], gate, 5),
        ),
        (
            "numeric_gate",
            experiment("no gate", &t, "{env: staging}", &["10%"], "[]", 5),
        ),
        (
            "ladder",
            experiment("skip", &t, "{env: staging}", &["10%", "50%"], gate, 5),
        ),
        (
            "ladder_from_history",
            experiment("new", &t, "{env: staging}", &["10%", "25%"], gate, 5),
        ),
        (
            "mcp_commands",
            experiment(
                "cmd",
                "{command: [sh, -c, \"echo pwned\"]}",
                "{env: staging}",
                &["10%"],
                gate,
                5,
            ),
        ),
        (
            "mcp_commands",
            experiment(
                "brownout as a shell",
                "{command: [brownout, proxy, stdio, --, sh, -c, id]}",
                "{env: staging}",
                &["10%"],
                gate,
                5,
            ),
        ),
        (
            "mcp_urls",
            experiment(
                "elsewhere",
                "{url: \"http://10.1.2.3:80/mcp\"}",
                "{env: staging}",
                &["10%"],
                gate,
                5,
            ),
        ),
        (
            "paths",
            experiment("abs", &t, "{env: staging}", &["10%"], gate, 5).replace(
                "  workload:\n    name: test agent\n",
                "  workload: /etc/passwd\n  x:\n    name: test agent\n",
            ),
        ),
        (
            // In the server's current directory, not in its --workdir: not read.
            "paths",
            experiment("cwd", &t, "{env: staging}", &["10%"], gate, 5).replace(
                "  workload:\n    name: test agent\n",
                "  workload: Cargo.toml\n  x:\n    name: test agent\n",
            ),
        ),
        (
            // User `127.0.0.1`, host 192.0.2.2: matched as the host it reaches.
            "mcp_urls",
            experiment(
                "userinfo",
                "{url: \"http://127.0.0.1:1@192.0.2.2:8999/mcp\"}",
                "{env: staging}",
                &["10%"],
                gate,
                5,
            ),
        ),
        (
            "mcp_urls",
            experiment("webhook", &t, "{env: staging}", &["10%"], gate, 5).replace(
                "baseline: 500ms\n",
                "baseline: 500ms\nsteady_state:\n  - {probe: mcp, call: {tool: echo, arguments: {message: x}}, during: true, webhook: \"http://192.0.2.7/hook\"}\n",
            ),
        ),
    ];
    let mut script: Vec<Value> = cases
        .iter()
        .map(|(_, x)| call("start_experiment", json!({"experiment": x})))
        .collect();
    let ok = experiment("fine", &t, "{env: staging}", &["10%"], gate, 5);
    script.push(call(
        "start_experiment",
        json!({"experiment": ok, "policy": "/tmp/lax.yaml"}),
    ));
    script.push(call(
        "start_experiment",
        json!({"experiment": ok, "approval_code": "123-456-789"}),
    ));
    script.push(call("start_experiment", json!({"experiment": ok})));
    script.push(call(
        "start_experiment",
        json!({"experiment": ok, "approval_code": "000-000-001"}),
    ));
    let workdir = tmp();
    let doc = agent_stdio(
        &Value::Array(script),
        &env.server(&["--allow-run", "--workdir", &path_of(workdir.path())]),
        &[],
    );
    for (i, (rule, _)) in cases.iter().enumerate() {
        let v = sc(&doc, i);
        assert_eq!(v["decision"], "refused", "{rule}: {v:#}");
        assert_eq!(v["rule"], *rule, "{v:#}");
    }
    let n = cases.len();
    assert_eq!(sc(&doc, n)["rule"], "policy_fixed");
    let v = sc(&doc, n + 1);
    assert_eq!(
        (v["decision"].as_str(), v["rule"].as_str()),
        (Some("refused"), Some("approval")),
        "{v:#}"
    );
    assert_eq!(sc(&doc, n + 2)["decision"], "approval_required");
    let v = sc(&doc, n + 3);
    assert_eq!(v["rule"], "approval", "a wrong code: {v:#}");
    // Only start_experiment's read-only look at the target's tools (initialize, tools/list).
    assert_eq!(r.tool_calls(), 0, "no tool call may reach the target");
    assert!(r.faults().is_empty());
    let audit = env.audit_entries();
    let rules: Vec<&str> = audit.iter().filter_map(|e| e["rule"].as_str()).collect();
    for rule in [
        "production_labels",
        "numeric_gate",
        "ladder",
        "ladder_from_history",
        "mcp_commands",
        "mcp_urls",
        "paths",
        "policy_fixed",
        "approval",
    ] {
        assert!(rules.contains(&rule), "{rule} not audited: {audit:#?}");
    }
    let text = std::fs::read_to_string(env.audit()).unwrap_or_default();
    assert!(
        !text.contains("000-000-001") && !text.contains("123-456-789"),
        "codes are secrets"
    );
    assert!(audit
        .iter()
        .all(|e| e["session"].is_string() && e["at_unix_ms"].as_u64().is_some()));
}

/// An approved run (the operator's code) is visible live, holds faults on the target,
/// stops on stop_experiment (faults gone from the target's side), and the audit log has it.
#[test]
fn an_approved_run_is_live_and_stops_on_stop_experiment() {
    let env = Env::new();
    let r = remote();
    let x = light(&r, "approved", 60);
    let script = with_approval(
        &env,
        &x,
        json!([
            {"op": "sleep", "seconds": 4},
            call("get_experiment", json!({"run_id": "$run_id"})),
            call("renew_lease", json!({"run_id": "$run_id"})),
            call("stop_experiment", json!({"run_id": "$run_id"})),
            call("stop_experiment", json!({"run_id": "$run_id"})),
            {"op": "sleep", "seconds": 5},
            call("get_experiment", json!({"run_id": "$run_id"})),
        ]),
    );
    let server = env.server(&["--allow-run"]);
    let watcher = {
        let admin = r.admin.clone();
        std::thread::spawn(move || {
            // The faults as the target holds them while the run goes on.
            let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
            while std::time::Instant::now() < until {
                let probe = Remote::faults_at(&admin);
                if !probe.is_empty() {
                    return probe;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            Vec::new()
        })
    };
    let doc = agent_stdio(&script, &server, &[]);
    let seen = watcher.join().expect("watcher");
    assert!(
        seen.iter().any(|f| f.starts_with("search-slow")),
        "the target never held the fault: {seen:?}"
    );
    assert_eq!(sc(&doc, 0)["decision"], "approval_required");
    let started = sc(&doc, 2);
    assert_eq!(started["decision"], "started", "{started:#}");
    let live = sc(&doc, 4);
    assert_eq!(live["state"], "running", "{live:#}");
    assert_eq!(live["live"]["stage"], 1, "{live:#}");
    assert_eq!(live["live"]["share"], 0.1);
    assert!(
        live["live"]["gates"][0]["limit"].as_f64().is_some(),
        "{live:#}"
    );
    assert!(live["live"]["calls"].as_u64().unwrap_or(0) > 0);
    assert_eq!(sc(&doc, 5)["state"], "running");
    assert_eq!(sc(&doc, 6)["state"], "stopping");
    assert_eq!(sc(&doc, 7)["state"], "stopping", "idempotent");
    let end = sc(&doc, 9);
    assert_eq!(end["state"], "ended", "{end:#}");
    assert_eq!(end["status"], "interrupted", "{end:#}");
    assert!(
        r.wait_clean(),
        "a fault is left on the target: {:?}",
        r.faults()
    );
    assert!(r.calls() > 0, "the run's load reached the target");
    let decisions: Vec<String> = env
        .audit_entries()
        .iter()
        .filter_map(|e| e["decision"].as_str().map(String::from))
        .collect();
    for d in ["approval_required", "started", "renewed", "stopped"] {
        assert!(decisions.contains(&d.to_string()), "{d}: {decisions:?}");
    }
    // The run is in the store, readable as a resource and through get_run.
    let id = started["run_id"].as_str().unwrap_or_default().to_string();
    let doc = agent_stdio(
        &json!([call("get_run", json!({"run_id": id})), {"op": "read_resource", "uri": format!("brownout://runs/{id}/report.md")}]),
        &env.server(&[]),
        &[],
    );
    assert_eq!(sc(&doc, 0)["summary"]["status"], "interrupted");
    let md = doc["ops"][1]["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(md.contains("approved"), "{md}");
}

/// The client goes away mid-run: the run stops and the target holds no fault.
#[test]
fn a_client_that_disconnects_leaves_no_fault() {
    let env = Env::new();
    let r = remote();
    let x = light(&r, "disconnect", 120);
    let script = with_approval(
        &env,
        &x,
        json!([
            {"op": "sleep", "seconds": 4},
            call("get_experiment", json!({"run_id": "$run_id"})),
        ]),
    );
    let doc = agent_stdio(&script, &env.server(&["--allow-run"]), &[]);
    assert_eq!(sc(&doc, 4)["state"], "running");
    assert!(
        r.wait_clean(),
        "faults left after the client went: {:?}",
        r.faults()
    );
    let audit = env.audit_entries();
    assert!(
        audit.iter().any(|e| e["decision"] == "session_ended"),
        "{audit:#?}"
    );
}

/// A lease that lapses stops the run while the session is still open.
#[test]
fn a_lapsed_lease_stops_the_run() {
    let env = Env::new();
    let r = remote();
    let x = light(&r, "lease", 120);
    let script = with_approval(
        &env,
        &x,
        json!([
            {"op": "sleep", "seconds": 10},
            call("get_experiment", json!({"run_id": "$run_id"})),
        ]),
    );
    let doc = agent_stdio(&script, &env.server(&["--allow-run", "--lease", "3s"]), &[]);
    let v = sc(&doc, 4);
    assert!(v["state"] == "ended" || v["state"] == "stopping", "{v:#}");
    if v["state"] == "stopping" {
        assert!(
            v["reason"].as_str().unwrap_or("").contains("lease"),
            "{v:#}"
        );
    }
    assert!(
        r.wait_clean(),
        "faults left after the lease lapsed: {:?}",
        r.faults()
    );
    assert!(env
        .audit_entries()
        .iter()
        .any(|e| e["decision"] == "lease_lapsed"));
}

/// Elicitation: a client that declares it gets an approval form; accept runs, decline refuses.
#[test]
fn elicitation_asks_the_person_accept_runs_decline_refuses() {
    let env = Env::new();
    let r = remote();
    let x = experiment(
        "elicited",
        &remote_target(&r),
        "{env: staging}",
        &["10%"],
        "[\"error_rate < 50% over 2s\"]",
        60,
    );
    let script = json!([
        call("start_experiment", json!({"experiment": x})),
        call("stop_all", json!({}))
    ]);
    let doc = agent_stdio(
        &script,
        &env.server(&["--allow-run"]),
        &["--elicit", "decline"],
    );
    let v = sc(&doc, 0);
    assert_eq!(
        (v["decision"].as_str(), v["rule"].as_str()),
        (Some("refused"), Some("approval")),
        "{v:#}"
    );
    assert_eq!(
        r.tool_calls(),
        0,
        "a start only looks at the target (initialize, tools/list)"
    );
    let doc = agent_stdio(
        &script,
        &env.server(&["--allow-run"]),
        &["--elicit", "accept"],
    );
    let v = sc(&doc, 0);
    assert_eq!(v["decision"], "started", "{v:#}");
    assert_eq!(sc(&doc, 1)["stopped"][0], v["run_id"]);
    assert!(r.wait_clean());
    let audit = env.audit_entries();
    assert!(
        audit.iter().any(|e| e["approver"]
            .as_str()
            .is_some_and(|a| a.contains("test-person"))),
        "{audit:#?}"
    );
    // --approval code: the client's form is not trusted, the operator's code is asked for.
    let doc = agent_stdio(
        &script,
        &env.server(&["--allow-run", "--approval", "code"]),
        &["--elicit", "accept"],
    );
    assert_eq!(sc(&doc, 0)["decision"], "approval_required");
}

/// Streamable HTTP: the handshake (2025-11-25) and the stateless 2026-07-28, where the
/// approval form comes back as a multi-round-trip result; a deleted session stops its run.
#[test]
fn over_streamable_http_legacy_and_stateless() {
    let env = Env::new();
    let r = remote();
    // A stopped run counts until its rollbacks and recovery end: allow two at once.
    let policy = env.policy("max_concurrent: 2\n");
    // Over HTTP the client's form approves only when the operator says so.
    let (_g, url) = http_server(
        &env,
        &[
            "--allow-run",
            "--policy",
            &policy,
            "--approval",
            "elicitation",
        ],
    );
    for (mode, title) in [("legacy", "http legacy"), ("2026-07-28", "http stateless")] {
        let x = experiment(
            title,
            &remote_target(&r),
            "{env: staging}",
            &["10%"],
            "[\"error_rate < 50% over 2s\"]",
            60,
        );
        let script = json!([
            {"op": "list_tools"},
            call("list_fault_kinds", json!({})),
            call("start_experiment", json!({"experiment": x})),
            {"op": "sleep", "seconds": 2},
            call("get_experiment", json!({"run_id": "$run_id"})),
        ]);
        let doc = agent_http(&script, &url, &["--mode", mode, "--elicit", "accept"]);
        assert_eq!(
            doc["protocol_version"],
            if mode == "legacy" {
                "2025-11-25"
            } else {
                "2026-07-28"
            }
        );
        assert!(names(&doc, 0).contains(&"start_experiment".to_string()));
        let v = sc(&doc, 2);
        assert_eq!(v["decision"], "started", "{mode}: {v:#}");
        assert_eq!(sc(&doc, 4)["state"], "running", "{mode}: {:#}", sc(&doc, 4));
        if mode == "legacy" {
            // The client deleted its session on the way out: its run stopped.
            assert!(r.wait_clean(), "{mode}: faults left: {:?}", r.faults());
        } else {
            // No session in 2026-07-28: the run holds its lease until stopped.
            let doc = agent_http(
                &json!([call("stop_experiment", json!({"run_id": v["run_id"]}))]),
                &url,
                &["--mode", mode],
            );
            assert_eq!(sc(&doc, 0)["state"], "stopping");
            assert!(r.wait_clean(), "{mode}: faults left: {:?}", r.faults());
        }
    }
}

/// Simultaneous approved starts cannot beat the concurrency cap: the cap is checked as the
/// run is registered, under one lock.
#[test]
fn simultaneous_starts_do_not_beat_the_concurrency_cap() {
    let env = Env::new();
    let r = remote();
    let (_g, url) = http_server(&env, &["--allow-run", "--approval", "elicitation"]);
    let target = remote_target(&r);
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let (url, target) = (url.clone(), target.clone());
            std::thread::spawn(move || {
                let x = experiment(
                    &format!("race {i}"),
                    &target,
                    "{env: staging}",
                    &["10%"],
                    "[\"error_rate < 50% over 2s\"]",
                    60,
                );
                let doc = agent_http(
                    &json!([call("start_experiment", json!({"experiment": x}))]),
                    &url,
                    &["--mode", "2026-07-28", "--elicit", "accept"],
                );
                sc(&doc, 0)
            })
        })
        .collect();
    let results: Vec<Value> = threads
        .into_iter()
        .map(|t| t.join().expect("thread"))
        .collect();
    let started = results
        .iter()
        .filter(|v| v["decision"] == "started")
        .count();
    assert_eq!(started, 1, "{results:#?}");
    assert!(
        results
            .iter()
            .filter(|v| v["decision"] != "started")
            .all(|v| v["rule"] == "max_concurrent"),
        "{results:#?}"
    );
    let doc = agent_http(
        &json!([call("stop_all", json!({}))]),
        &url,
        &["--mode", "2026-07-28"],
    );
    assert_eq!(sc(&doc, 0)["stopped"].as_array().map(Vec::len), Some(1));
    assert!(r.wait_clean());
}

/// find_boundary searches the simulator for the barely-violating fault, reports progress to
/// a client that asked for it, and writes back a plan that validates.
#[test]
fn find_boundary_reports_progress_and_writes_a_valid_plan() {
    let env = Env::new();
    let plan =
        std::fs::read_to_string(repo().join("examples/search/cascade-search.yaml")).expect("plan");
    let workload =
        std::fs::read_to_string(repo().join("examples/sim/cascade.yaml")).expect("workload");
    let script = json!([
        {"op": "call_tool", "name": "find_boundary", "progress": true, "timeout_s": 120,
         "arguments": {"plan": plan, "workload": workload, "gates": ["error_rate < 1% over 10s"], "seeds": 2}},
    ]);
    let doc = agent_stdio(&script, &env.server(&[]), &[]);
    let out = sc(&doc, 0);
    let b = out["result"]["segments"][0]["boundary"][0]
        .as_f64()
        .expect("a boundary");
    assert!(b > 0.0 && b < 0.2, "inside the searched range: {out:#}");
    let written = out["written"].as_str().unwrap_or_default().to_string();
    assert!(
        !written.contains("search:"),
        "the marks are replaced: {written}"
    );
    let progress = doc["ops"][0]["result"]["progress"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(progress.len() >= 2, "progress notifications: {progress:?}");
    let doc = agent_stdio(
        &json!([call("validate_plan", json!({"plan": written}))]),
        &env.server(&[]),
        &[],
    );
    assert_eq!(sc(&doc, 0)["ok"], true, "{doc:#}");
}

/// A search whose budget runs out before its seeds finish ("no result", exit 4 on the
/// command line) is an answer, not an error: the tool result says `no_result` in words,
/// with no boundary and no file written (it said nothing of the kind before, and its
/// result looked like a range without a crossing).
#[test]
fn find_boundary_says_no_result_when_its_budget_runs_out() {
    let env = Env::new();
    let plan =
        std::fs::read_to_string(repo().join("examples/search/cascade-search.yaml")).expect("plan");
    // The most tasks a simulation may have through MCP (22 times the example's): 64 seeds'
    // first runs alone are far more than the one second the search is given.
    let workload = std::fs::read_to_string(repo().join("examples/sim/cascade.yaml"))
        .expect("workload")
        .replace("tasks: 9000", "tasks: 200000");
    assert!(workload.contains("tasks: 200000"));
    let script = json!([
        {"op": "call_tool", "name": "find_boundary", "timeout_s": 120,
         "arguments": {"plan": plan, "workload": workload, "gates": ["error_rate < 1% over 10s"],
                       "seeds": 64, "time_budget_s": 1}},
    ]);
    let doc = agent_stdio(&script, &env.server(&[]), &[]);
    assert_ne!(doc["ops"][0]["result"]["isError"], true, "{doc:#}");
    let out = sc(&doc, 0);
    assert_eq!(out["outcome"], "no_result", "{out:#}");
    let summary = out["summary"].as_str().unwrap_or_default();
    assert!(summary.starts_with("no result: the budget"), "{summary}");
    assert!(
        out["result"]["segments"][0]["boundary"].is_null(),
        "{out:#}"
    );
    assert_eq!(out["written"], "", "{out:#}");
}

/// A code approves the exact text it was printed for: one character changed, it is refused.
#[test]
fn a_code_approves_only_the_exact_text_it_was_printed_for() {
    let env = Env::new();
    let r = remote();
    let x = light(&r, "exact text", 60);
    let other = x.replace("added_ms: 20", "added_ms: 21");
    let script = json!([
        call("start_experiment", json!({"experiment": x})),
        {"op": "read_code", "file": path_of(&env.approvals())},
        call("start_experiment", json!({"experiment": other, "approval_code": "$code"})),
        call("start_experiment", json!({"experiment": x})),
        call("start_experiment", json!({"experiment": x, "approval_code": "$code"})),
        call("stop_all", json!({})),
    ]);
    let doc = agent_stdio(&script, &env.server(&["--allow-run"]), &[]);
    let v = sc(&doc, 2);
    assert_eq!(
        (v["decision"].as_str(), v["rule"].as_str()),
        (Some("refused"), Some("approval")),
        "{v:#}"
    );
    let again = sc(&doc, 3);
    assert!(
        again["detail"]
            .as_str()
            .unwrap_or("")
            .contains("already printed"),
        "asking again keeps the code: {again:#}"
    );
    assert_eq!(sc(&doc, 4)["decision"], "started");
    let printed = std::fs::read_to_string(env.approvals()).unwrap_or_default();
    assert_eq!(printed.lines().count(), 1, "one code printed: {printed}");
    assert!(
        printed.contains("search_incidents") && printed.contains("10% for 60s"),
        "the person sees what runs: {printed}"
    );
    assert!(r.wait_clean());
}

/// design_experiments is grounded in the target's history: the client timeout its past
/// runs set and the latency their probes measured.
#[test]
fn designs_are_grounded_in_the_targets_history() {
    let env = Env::new();
    let dir = tmp();
    let exp = "title: history run\nlabels: {env: staging}\ntarget: {command: [brownout, fixture]}\n\
steady_state:\n  - {probe: mcp, call: {tool: echo, arguments: {message: hi}}, samples: 5}\n\
load:\n  sessions: 2\n  workload: {arrival: {mode: closed, concurrency: 2}, steps: [{calls: [{tool: echo, arguments: {message: hi}}]}], client: {timeout_ms: 1234}}\n\
baseline: 1s\nmethod:\n  - {stage: a, duration: 1s, sessions: 10%}\n\
faults:\n  - {kind: latency, tools: [echo], added_ms: 1}\ngates:\n  - error_rate < 50% over 1s\n";
    let file = dir.path().join("exp.yaml");
    std::fs::write(&file, exp).expect("write");
    let out = std::process::Command::new(brownout())
        .arg("run")
        .arg(&file)
        .arg("--store")
        .arg(env.store())
        .arg("--journal")
        .arg(dir.path().join("j.json"))
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let script = json!([call(
        "design_experiments",
        json!({"target": {"command": ["brownout", "fixture"]}, "goal": "slow echo", "max": 2})
    )]);
    let doc = agent_stdio(&script, &env.server(&[]), &[]);
    let v = sc(&doc, 0);
    let notes = v["notes"].to_string();
    assert!(notes.contains("1 past run"), "{notes}");
    assert!(notes.contains("1234 ms"), "{notes}");
    assert_eq!(
        v["experiments"].as_array().map_or(0, Vec::len),
        2,
        "max: {v:#}"
    );
    // Step 2 of the slow_dependency series: 0.6 of the timeout.
    let echo = v["experiments"]
        .as_array()
        .and_then(|e| e.iter().find(|e| e["tool"] == "echo" && e["step"] == 2))
        .cloned()
        .expect("echo slowed");
    assert_eq!(echo["fault"], "latency", "{echo:#}");
    let text: Value =
        serde_json::from_str(echo["experiment"].as_str().unwrap_or("{}")).expect("JSON");
    assert_eq!(
        text["faults"][0]["added_ms"], 740,
        "0.6 of the 1234 ms timeout: {text:#}"
    );
    assert_eq!(text["load"]["workload"]["client"]["timeout_ms"], 1234);
    assert!(
        echo["estimate"]["note"]
            .as_str()
            .unwrap_or("")
            .contains("measured by past runs"),
        "{echo:#}"
    );
}
