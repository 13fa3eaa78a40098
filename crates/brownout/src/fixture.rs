//! `brownout fixture`: a built-in MCP server over stdio whose tools look like real ones, so
//! brownout can be tried (and tested, and benchmarked) with nothing else installed.
//!
//! Tools: `echo`, `search_incidents` (JSON in text), `get_incident` (`outputSchema` and
//! `structuredContent`), `fetch_logs` (long text), `restart_service` (a write tool).
//! Written by hand rather than on an SDK: it is a few hundred lines, it must add as little
//! as possible to relay benchmarks, and its answers must be fully predictable.

use crate::relay::framing::spawn_writer;
use crate::relay::framing::{Frame, LineReader, DEFAULT_MAX_MESSAGE};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::BufReader;
use tokio::sync::mpsc;

/// Protocol versions the fixture speaks; it answers with the client's if known.
pub const VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

#[derive(Debug, Clone, Default)]
pub struct FixtureOptions {
    /// Server-side latency added to every tools/call.
    pub delay_ms: u64,
}

pub fn tools() -> Value {
    json!([
        {
            "name": "echo",
            "title": "Echo",
            "description": "Return the message unchanged.",
            "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
            "annotations": {"readOnlyHint": true}
        },
        {
            "name": "search_incidents",
            "title": "Search incidents",
            "description": "Search open incidents; returns a JSON array in text.",
            "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "maximum": 50}}, "required": ["query"]},
            "annotations": {"readOnlyHint": true}
        },
        {
            "name": "get_incident",
            "title": "Get incident",
            "description": "One incident, as structured content.",
            "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
            "outputSchema": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "title": {"type": "string"},
                    "severity": {"type": "integer", "minimum": 1, "maximum": 5},
                    "status": {"type": "string", "enum": ["open", "mitigated", "resolved"]},
                    "service": {"type": "string"},
                    "opened_at": {"type": "string"}
                },
                "required": ["id", "title", "severity", "status", "service", "opened_at"],
                "additionalProperties": false
            },
            "annotations": {"readOnlyHint": true}
        },
        {
            "name": "fetch_logs",
            "title": "Fetch logs",
            "description": "The last N log lines of a service.",
            "inputSchema": {"type": "object", "properties": {"service": {"type": "string"}, "lines": {"type": "integer", "minimum": 1, "maximum": 5000}}, "required": ["service"]},
            "annotations": {"readOnlyHint": true}
        },
        {
            "name": "restart_service",
            "title": "Restart service",
            "description": "Restart a service (a write: not idempotent).",
            "inputSchema": {"type": "object", "properties": {"service": {"type": "string"}}, "required": ["service"]},
            "annotations": {"destructiveHint": true, "idempotentHint": false}
        }
    ])
}

fn text(t: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": t.into()}]})
}

fn tool_error(t: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": t.into()}], "isError": true})
}

fn incident(id: &str) -> Value {
    let n: u64 = id.bytes().map(u64::from).sum();
    let status = ["open", "mitigated", "resolved"][(n % 3) as usize];
    json!({
        "id": id,
        "title": format!("Elevated error rate on checkout ({id})"),
        "severity": 1 + n % 5,
        "status": status,
        "service": "checkout",
        "opened_at": "2026-11-20T08:15:00Z"
    })
}

struct State {
    restarts: AtomicU64,
}

/// The result of one tool call: `Ok(result)` or `Err((code, message))`.
fn call_tool(state: &State, name: &str, args: &Value) -> Result<Value, (i64, String)> {
    let arg = |k: &str| args.get(k).and_then(Value::as_str);
    match name {
        "echo" => Ok(match arg("message") {
            Some(m) => text(m),
            None => tool_error("echo needs a string `message`"),
        }),
        "search_incidents" => {
            let Some(q) = arg("query") else {
                return Ok(tool_error("search_incidents needs a string `query`"));
            };
            let limit = args
                .get("limit")
                .and_then(Value::as_u64)
                .unwrap_or(5)
                .clamp(1, 50);
            let hits: Vec<Value> = (1..=limit).map(|i| json!({"id": format!("INC-{}", 1000 + i), "title": format!("{q}: incident {i}"), "severity": 1 + i % 5})).collect();
            Ok(text(Value::Array(hits).to_string()))
        }
        "get_incident" => {
            let Some(id) = arg("id") else {
                return Ok(tool_error("get_incident needs a string `id`"));
            };
            let inc = incident(id);
            Ok(
                json!({"content": [{"type": "text", "text": inc.to_string()}], "structuredContent": inc}),
            )
        }
        "fetch_logs" => {
            let Some(service) = arg("service") else {
                return Ok(tool_error("fetch_logs needs a string `service`"));
            };
            let n = args
                .get("lines")
                .and_then(Value::as_u64)
                .unwrap_or(200)
                .clamp(1, 5000);
            let mut out = String::new();
            for i in 0..n {
                let level = if i % 17 == 0 { "ERROR" } else { "INFO" };
                out.push_str(&format!(
                    "2026-11-20T08:{:02}:{:02}Z {level} {service}[{}] request handled in {}ms\n",
                    (i / 60) % 60,
                    i % 60,
                    4000 + i % 7,
                    10 + i % 90
                ));
            }
            out.push_str(&format!("-- end of {n} lines --"));
            Ok(text(out))
        }
        "restart_service" => {
            let Some(service) = arg("service") else {
                return Ok(tool_error("restart_service needs a string `service`"));
            };
            let n = state.restarts.fetch_add(1, Ordering::SeqCst) + 1;
            Ok(text(format!(
                "restarted {service} (restart #{n} since the fixture started)"
            )))
        }
        other => Err((-32602, format!("Unknown tool: {other}"))),
    }
}

