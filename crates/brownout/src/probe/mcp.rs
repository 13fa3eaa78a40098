//! One `mcp` probe: a real session — `initialize`, `notifications/initialized`,
//! `tools/list`, optionally `tools/call` judged by its expectations and the tool's
//! `outputSchema`, then a clean close — timed phase by phase.

use super::reason::{Failure, FailureReason};
use super::spec::McpProbe;
use super::wire_http::HttpWire;
use super::wire_stdio::StdioWire;
use super::{Phases, PROTOCOL_VERSIONS};
use brownout_core::sli::Slis;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::time::Instant;

enum Wire {
    Http(HttpWire),
    Stdio(StdioWire),
}

impl Wire {
    async fn request(&mut self, id: u64, method: &str, params: Value) -> Result<Value, Failure> {
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        match self {
            Wire::Http(w) => w.request(&msg, id).await,
            Wire::Stdio(w) => w.request(&msg, id).await,
        }
    }

    async fn notify(&mut self, method: &str) -> Result<(), Failure> {
        let msg = json!({"jsonrpc": "2.0", "method": method});
        match self {
            Wire::Http(w) => w.notify(&msg).await,
            Wire::Stdio(w) => w.notify(&msg).await,
        }
    }

    async fn close(self, wait: Duration) -> Result<(), Failure> {
        match self {
            Wire::Http(w) => w.close().await,
            Wire::Stdio(w) => w.close(wait).await,
        }
    }
}

/// Run the session; `Ok` carries a one-line account of what passed.
pub async fn probe(
    m: &McpProbe,
    client: &reqwest::Client,
    deadline: Instant,
    phases: &mut Phases,
) -> Result<String, Failure> {
    let mut wire = match (&m.url, m.command.is_empty()) {
        (Some(url), true) => {
            let headers = m
                .headers
                .header_map()
                .map_err(|e| Failure::new(FailureReason::ProtocolError, e))?;
            Wire::Http(HttpWire::new(client.clone(), url, headers, m.transport)?)
        }
        (None, false) => {
            phases
                .time("spawn", deadline, async {
                    StdioWire::spawn(&m.command).map(Wire::Stdio)
                })
                .await?
        }
        (Some(_), false) => {
            return Err(Failure::new(
                FailureReason::SpawnFailed,
                "give an mcp probe a url or a command, not both",
            ))
        }
        (None, true) => {
            return Err(Failure::new(
                FailureReason::SpawnFailed,
                "an mcp probe needs a url or a command",
            ))
        }
    };
    let r = session(m, &mut wire, deadline, phases).await;
    // Close whatever happened: a failed probe must not leave sessions or processes behind.
    let close_by = deadline.max(Instant::now() + Duration::from_millis(500));
    let closed = phases
        .time("close", close_by, wire.close(Duration::from_secs(2)))
        .await;
    let summary = r?;
    closed?;
    Ok(summary)
}

async fn session(
    m: &McpProbe,
    wire: &mut Wire,
    deadline: Instant,
    phases: &mut Phases,
) -> Result<String, Failure> {
    let init = phases
        .time(
            "initialize",
            deadline,
            wire.request(
                1,
                "initialize",
                json!({
                    "protocolVersion": PROTOCOL_VERSIONS[PROTOCOL_VERSIONS.len() - 1],
                    "capabilities": {},
                    "clientInfo": {"name": "brownout-probe", "version": env!("CARGO_PKG_VERSION")},
                }),
            ),
        )
        .await?;
    if let Some(e) = init.get("error") {
        let (code, message) = error_parts(e);
        return Err(Failure::new(
            FailureReason::InitializeFailed { code },
            format!("initialize was refused: {message}"),
        ));
    }
    let version = init
        .pointer("/result/protocolVersion")
        .and_then(Value::as_str)
        .ok_or_else(|| Failure::protocol("the initialize result has no protocolVersion"))?;
    if !PROTOCOL_VERSIONS.contains(&version) {
        return Err(Failure::protocol(format!(
            "the server speaks protocol version `{version}`, which brownout does not know"
        )));
    }
    if let Wire::Http(w) = wire {
        w.set_version(version);
    }
    phases
        .time(
            "initialized",
            deadline,
            wire.notify("notifications/initialized"),
        )
        .await?;
    let tools = phases
        .time("tools_list", deadline, list_tools(wire))
        .await?;
    let Some(call) = &m.call else {
        return Ok(format!("{} tools", tools.len()));
    };
    let Some(tool) = tools
        .iter()
        .find(|t| t.get("name").and_then(Value::as_str) == Some(call.tool.as_str()))
    else {
        return Err(Failure::new(
            FailureReason::ToolMissing,
            format!(
                "`{}` is not among the {} tools listed",
                call.tool,
                tools.len()
            ),
        ));
    };
    let mut slis = Slis::default();
    slis.learn_tools_list(json!({"result": {"tools": [tool]}}).to_string().as_bytes());
    let answer = phases
        .time(
            "tools_call",
            deadline,
            wire.request(
                3,
                "tools/call",
                json!({
                    "name": call.tool,
                    "arguments": Value::Object(call.arguments.clone()),
                }),
            ),
        )
        .await?;
    judge_call(m, &call.tool, &answer, &slis)
}

async fn list_tools(wire: &mut Wire) -> Result<Vec<Value>, Failure> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for page in 0..20u64 {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let v = wire.request(2 + page * 1000, "tools/list", params).await?;
        if let Some(e) = v.get("error") {
            let (code, message) = error_parts(e);
            return Err(Failure::new(
                FailureReason::JsonrpcError { code },
                format!("tools/list: {message}"),
            ));
        }
        let Some(list) = v.pointer("/result/tools").and_then(Value::as_array) else {
            return Err(Failure::protocol(
                "the tools/list result has no `tools` array",
            ));
        };
        tools.extend(list.iter().cloned());
        cursor = v
            .pointer("/result/nextCursor")
            .and_then(Value::as_str)
            .map(str::to_string);
        if cursor.is_none() {
            break;
        }
    }
    Ok(tools)
}

fn judge_call(m: &McpProbe, tool: &str, answer: &Value, slis: &Slis) -> Result<String, Failure> {
    if let Some(e) = answer.get("error") {
        let (code, message) = error_parts(e);
        return Err(Failure::new(
            FailureReason::JsonrpcError { code },
            format!("tools/call `{tool}`: {message}"),
        ));
    }
    let result = answer.get("result").cloned().unwrap_or(Value::Null);
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let text = result
            .pointer("/content/0/text")
            .and_then(Value::as_str)
            .unwrap_or("");
        return Err(Failure::new(
            FailureReason::ToolError,
            format!("`{tool}` answered isError: {}", clip(text)),
        ));
    }
    if !slis.structured_valid(tool, answer.to_string().as_bytes()) {
        return Err(Failure::new(
            FailureReason::SchemaInvalid,
            format!("`{tool}`'s structuredContent does not match its outputSchema"),
        ));
    }
    for e in &m.expect {
        if !e.check_json(&result) {
            return Err(Failure::new(
                FailureReason::UnexpectedContent,
                format!("the result of `{tool}` does not meet `{e}`"),
            ));
        }
    }
    Ok(format!("`{tool}` answered as expected"))
}

fn error_parts(e: &Value) -> (i64, String) {
    (
        e.get("code").and_then(Value::as_i64).unwrap_or(0),
        clip(e.get("message").and_then(Value::as_str).unwrap_or("")),
    )
}

/// At most 200 characters of a peer's text.
pub fn clip(s: &str) -> String {
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}
