//! Every fault kind as the official Python SDK client (`mcp` on PyPI) sees it, through the
//! stdio relay, against a server on the Python SDK and against brownout's fixture.

mod common;
use common::*;
use serde_json::{json, Value};

/// The id the plan gives its first (unnamed) fault.
fn default_id(plan: &str) -> String {
    brownout_core::Plan::from_str_named(plan, "plan.yaml")
        .map(|p| p.faults[0].id.clone())
        .unwrap_or_default()
}

fn call(name: &str, args: Value) -> Value {
    json!({"op": "call_tool", "name": name, "arguments": args, "timeout_s": 5})
}

fn call_t(name: &str, args: Value, timeout_s: f64) -> Value {
    json!({"op": "call_tool", "name": name, "arguments": args, "timeout_s": timeout_s})
}

fn text(op: &Value) -> String {
    op["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn err_code(op: &Value) -> i64 {
    op["error"]["code"].as_i64().unwrap_or(0)
}

fn err_msg(op: &Value) -> String {
    op["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn empty_plan_session_equals_direct_python_server() {
    let script = json!([
        {"op": "list_tools"},
        call("echo", json!({"message": "héllo \"world\""})),
        call("add", json!({"a": 2, "b": 3})),
        call("get_weather", json!({"city": "Oslo"})),
        call("list_items", json!({"count": 50})),
        {"op": "ping"}
    ]);
    let direct = py_client(script.clone(), &python_server());
    let dir = tmp();
    let relayed = py_client(script, &through(dir.path(), "faults: []", &python_server()));
    assert_eq!(direct["completed"], true, "{direct}");
    assert!(
        direct["ops"]
            .as_array()
            .is_some_and(|o| o.iter().all(|o| o["ok"] == true)),
        "{direct}"
    );
    assert_eq!(without_timings(direct), without_timings(relayed));
}

#[test]
fn latency_delays_the_answer() {
    let dir = tmp();
    let plan = "faults:\n  - {kind: latency, tools: [echo], added_ms: 400}\n";
    let r = py_client(
        json!([{"op": "list_tools"}, call("echo", json!({"message": "a"})), call("fetch_logs", json!({"service": "x", "lines": 2}))]),
        &through(dir.path(), plan, &fixture()),
    );
    assert_eq!(op(&r, 1)["ok"], true);
    assert!(
        op(&r, 1)["elapsed_ms"].as_f64().unwrap_or(0.0) >= 395.0,
        "{r}"
    );
    assert_eq!(
        fault_events(&events(dir.path()), &default_id(plan)).len(),
        1,
        "only echo is delayed"
    );
}

#[test]
fn request_errors_never_reach_the_server() {
    let dir = tmp();
    let plan = "faults:\n  - {kind: error, tools: [restart_service], max_injections: 1, code: -32050, message: maintenance}\n";
    let r = py_client(
        json!([{"op": "list_tools"}, call("restart_service", json!({"service": "api"})), call("restart_service", json!({"service": "api"}))]),
        &through(dir.path(), plan, &fixture()),
    );
    assert_eq!(err_code(op(&r, 1)), -32050, "{r}");
    assert_eq!(err_msg(op(&r, 1)), "maintenance");
    assert!(
        text(op(&r, 2)).contains("restart #1"),
        "the server saw only the second call: {r}"
    );
}

#[test]
fn response_errors_replace_the_servers_answer() {
    let dir = tmp();
    let plan = "faults:\n  - {kind: error, phase: response, tools: [restart_service], max_injections: 1}\n";
    let r = py_client(
        json!([{"op": "list_tools"}, call("restart_service", json!({"service": "api"})), call("restart_service", json!({"service": "api"}))]),
        &through(dir.path(), plan, &fixture()),
    );
    assert_eq!(err_code(op(&r, 1)), -32603, "{r}");
    assert!(
        text(op(&r, 2)).contains("restart #2"),
        "the server did the first call's work: {r}"
    );
}

#[test]
fn tool_errors_are_is_error_results() {
    let dir = tmp();
    let plan = "faults:\n  - {kind: error, tool_error: true, text: disk full, tools: [echo]}\n";
    let r = py_client(
        json!([{"op": "list_tools"}, call("echo", json!({"message": "a"}))]),
        &through(dir.path(), plan, &python_server()),
    );
    assert_eq!(op(&r, 1)["result"]["isError"], true, "{r}");
    assert_eq!(text(op(&r, 1)), "disk full");
}

#[test]
fn timeouts_withhold_and_the_session_survives() {
    let dir = tmp();
    let plan = "faults:\n  - {id: hang, kind: timeout, tools: [echo], max_injections: 1}\n  - {id: late, kind: timeout, tools: [add], hold_ms: 600, then: deliver}\n";
    let r = py_client(
        json!([{"op": "list_tools"}, call_t("echo", json!({"message": "a"}), 1.5), call("echo", json!({"message": "b"})), call("add", json!({"a": 1, "b": 1}))]),
        &through(dir.path(), plan, &python_server()),
    );
    assert_eq!(
        err_code(op(&r, 1)),
        -32001,
        "the SDK's own timeout fired: {r}"
    );
    assert_eq!(text(op(&r, 2)), "b");
    assert_eq!(op(&r, 3)["ok"], true);
    assert!(
        op(&r, 3)["elapsed_ms"].as_f64().unwrap_or(0.0) >= 595.0,
        "{r}"
    );
}

#[test]
fn drops_and_malformed_answers_leave_the_client_waiting() {
    let dir = tmp();
    let plan = "faults:\n  - {kind: drop, tools: [echo], max_injections: 1}\n  - {kind: malformed, mode: garbage, tools: [add], max_injections: 1}\n";
    let r = py_client(
        json!([{"op": "list_tools"}, call_t("echo", json!({"message": "a"}), 1.0), call_t("add", json!({"a": 1, "b": 2}), 1.0), call("add", json!({"a": 1, "b": 2}))]),
        &through(dir.path(), plan, &python_server()),
    );
    assert_eq!(err_code(op(&r, 1)), -32001, "{r}");
    assert_eq!(
        err_code(op(&r, 2)),
        -32001,
        "a garbage line is not an answer: {r}"
    );
    assert_eq!(op(&r, 3)["result"]["structuredContent"]["result"], 3, "{r}");
}

#[test]
fn rate_limits_reject_calls_over_the_bucket() {
    let dir = tmp();
    let plan = "faults:\n  - {kind: rate_limit, rate: 0.2, burst: 2, tools: [echo]}\n";
    let calls: Vec<Value> = (0..4)
        .map(|i| call("echo", json!({"message": format!("m{i}")})))
        .collect();
    let mut script = vec![json!({"op": "list_tools"})];
    script.extend(calls);
    let r = py_client(
        Value::Array(script),
        &through(dir.path(), plan, &python_server()),
    );
    let ok: Vec<bool> = (1..5).map(|i| op(&r, i)["ok"] == true).collect();
    assert_eq!(ok, vec![true, true, false, false], "{r}");
    assert_eq!(err_code(op(&r, 3)), -32000);
    assert!(err_msg(op(&r, 3)).contains("rate limit"));
    assert!(
        op(&r, 3)["error"]["data"]["retry_after_ms"]
            .as_u64()
            .unwrap_or(0)
            > 0,
        "{r}"
    );
}

#[test]
fn schema_drift_violates_the_output_schema_the_sdk_checks() {
    let dir = tmp();
    let plan = "faults:\n  - {kind: schema_drift, tools: [get_weather], mutation: retype}\n";
    let r = py_client(
        json!([{"op": "list_tools"}, call("get_weather", json!({"city": "Oslo"}))]),
        &through(dir.path(), plan, &python_server()),
    );
    assert_eq!(op(&r, 1)["ok"], false, "{r}");
    assert!(
        err_msg(op(&r, 1)).contains("Invalid structured content"),
        "{r}"
    );
}

#[test]
fn schema_drift_against_server_everything() {
    let dir = tmp();
    let plan = "faults:\n  - {kind: schema_drift, tools: [get-structured-content], mutation: rename, path: /temperature}\n";
    let r = py_client(
        json!([{"op": "list_tools"}, call("get-structured-content", json!({"location": "Chicago"}))]),
        &through(dir.path(), plan, &everything()),
    );
    assert_eq!(op(&r, 1)["ok"], false, "{r}");
    assert!(
        err_msg(op(&r, 1)).contains("Invalid structured content"),
        "{r}"
    );
}

#[test]
fn partial_results_lose_data_silently() {
    let direct = py_client(
        json!([{"op": "list_tools"}, call("list_items", json!({"count": 40}))]),
        &python_server(),
    );
    let dir = tmp();
    let plan = "faults:\n  - {kind: partial_result, tools: [list_items], mode: truncate_text, keep: 0.25}\n";
    let r = py_client(
        json!([{"op": "list_tools"}, call("list_items", json!({"count": 40}))]),
        &through(dir.path(), plan, &python_server()),
    );
    assert_eq!(op(&r, 1)["ok"], true, "the client accepts it: {r}");
    let (full, cut) = (text(op(&direct, 1)).len(), text(op(&r, 1)).len());
    assert!(cut < full / 2 && cut > 0, "{cut} of {full}");
    assert!(text(op(&direct, 1)).starts_with(&text(op(&r, 1))));
}

#[test]
fn registry_hides_fakes_and_staleness() {
    let dir = tmp();
    let plan = "faults:\n  - {kind: registry, action: hide, tools: [add]}\n  - {kind: registry, action: phantom, phantom_name: delete_everything}\n  - {kind: registry, action: stale_schema, tools: [echo]}\n";
    let r = py_client(
        json!([{"op": "list_tools"}, call("delete_everything", json!({}))]),
        &through(dir.path(), plan, &python_server()),
    );
    let tools = op(&r, 0)["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(!names.contains(&"add"), "{names:?}");
    assert!(
        names.contains(&"delete_everything") && names.contains(&"get_weather"),
        "{names:?}"
    );
    let echo = tools
        .iter()
        .find(|t| t["name"] == "echo")
        .expect("echo listed");
    assert!(
        echo["inputSchema"]["properties"]
            .get("message_legacy")
            .is_some(),
        "{echo}"
    );
    assert_eq!(err_code(op(&r, 1)), -32602, "{r}");
    assert!(err_msg(op(&r, 1)).contains("Unknown tool: delete_everything"));
}

#[test]
fn removed_and_dangling_tools_fail_their_calls() {
    let dir = tmp();
    let plan = "faults:\n  - {kind: registry, action: remove, tools: [add]}\n  - {kind: registry, action: dangling, tools: [echo]}\n";
    let r = py_client(
        json!([{"op": "list_tools"}, call("add", json!({"a": 1, "b": 1})), call("echo", json!({"message": "x"}))]),
        &through(dir.path(), plan, &python_server()),
    );
    let names: Vec<String> = op(&r, 0)["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|t| t["name"].as_str().map(String::from))
        .collect();
    assert!(
        !names.contains(&"add".to_string()) && names.contains(&"echo".to_string()),
        "{names:?}"
    );
    assert_eq!(err_code(op(&r, 1)), -32602);
    assert_eq!(
        err_code(op(&r, 2)),
        -32602,
        "echo is listed but its calls fail: {r}"
    );
}

#[test]
fn cold_start_slows_only_the_first_call_of_each_tool() {
    let dir = tmp();
    let plan = "faults:\n  - {kind: cold_start, added_ms: 400}\n";
    let r = py_client(
        json!([{"op": "list_tools"}, call("echo", json!({"message": "a"})), call("echo", json!({"message": "b"})), call("get_incident", json!({"id": "INC-1"}))]),
        &through(dir.path(), plan, &fixture()),
    );
    assert!(
        op(&r, 1)["elapsed_ms"].as_f64().unwrap_or(0.0) >= 395.0,
        "{r}"
    );
    assert!(
        op(&r, 3)["elapsed_ms"].as_f64().unwrap_or(0.0) >= 395.0,
        "{r}"
    );
    let hits: Vec<String> = fault_events(&events(dir.path()), &default_id(plan))
        .iter()
        .map(|e| e["tool"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(hits, vec!["echo", "get_incident"]);
}

#[test]
fn a_killed_server_fails_calls_in_flight_clearly() {
    let dir = tmp();
    let plan = "faults:\n  - {kind: process, action: kill, signal: KILL, after_calls: 1, tools: [fetch_logs]}\n";
    let r = py_client(
        json!([{"op": "list_tools"}, call("fetch_logs", json!({"service": "a"})), call("fetch_logs", json!({"service": "b"})), call("echo", json!({"message": "c"}))]),
        &through(dir.path(), plan, &fixture()),
    );
    assert_eq!(op(&r, 1)["ok"], true, "{r}");
    assert_eq!(err_code(op(&r, 2)), -32000, "{r}");
    assert!(
        err_msg(op(&r, 2))
            .contains("brownout: the MCP server exited before answering (killed by SIGKILL)"),
        "{r}"
    );
    assert_eq!(op(&r, 3)["ok"], false, "no restart: the connection is gone");
}

#[test]
fn a_restarted_server_serves_the_same_session() {
    let dir = tmp();
    let plan = "faults:\n  - {kind: process, action: kill, signal: KILL, after_calls: 1, tools: [restart_service], restart: on_failure, restart_backoff_ms: 100}\n";
    let r = py_client(
        json!([{"op": "list_tools"}, call("restart_service", json!({"service": "a"})), call("restart_service", json!({"service": "b"})), {"op": "sleep", "seconds": 0.5}, call("restart_service", json!({"service": "c"}))]),
        &through(dir.path(), plan, &fixture()),
    );
    assert!(text(op(&r, 1)).contains("restart #1"), "{r}");
    assert_eq!(err_code(op(&r, 2)), -32000, "{r}");
    assert!(
        text(op(&r, 4)).contains("restart #1"),
        "a fresh server process answers: {r}"
    );
}

#[test]
fn a_paused_server_answers_late() {
    let dir = tmp();
    let plan = "faults:\n  - {kind: process, action: pause, pause_ms: 800, after_calls: 1, tools: [echo]}\n";
    let r = py_client(
        json!([{"op": "list_tools"}, call("echo", json!({"message": "a"})), call("echo", json!({"message": "b"}))]),
        &through(dir.path(), plan, &fixture()),
    );
    assert_eq!(text(op(&r, 2)), "b", "{r}");
    assert!(
        op(&r, 2)["elapsed_ms"].as_f64().unwrap_or(0.0) >= 700.0,
        "{r}"
    );
}

#[test]
fn mcp_chaos_plans_run_unchanged() {
    let dir = tmp();
    // An mcp-chaos plan, as its users write them: `type:` and mcp-chaos field names.
    let plan = "seed: 42\nfaults:\n  - type: latency\n    added_ms: 300\n    jitter_ms: 100\n  - type: error_injection\n    rate: 1.0\n";
    let r = py_client(
        json!([{"op": "list_tools"}, call("echo", json!({"message": "a"}))]),
        &through(dir.path(), plan, &fixture()),
    );
    assert!(
        op(&r, 1)["elapsed_ms"].as_f64().unwrap_or(0.0) >= 295.0,
        "{r}"
    );
    assert_eq!(
        err_code(op(&r, 1)),
        -32000,
        "error_injection at rate 1.0 answers as mcp-chaos does: {r}"
    );
    assert_eq!(err_msg(op(&r, 1)), "injected error");
}

#[test]
fn empty_plan_session_equals_direct_server_everything() {
    let script = json!([
        {"op": "list_tools"},
        call("echo", json!({"message": "through brownout"})),
        call("get-sum", json!({"a": 40, "b": 2})),
        call("get-structured-content", json!({"location": "Chicago"})),
        {"op": "list_prompts"},
        {"op": "ping"}
    ]);
    let direct = py_client(script.clone(), &everything());
    let dir = tmp();
    let relayed = py_client(script, &through(dir.path(), "faults: []", &everything()));
    assert!(
        direct["ops"]
            .as_array()
            .is_some_and(|o| o.iter().all(|o| o["ok"] == true)),
        "{direct}"
    );
    assert_eq!(without_timings(direct), without_timings(relayed));
}

#[test]
fn duplicated_answers_do_not_confuse_the_sdk() {
    let dir = tmp();
    let plan = "faults:\n  - {kind: duplicate, tools: [echo], copies: 3}\n";
    let r = py_client(
        json!([{"op": "list_tools"}, call("echo", json!({"message": "a"})), call("echo", json!({"message": "b"})), call("add", json!({"a": 1, "b": 2}))]),
        &through(dir.path(), plan, &python_server()),
    );
    assert_eq!(text(op(&r, 1)), "a", "{r}");
    assert_eq!(text(op(&r, 2)), "b", "{r}");
    assert_eq!(op(&r, 3)["result"]["structuredContent"]["result"], 3);
    assert_eq!(
        fault_events(&events(dir.path()), &default_id(plan)).len(),
        2
    );
}
