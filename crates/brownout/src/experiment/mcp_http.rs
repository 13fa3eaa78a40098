//! A small streamable-HTTP MCP client for steady-state probes and post-abort checks: one
//! session (initialize, then calls), answers taken as JSON or as an event stream.

use serde_json::{json, Value};
use std::time::Duration;

/// One MCP session over streamable HTTP.
pub struct Session {
    http: reqwest::Client,
    url: String,
    session: Option<String>,
    next_id: u64,
}

/// What a call came back with.
#[derive(Debug, Clone)]
pub struct Answer {
    pub ok: bool,
    /// The JSON-RPC error or the tool's error text, when not ok.
    pub error: Option<String>,
}

impl Session {
    /// Open a session at `url`: `initialize`, then `notifications/initialized`.
    pub async fn open(url: &str, timeout: Duration) -> Result<Session, String> {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| e.to_string())?;
        let mut s = Session {
            http,
            url: url.to_string(),
            session: None,
            next_id: 1,
        };
        let init = s
            .request(
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "brownout-probe", "version": env!("CARGO_PKG_VERSION")}}),
            )
            .await?;
        if init.get("error").is_some() {
            return Err(format!("initialize refused: {}", init["error"]));
        }
        s.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        Ok(s)
    }

    /// Call a tool; an error answer or `isError: true` is `ok: false`, a transport failure
    /// is `Err`.
    pub async fn call_tool(&mut self, tool: &str, arguments: &Value) -> Result<Answer, String> {
        let v = self
            .request("tools/call", json!({"name": tool, "arguments": arguments}))
            .await?;
        if let Some(e) = v.get("error") {
            let msg = e["message"].as_str().unwrap_or("error").to_string();
            return Ok(Answer {
                ok: false,
                error: Some(msg),
            });
        }
        if v["result"]["isError"].as_bool() == Some(true) {
            let text = v["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or("isError");
            return Ok(Answer {
                ok: false,
                error: Some(text.to_string()),
            });
        }
        Ok(Answer {
            ok: true,
            error: None,
        })
    }

    /// End the session (best effort).
    pub async fn close(self) {
        if let Some(id) = &self.session {
            let _ = self
                .http
                .delete(&self.url)
                .header("Mcp-Session-Id", id)
                .send()
                .await;
        }
    }

    async fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        let body = self
            .post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        answer_with_id(&body, id).ok_or_else(|| format!("no answer to `{method}` in: {body:.200}"))
    }

    async fn post(&mut self, msg: &Value) -> Result<String, String> {
        let mut req = self
            .http
            .post(&self.url)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .header("MCP-Protocol-Version", "2025-06-18")
            .body(msg.to_string());
        if let Some(s) = &self.session {
            req = req.header("Mcp-Session-Id", s);
        }
        let resp = req.send().await.map_err(|e| format!("{}: {e}", self.url))?;
        if let Some(s) = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            self.session = Some(s.to_string());
        }
        let status = resp.status();
        let text = resp.text().await.map_err(|e| e.to_string())?;
        if !status.is_success() {
            return Err(format!("HTTP {status}: {text:.200}"));
        }
        Ok(text)
    }
}

/// The JSON-RPC message answering `id` in a body that is JSON or an event stream.
fn answer_with_id(body: &str, id: u64) -> Option<Value> {
    let is_ours = |v: &Value| v.get("id").and_then(Value::as_u64) == Some(id);
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        return is_ours(&v).then_some(v);
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(is_ours)
}

#[cfg(test)]
mod tests {
    #[test]
    fn answers_are_found_in_json_and_in_event_streams() {
        let sse = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n";
        assert!(super::answer_with_id(sse, 3).is_some());
        assert!(super::answer_with_id(sse, 4).is_none());
        assert!(super::answer_with_id("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", 1).is_some());
    }
}
