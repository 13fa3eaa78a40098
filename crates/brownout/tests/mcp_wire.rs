//! Every message `brownout mcp` writes is valid MCP: raw JSON-RPC over stdio in each
//! protocol version it speaks (2025-06-18 and 2025-11-25 with the handshake, the stateless
//! 2026-07-28 with `_meta` on every request), each response checked against the official
//! JSON Schema of that version (`crates/brownout/tests/data/mcp-schema/<version>/schema.json`).

mod common;
#[path = "mcp_support/mod.rs"]
mod support;

use common::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use support::Env;

fn check(version: &str, def: &str, v: &Value) {
    let val = mcp_schema_validator(version, def);
    let errors: Vec<String> = val
        .iter_errors(v)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{version} {def}: {errors:?}\n{v:#}");
}

/// Send `requests` to `brownout mcp` over stdio; the responses by id.
fn exchange(env: &Env, extra: &[&str], requests: &[Value]) -> Vec<Value> {
    let args = env.server(extra);
    let mut child = Command::new(&args[0])
        .args(&args[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("brownout mcp");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut out = Vec::new();
    for r in requests {
        writeln!(stdin, "{r}").expect("write");
        if r.get("id").is_none() {
            continue;
        }
        loop {
            let line = rx
                .recv_timeout(Duration::from_secs(30))
                .expect("a response within 30 s");
            let v: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            if v.get("id") == r.get("id") {
                out.push(v);
                break;
            }
        }
    }
    drop(stdin);
    let _ = child.wait();
    out
}

fn req(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The calls every version makes after its start, with the result definition each answers.
fn calls(meta: Option<&Value>) -> Vec<(Value, &'static str)> {
    let p = |mut v: Value| {
        if let Some(m) = meta {
            v["_meta"] = m.clone();
        }
        v
    };
    vec![
        (req(10, "tools/list", p(json!({}))), "ListToolsResult"),
        (
            req(
                11,
                "tools/call",
                p(json!({"name": "list_fault_kinds", "arguments": {}})),
            ),
            "CallToolResult",
        ),
        (
            req(
                12,
                "tools/call",
                p(
                    json!({"name": "validate_plan", "arguments": {"plan": "faults: [{kind: nope}]"}}),
                ),
            ),
            "CallToolResult",
        ),
        (
            req(
                13,
                "tools/call",
                p(json!({"name": "get_policy", "arguments": {}})),
            ),
            "CallToolResult",
        ),
        (
            req(
                14,
                "tools/call",
                p(json!({"name": "list_runs", "arguments": {}})),
            ),
            "CallToolResult",
        ),
        (
            req(
                15,
                "tools/call",
                p(json!({"name": "start_experiment", "arguments": {"experiment": "title: t"}})),
            ),
            "CallToolResult",
        ),
        (
            req(
                16,
                "tools/call",
                p(json!({"name": "query_runs", "arguments": {"sql": "DELETE FROM runs"}})),
            ),
            "CallToolResult",
        ),
        (
            req(17, "resources/list", p(json!({}))),
            "ListResourcesResult",
        ),
        (
            req(18, "resources/templates/list", p(json!({}))),
            "ListResourceTemplatesResult",
        ),
        (
            req(19, "resources/read", p(json!({"uri": "brownout://policy"}))),
            "ReadResourceResult",
        ),
    ]
}

#[test]
fn every_answer_is_valid_in_each_protocol_version() {
    let env = Env::new();
    for version in ["2025-06-18", "2025-11-25"] {
        let mut requests = vec![
            req(
                1,
                "initialize",
                json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}),
            ),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ];
        let cs = calls(None);
        requests.extend(cs.iter().map(|(r, _)| r.clone()));
        let answers = exchange(&env, &["--allow-run"], &requests);
        assert_eq!(
            answers[0]["result"]["protocolVersion"], version,
            "{:#}",
            answers[0]
        );
        check(version, "InitializeResult", &answers[0]["result"]);
        for (a, (_, def)) in answers[1..].iter().zip(&cs) {
            check(version, "JSONRPCMessage", a);
            check(version, def, &a["result"]);
        }
        // The SQL that writes is refused by the store, as a tool error the agent reads.
        assert_eq!(answers[7]["result"]["isError"], true, "{:#}", answers[7]);
    }
    let version = "2026-07-28";
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    });
    let cs = calls(Some(&meta));
    let mut requests = vec![req(1, "server/discover", json!({"_meta": meta}))];
    requests.extend(cs.iter().map(|(r, _)| r.clone()));
    let answers = exchange(&env, &["--allow-run"], &requests);
    let versions = answers[0]["result"]["supportedVersions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for v in ["2025-06-18", "2025-11-25", "2026-07-28"] {
        assert!(versions.contains(&json!(v)), "{versions:?}");
    }
    for (a, (_, def)) in answers[1..].iter().zip(&cs) {
        check(version, "JSONRPCMessage", a);
        check(version, def, &a["result"]);
    }
}

/// On 2026-07-28 a client that declares elicitation gets the approval form as an
/// input-required result (no server-to-client request), valid against the schema.
#[test]
fn the_stateless_approval_is_a_valid_input_required_result() {
    let env = Env::new();
    let version = "2026-07-28";
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    });
    let x = support::experiment(
        "stateless approval",
        "{command: [brownout, fixture]}",
        "{env: staging}",
        &["10%"],
        "[\"error_rate < 50% over 2s\"]",
        5,
    );
    let answers = exchange(
        &env,
        &["--allow-run"],
        &[req(
            1,
            "tools/call",
            json!({"name": "start_experiment", "arguments": {"experiment": x}, "_meta": meta}),
        )],
    );
    let r = &answers[0]["result"];
    assert_eq!(r["resultType"], "input_required", "{:#}", answers[0]);
    check(version, "InputRequiredResult", r);
    let state = r["requestState"].as_str().unwrap_or_default();
    assert!(state.len() >= 32, "an unguessable request state: {state}");
    assert_eq!(
        r["inputRequests"]["approval"]["method"], "elicitation/create",
        "{r:#}"
    );
    // A forged answer (a state the server never issued) does not approve.
    let forged = exchange(
        &env,
        &["--allow-run"],
        &[req(
            2,
            "tools/call",
            json!({"name": "start_experiment", "arguments": {"experiment": x},
            "inputResponses": {"approval": {"action": "accept", "content": {"approve": true}}},
            "requestState": "00000000000000000000000000000000", "_meta": meta}),
        )],
    );
    let sc = &forged[0]["result"]["structuredContent"];
    assert_eq!(
        (sc["decision"].as_str(), sc["rule"].as_str()),
        (Some("refused"), Some("approval")),
        "{:#}",
        forged[0]
    );
}
