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

pub(super) enum Wire {
    Http(HttpWire),
    Stdio(StdioWire),
}

impl Wire {
    pub(super) async fn request(
        &mut self,
        id: u64,
        method: &str,
        params: Value,
    ) -> Result<Value, Failure> {
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        match self {
            Wire::Http(w) => w.request(&msg, id).await,
            Wire::Stdio(w) => w.request(&msg, id).await,
        }
    }

    pub(super) async fn notify(&mut self, method: &str) -> Result<(), Failure> {
        let msg = json!({"jsonrpc": "2.0", "method": method});
        match self {
            Wire::Http(w) => w.notify(&msg).await,
            Wire::Stdio(w) => w.notify(&msg).await,
        }
    }

    pub(super) async fn close(self, wait: Duration) -> Result<(), Failure> {
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
    let mut wire = open_wire(m, client, deadline, phases).await?;
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

/// The wire a probe talks over: HTTP to its `url`, or a started `command`.
pub(super) async fn open_wire(
    m: &McpProbe,
    client: &reqwest::Client,
    deadline: Instant,
    phases: &mut Phases,
) -> Result<Wire, Failure> {
    Ok(match (&m.url, m.command.is_empty()) {
        (Some(url), true) => {
            let headers = m
                .headers
                .header_map()
                .map_err(|e| Failure::new(FailureReason::ProtocolError, e))?;
            Wire::Http({
                let mut w = HttpWire::new(client.clone(), url, headers, m.transport)?;
                w.traceparent = m.traceparent.clone();
                w
            })
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
    })
}

async fn session(
    m: &McpProbe,
    wire: &mut Wire,
    deadline: Instant,
    phases: &mut Phases,
) -> Result<String, Failure> {
    let tools = handshake(wire, deadline, phases).await?;
    let Some(call) = &m.call else {
        return Ok(format!("{} tools", tools.len()));
    };
    let slis = find_tool(&tools, &call.tool)?;
    let answer = phases
        .time("tools_call", deadline, call_tool(wire, 3, call))
        .await?;
    judge_call(m, &call.tool, &answer, &slis)
}

/// `tools/call` of the probe's call, as request `id`.
pub(super) async fn call_tool(
    wire: &mut Wire,
    id: u64,
    call: &super::spec::ProbeCall,
) -> Result<Value, Failure> {
    wire.request(
        id,
        "tools/call",
        json!({
            "name": call.tool,
            "arguments": Value::Object(call.arguments.clone()),
        }),
    )
    .await
}

/// The tool among those listed, with its output schema learnt; `tool_missing` if absent.
pub(super) fn find_tool(tools: &[Value], name: &str) -> Result<Slis, Failure> {
    let Some(tool) = tools
        .iter()
        .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
    else {
        return Err(Failure::new(
            FailureReason::ToolMissing,
            format!("`{name}` is not among the {} tools listed", tools.len()),
        ));
    };
    let mut slis = Slis::default();
    slis.learn_tools_list(json!({"result": {"tools": [tool]}}).to_string().as_bytes());
    Ok(slis)
}

/// `initialize`, `notifications/initialized` and `tools/list`: the tools.
pub(super) async fn handshake(
    wire: &mut Wire,
    deadline: Instant,
    phases: &mut Phases,
) -> Result<Vec<Value>, Failure> {
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
    phases.time("tools_list", deadline, list_tools(wire)).await
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

pub(super) fn judge_call(
    m: &McpProbe,
    tool: &str,
    answer: &Value,
    slis: &Slis,
) -> Result<String, Failure> {
    if let Some(e) = answer.get("error") {
        let (code, message) = error_parts(e);
        if let Some(exited) = relay_exited(code, &message) {
            return Err(Failure::new(
                exited,
                format!("tools/call `{tool}`: {message}"),
            ));
        }
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

/// A brownout relay answers the calls in flight when its server process dies with
/// `-32000 "brownout: the MCP server exited before answering (killed by SIGKILL)"`: seen
/// through a relay, that is the server's exit, not a JSON-RPC error of the server's own.
fn relay_exited(code: i64, message: &str) -> Option<FailureReason> {
    let how = message.strip_prefix("brownout: the MCP server exited before answering (")?;
    if code != brownout_core::engine::RELAY_ERROR {
        return None;
    }
    let number = |after: &str| -> Option<i32> {
        let rest = how.split(after).nth(1)?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    let signal = number("signal ").or_else(|| {
        // `killed by SIGKILL`: the name, as nix prints it.
        how.strip_prefix("killed by ").and_then(|name| {
            let name = name.trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
            name.parse::<nix::sys::signal::Signal>()
                .ok()
                .map(|s| s as i32)
        })
    });
    Some(FailureReason::ProcessExited {
        status: number("exit status "),
        signal,
    })
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

#[cfg(test)]
mod relay_tests {
    use super::*;

    #[test]
    fn a_relay_answer_for_a_dead_server_is_process_exited() {
        let r = relay_exited(
            -32000,
            "brownout: the MCP server exited before answering (killed by SIGKILL)",
        );
        assert_eq!(
            r,
            Some(FailureReason::ProcessExited {
                status: None,
                signal: Some(9)
            })
        );
        let r = relay_exited(
            -32000,
            "brownout: the MCP server exited before answering (exit status 3)",
        );
        assert_eq!(
            r,
            Some(FailureReason::ProcessExited {
                status: Some(3),
                signal: None
            })
        );
        assert_eq!(
            relay_exited(
                -32603,
                "brownout: the MCP server exited before answering (x)"
            ),
            None
        );
        assert_eq!(relay_exited(-32000, "rate limited"), None);
    }
}
