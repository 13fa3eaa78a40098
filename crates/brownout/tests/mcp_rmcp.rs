//! `brownout mcp` driven by the official Rust SDK's client (`rmcp`) over stdio and
//! streamable HTTP: the tools listed with and without --allow-run, every structuredContent
//! valid against its tool's outputSchema, and an approved run that stops when the rmcp
//! client closes its session (no fault left on the target).

mod common;
#[path = "mcp_support/mod.rs"]
mod support;

use rmcp::model::{CallToolRequestParams, Tool};
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use std::time::Duration;
use support::*;

type Client = RunningService<RoleClient, ()>;

async fn stdio(args: Vec<String>) -> Client {
    let t = TokioChildProcess::new(tokio::process::Command::new(&args[0]).configure(|c| {
        c.args(&args[1..]).stderr(std::process::Stdio::null());
    }))
    .expect("spawn");
    tokio::time::timeout(Duration::from_secs(20), ().serve(t))
        .await
        .expect("handshake in time")
        .expect("handshake")
}

async fn call(c: &Client, tools: &[Tool], name: &str, args: Value) -> Value {
    let r = c
        .call_tool(
            CallToolRequestParams::new(name.to_string())
                .with_arguments(args.as_object().cloned().unwrap_or_default()),
        )
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let sc = r
        .structured_content
        .clone()
        .unwrap_or_else(|| panic!("{name}: no structuredContent: {r:?}"));
    let t = tools.iter().find(|t| t.name == name).expect("listed");
    let schema = Value::Object((**t.output_schema.as_ref().expect("outputSchema")).clone());
    assert_valid(&schema, &sc, name);
    sc
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_over_stdio_every_read_tool_matches_its_output_schema() {
    let env = Env::new();
    let c = stdio(env.server(&[])).await;
    let tools = c.list_all_tools().await.expect("tools");
    let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    assert!(
        !names.contains(&"start_experiment".to_string()),
        "{names:?}"
    );
    assert_eq!(names.len(), 13, "{names:?}");
    for t in &tools {
        let a = t.annotations.as_ref().expect("annotations");
        assert_eq!(a.read_only_hint, Some(true), "{}", t.name);
        assert_eq!(a.destructive_hint, Some(false), "{}", t.name);
    }
    let open: Vec<&str> = tools
        .iter()
        .filter(|t| t.annotations.as_ref().and_then(|a| a.open_world_hint) == Some(true))
        .map(|t| t.name.as_ref())
        .collect();
    assert_eq!(
        open,
        ["describe_target", "design_experiments"],
        "only the tools that reach a target are open-world"
    );
    let kinds = call(&c, &tools, "list_fault_kinds", json!({})).await;
    assert!(kinds["kinds"].as_array().is_some_and(|k| k.len() >= 13));
    let v = call(
        &c,
        &tools,
        "validate_experiment",
        json!({"experiment": "title: x\nlabels: {env: prod}\n"}),
    )
    .await;
    assert_eq!(v["ok"], false);
    let wl = std::fs::read_to_string(common::repo().join("examples/sim/headline.yaml"))
        .expect("workload");
    let sim = call(
        &c,
        &tools,
        "simulate",
        json!({"workload": wl, "tasks": 200}),
    )
    .await;
    assert!(
        sim["report"]["tasks"].as_u64().is_some_and(|t| t == 200),
        "{sim}"
    );
    let p = call(&c, &tools, "get_policy", json!({})).await;
    assert_eq!(
        p["policy"]["ladder_from_history"], true,
        "through MCP the ladder counts history"
    );
    call(&c, &tools, "list_runs", json!({"limit": 5})).await;
    call(&c, &tools, "recommend", json!({"limit": 3})).await;
    call(&c, &tools, "trend", json!({})).await;
    let d = call(
        &c,
        &tools,
        "describe_target",
        json!({"target": {"command": ["brownout", "fixture"]}}),
    )
    .await;
    assert!(d["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == "restart_service")));
    let _ = c.cancel().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_over_http_runs_an_approved_experiment_and_its_session_end_stops_it() {
    let env = Env::new();
    let r = tokio::task::spawn_blocking(remote).await.expect("remote");
    let (_g, url) = http_server(&env, &["--allow-run"]);
    let c = tokio::time::timeout(
        Duration::from_secs(20),
        ().serve(StreamableHttpClientTransport::from_uri(url)),
    )
    .await
    .expect("handshake in time")
    .expect("handshake");
    let tools = c.list_all_tools().await.expect("tools");
    assert_eq!(tools.len(), 20);
    let x = experiment(
        "rmcp http",
        &remote_target(&r),
        "{env: staging}",
        &["10%"],
        "[\"error_rate < 50% over 2s\"]",
        120,
    );
    let asked = call(&c, &tools, "start_experiment", json!({"experiment": x})).await;
    assert_eq!(asked["decision"], "approval_required", "{asked}");
    let text = std::fs::read_to_string(env.approvals()).expect("the operator's approvals file");
    let code = text
        .rsplit("code ")
        .next()
        .and_then(|s| s.split_whitespace().next())
        .expect("a code")
        .to_string();
    let started = call(
        &c,
        &tools,
        "start_experiment",
        json!({"experiment": x, "approval_code": code}),
    )
    .await;
    assert_eq!(started["decision"], "started", "{started}");
    let id = started["run_id"].as_str().expect("run id").to_string();
    let mut held = Vec::new();
    for _ in 0..100 {
        let admin = r.admin.clone();
        held = tokio::task::spawn_blocking(move || Remote::faults_at(&admin))
            .await
            .expect("faults");
        if !held.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!held.is_empty(), "the target never held the run's fault");
    let live = call(&c, &tools, "get_experiment", json!({"run_id": id})).await;
    assert_eq!(live["state"], "running", "{live}");
    let _ = c.cancel().await;
    let clean = tokio::task::spawn_blocking(move || r.wait_clean())
        .await
        .expect("wait");
    assert!(
        clean,
        "faults left after the rmcp client closed its session"
    );
    assert!(env
        .audit_entries()
        .iter()
        .any(|e| e["decision"] == "session_ended"));
}

/// A client that declares the tasks extension gets the approved run as a task: polling it
/// shows it working (and renews the lease), cancelling it stops the run and the target holds
/// no fault.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_with_the_tasks_extension_gets_the_run_as_a_task() {
    use rmcp::model::{
        CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig, GetTaskParams,
        Implementation, TaskStatus,
    };
    let env = Env::new();
    let r = tokio::task::spawn_blocking(remote).await.expect("remote");
    let args = env.server(&["--allow-run", "--lease", "3s"]);
    let t = TokioChildProcess::new(tokio::process::Command::new(&args[0]).configure(|c| {
        c.args(&args[1..]).stderr(std::process::Stdio::null());
    }))
    .expect("spawn");
    let cfg = ClientConfig::new(
        ClientCapabilities::builder().enable_tasks().build(),
        Implementation::new("brownout-test", "1"),
    );
    let c = tokio::time::timeout(Duration::from_secs(20), cfg.serve(t))
        .await
        .expect("handshake in time")
        .expect("handshake");
    let x = experiment(
        "as a task",
        &remote_target(&r),
        "{env: staging}",
        &["10%"],
        "[\"error_rate < 50% over 2s\"]",
        120,
    );
    let req = |args: Value| {
        CallToolRequestParams::new("start_experiment")
            .with_arguments(args.as_object().cloned().unwrap_or_default())
    };
    let first = c
        .call_tool_once(req(json!({"experiment": x})))
        .await
        .expect("call");
    assert!(
        matches!(first, CallToolResponse::Complete(_)),
        "approval first: {first:?}"
    );
    let text = std::fs::read_to_string(env.approvals()).expect("approvals");
    let code = text
        .rsplit("code ")
        .next()
        .and_then(|s| s.split_whitespace().next())
        .expect("code")
        .to_string();
    let created = match c
        .call_tool_once(req(json!({"experiment": x, "approval_code": code})))
        .await
        .expect("call")
    {
        CallToolResponse::Task(t) => t,
        other => panic!("expected a task: {other:?}"),
    };
    let id = created.task.task_id.clone();
    // Polling past the 3 s lease keeps the run: a task's poll renews it. On a loaded machine
    // the run may take a while to reach its stage: poll (renewing) until the target holds the
    // run's fault, for 5 s at least and 60 s at most.
    let mut held = Vec::new();
    for i in 0..240 {
        let info = c
            .peer()
            .get_task(GetTaskParams::new(id.clone()))
            .await
            .expect("get_task");
        assert_eq!(info.task.status(), TaskStatus::Working, "{info:?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
        if i >= 20 {
            let admin = r.admin.clone();
            held = tokio::task::spawn_blocking(move || Remote::faults_at(&admin))
                .await
                .expect("faults");
            if !held.is_empty() {
                break;
            }
        }
    }
    assert!(!held.is_empty(), "the run holds its fault on the target");
    c.peer()
        .cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .expect("cancel");
    let mut last = None;
    for _ in 0..200 {
        let info = c
            .peer()
            .get_task(GetTaskParams::new(id.clone()))
            .await
            .expect("get_task");
        if info.task.status().is_terminal() {
            last = Some(info.task.status());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(last, Some(TaskStatus::Cancelled));
    let clean = tokio::task::spawn_blocking(move || r.wait_clean())
        .await
        .expect("wait");
    assert!(clean, "faults left after the task was cancelled");
    let _ = c.cancel().await;
}