/// Answer one JSON-RPC message; `None` for notifications and responses.
fn answer(state: &State, msg: &Value) -> Option<Value> {
    let id = msg.get("id").cloned();
    let method = msg.get("method").and_then(Value::as_str);
    let (Some(id), Some(method)) = (id, method) else {
        if msg.get("method").is_none() && msg.get("id").is_none() {
            return Some(
                json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "Invalid Request"}}),
            );
        }
        return None;
    };
    let params = msg.get("params").cloned().unwrap_or(Value::Null);
    let result: Result<Value, (i64, String)> = match method {
        "initialize" => {
            let asked = params
                .get("protocolVersion")
                .and_then(Value::as_str)
                .unwrap_or("");
            let version = if VERSIONS.contains(&asked) {
                asked
            } else {
                VERSIONS[VERSIONS.len() - 1]
            };
            Ok(json!({
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": true}},
                "serverInfo": {"name": "brownout-fixture", "version": env!("CARGO_PKG_VERSION")},
                "instructions": "A stand-in incident-response server for trying brownout."
            }))
        }
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": tools()})),
        "tools/call" => {
            let name = params
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let args = params.get("arguments").cloned().unwrap_or(json!({}));
            call_tool(state, name, &args)
        }
        other => Err((-32601, format!("Method not found: {other}"))),
    };
    Some(match result {
        Ok(r) => json!({"jsonrpc": "2.0", "id": id, "result": r}),
        Err((code, message)) => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        }
    })
}

/// Serve MCP on stdin/stdout until stdin closes.
pub async fn run(opts: FixtureOptions) -> anyhow::Result<()> {
    let state = Arc::new(State {
        restarts: AtomicU64::new(0),
    });
    let (tx, rx) = mpsc::channel::<Vec<u8>>(1024);
    let writer = spawn_writer(crate::relay::stdio::stdout(), rx, None);
    let mut reader = LineReader::new(
        BufReader::new(crate::relay::stdio::stdin()),
        DEFAULT_MAX_MESSAGE,
    );
    while let Some(frame) = reader.next().await? {
        let Frame::Line(line) = frame else {
            let _ = tx.send(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"message too large"}}"#.to_vec()).await;
            continue;
        };
        let parsed: Value = match serde_json::from_slice(&line) {
            Ok(v) => v,
            Err(_) => {
                let _ = tx.send(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#.to_vec()).await;
                continue;
            }
        };
        let is_call = parsed.get("method").and_then(Value::as_str) == Some("tools/call");
        let reply = match &parsed {
            Value::Array(items) => {
                let out: Vec<Value> = items.iter().filter_map(|m| answer(&state, m)).collect();
                (!out.is_empty()).then(|| Value::Array(out))
            }
            m => answer(&state, m),
        };
        let Some(reply) = reply else { continue };
        // A single answer keeps the request's id as it was written (`1e2` stays `1e2`),
        // as a careful server does; serde_json would rewrite numbers.
        let bytes = match &parsed {
            Value::Array(_) => serde_json::to_vec(&reply)?,
            _ => brownout_core::splice::to_vec_like(&reply, &line),
        };
        if is_call && opts.delay_ms > 0 {
            let tx = tx.clone();
            let d = Duration::from_millis(opts.delay_ms);
            tokio::spawn(async move {
                tokio::time::sleep(d).await;
                let _ = tx.send(bytes).await;
            });
        } else if tx.send(bytes).await.is_err() {
            break;
        }
    }
    drop(tx);
    let _ = writer.await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_answer_as_advertised() {
        let s = State {
            restarts: AtomicU64::new(0),
        };
        let r = call_tool(&s, "get_incident", &json!({"id": "INC-7"})).expect("ok");
        let schema = tools()[2]["outputSchema"].clone();
        let v = jsonschema::validator_for(&schema).expect("schema");
        assert!(v.is_valid(&r["structuredContent"]));
        assert!(call_tool(&s, "echo", &json!({})).expect("ok")["isError"] == true);
        assert_eq!(
            call_tool(&s, "nope", &json!({})).map_err(|e| e.0),
            Err(-32602)
        );
        let logs = call_tool(&s, "fetch_logs", &json!({"service": "api", "lines": 3})).expect("ok");
        assert!(logs["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .ends_with("-- end of 3 lines --"));
    }

    #[test]
    fn initialize_negotiates_versions() {
        let s = State {
            restarts: AtomicU64::new(0),
        };
        let a = answer(&s, &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-03-26"}})).expect("answer");
        assert_eq!(a["result"]["protocolVersion"], "2025-03-26");
        let a = answer(&s, &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "1999-01-01"}})).expect("answer");
        assert_eq!(a["result"]["protocolVersion"], "2025-11-25");
        assert!(answer(
            &s,
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        .is_none());
    }
}
