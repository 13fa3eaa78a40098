//! The official Rust SDK (`rmcp`) as the client, through the stdio relay, against
//! `@modelcontextprotocol/server-everything` and the fixture.

mod common;
use common::*;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ServiceError, ServiceExt};
use serde_json::json;
use std::time::Duration;
use tokio::process::Command;

fn args(v: serde_json::Value) -> rmcp::model::JsonObject {
    v.as_object().cloned().unwrap_or_default()
}

async fn connect(cmd: Vec<String>) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let transport = TokioChildProcess::new(Command::new(&cmd[0]).configure(|c| {
        c.args(&cmd[1..]);
    }))
    .expect("spawn");
    tokio::time::timeout(Duration::from_secs(20), ().serve(transport))
        .await
        .expect("handshake in time")
        .expect("handshake")
}

#[tokio::test]
async fn rmcp_through_an_empty_plan_sees_server_everything_as_is() {
    let dir = tmp();
    let client = connect(through(dir.path(), "faults: []", &everything())).await;
    let tools = client.list_all_tools().await.expect("tools");
    assert!(tools.iter().any(|t| t.name == "echo"), "{tools:?}");
    let r = client
        .call_tool(
            CallToolRequestParams::new("echo").with_arguments(args(json!({"message": "ping"}))),
        )
        .await
        .expect("echo");
    let text = r.content[0]
        .as_text()
        .map(|t| t.text.clone())
        .unwrap_or_default();
    assert!(text.contains("ping"), "{text}");
    let _ = client.cancel().await;
}

#[tokio::test]
async fn rmcp_sees_injected_errors_and_drift() {
    let dir = tmp();
    let plan = "faults:\n  - {kind: error, tools: [echo], code: -32042, message: injected}\n  - {kind: schema_drift, tools: [get_incident], mutation: nullify, path: /status}\n";
    let client = connect(through(dir.path(), plan, &fixture())).await;
    match client
        .call_tool(CallToolRequestParams::new("echo").with_arguments(args(json!({"message": "x"}))))
        .await
    {
        Err(ServiceError::McpError(e)) => {
            assert_eq!(e.code.0, -32042);
            assert_eq!(e.message, "injected");
        }
        other => panic!("expected an MCP error, got {other:?}"),
    }
    // rmcp does not validate structured content itself; an agent that does sees the drift.
    let tools = client.list_all_tools().await.expect("tools");
    let schema = tools
        .iter()
        .find(|t| t.name == "get_incident")
        .and_then(|t| t.output_schema.clone())
        .expect("outputSchema");
    let validator =
        jsonschema::validator_for(&serde_json::Value::Object((*schema).clone())).expect("schema");
    let r = client
        .call_tool(
            CallToolRequestParams::new("get_incident").with_arguments(args(json!({"id": "INC-9"}))),
        )
        .await
        .expect("call");
    let sc = r.structured_content.expect("structured content");
    assert_eq!(sc["status"], serde_json::Value::Null);
    assert!(!validator.is_valid(&sc));
    let _ = client.cancel().await;
}

/// rmcp's streamable HTTP client through `brownout proxy http` to server-everything: the
/// session works, and an injected error reaches rmcp as that error.
#[tokio::test]
async fn rmcp_over_streamable_http_through_brownout() {
    use common::http::{brownout_http, everything_http, plan_file};
    use rmcp::transport::StreamableHttpClientTransport;
    let (_server, direct) = everything_http("streamableHttp");
    let dir = tmp();
    let plan = plan_file(
        dir.path(),
        "faults:\n  - {kind: error, tools: [get-sum], code: -32043, message: injected over http}\n",
    );
    let (_relay, through) = brownout_http(&["--upstream", &direct, "--plan", &plan]);
    let transport = StreamableHttpClientTransport::from_uri(through);
    let client = tokio::time::timeout(Duration::from_secs(20), ().serve(transport))
        .await
        .expect("handshake in time")
        .expect("handshake");
    let tools = client.list_all_tools().await.expect("tools");
    assert!(tools.iter().any(|t| t.name == "get-sum"), "{tools:?}");
    let r = client
        .call_tool(
            CallToolRequestParams::new("echo")
                .with_arguments(args(json!({"message": "rmcp-http"}))),
        )
        .await
        .expect("echo");
    let text = r.content[0]
        .as_text()
        .map(|t| t.text.clone())
        .unwrap_or_default();
    assert!(text.contains("rmcp-http"), "{text}");
    match client
        .call_tool(
            CallToolRequestParams::new("get-sum").with_arguments(args(json!({"a": 1, "b": 2}))),
        )
        .await
    {
        Err(ServiceError::McpError(e)) => {
            assert_eq!(e.code.0, -32043);
            assert_eq!(e.message, "injected over http");
        }
        other => panic!("expected the injected error, got {other:?}"),
    }
    let _ = client.cancel().await;
}
