//! Connect to a target MCP server read-only — `initialize` and `tools/list`, nothing else —
//! and describe it: server name, version and protocol, every tool with its schemas and
//! annotations, and how long `tools/list` took. Everything the target wrote is returned as
//! data under `target`-supplied fields, escaped and cut (untrusted.rs), beside brownout's
//! own judgment of whether each tool may write. No policy applies here: `describe_target`
//! (mcp/describe.rs) and `brownout design` check their own first.

use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// What a description found, for `design_experiments` too.
pub struct Described {
    pub json: Value,
    pub tools: Vec<rmcp::model::Tool>,
}

/// The program a command target runs: `brownout` is this executable.
fn program(p: &str) -> String {
    if p == "brownout" && brownout_relay::relay::child::which(p).is_none() {
        if let Ok(exe) = std::env::current_exe() {
            return exe.display().to_string();
        }
    }
    p.to_string()
}

/// Connect to a target (`{command: [...]}` or `{url: ...}`) read-only — `initialize` and
/// `tools/list` — and describe it; no policy applies here (the caller checks its own).
pub async fn connect(
    target: &Value,
    timeout: Duration,
    workdir: &std::path::Path,
) -> Result<Described, String> {
    let t0 = Instant::now();
    let client = match (target["command"].as_array(), target["url"].as_str()) {
        (Some(cmd), None) => {
            let cmd: Vec<String> = cmd
                .iter()
                .filter_map(|c| c.as_str().map(String::from))
                .collect();
            let first = cmd.first().ok_or("`target.command` is empty")?;
            let exe = program(first);
            let rest = cmd[1..].to_vec();
            let workdir = workdir.to_path_buf();
            let transport =
                TokioChildProcess::new(tokio::process::Command::new(exe).configure(|c| {
                    c.args(&rest)
                        .current_dir(&workdir)
                        .stderr(std::process::Stdio::null());
                }))
                .map_err(|e| format!("cannot start `{first}`: {e}"))?;
            tokio::time::timeout(timeout, ().serve(transport)).await
        }
        (None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err("the target's `url` is not an http:// or https:// URL".into());
            }
            let transport = StreamableHttpClientTransport::from_uri(url.to_string());
            tokio::time::timeout(timeout, ().serve(transport)).await
        }
        _ => return Err(
            "give `target.command` (a stdio server) or `target.url` (streamable HTTP), one of them"
                .into(),
        ),
    };
    let client = client
        .map_err(|_| {
            format!(
                "the target did not finish its handshake within {} ms",
                timeout.as_millis()
            )
        })?
        .map_err(|e| format!("the target's handshake failed: {e}"))?;
    let connect_ms = t0.elapsed().as_secs_f64() * 1000.0;
    let info = client.peer_info();
    let t1 = Instant::now();
    // Bounded while reading: tools, bytes, pages, and the call's timeout (tool_pages.rs).
    let read = super::tool_pages::read(client.peer(), t1 + timeout).await;
    let tools_list_ms = t1.elapsed().as_secs_f64() * 1000.0;
    let _ = tokio::time::timeout(Duration::from_secs(2), client.cancel()).await;
    let read = read?;
    let cut = read.stopped_by.is_some();
    let tools = read.tools;
    let mut json = shape(info.as_deref(), &tools, cut, tools_list_ms, connect_ms);
    json["tools_stopped_by"] = json!(read.stopped_by);
    json["tools_list_pages"] = json!(read.pages);
    Ok(Described { json, tools })
}

/// The description as returned: the target's text escaped and cut in its own fields.
fn shape(
    info: Option<&rmcp::model::ServerPeerInfo>,
    tools: &[rmcp::model::Tool],
    cut: bool,
    tools_list_ms: f64,
    connect_ms: f64,
) -> Value {
    use super::untrusted::{text, value, NAME_CAP, NOTICE, TEXT_CAP};
    let opt = |s: Option<&str>, cap: usize| s.map(|s| text(s, cap));
    let list: Vec<Value> = tools
        .iter()
        .map(|t| {
            json!({
                "name": text(&t.name, NAME_CAP),
                "description": opt(t.description.as_deref(), TEXT_CAP),
                "input_schema": value(&Value::Object((*t.input_schema).clone())),
                "output_schema": t.output_schema.as_ref().map(|s| value(&Value::Object((**s).clone()))),
                "annotations": t.annotations.as_ref().map(|a| value(&serde_json::to_value(a).unwrap_or_default())),
                "may_write": super::writes::may_write(t),
            })
        })
        .collect();
    let server = info
        .and_then(|i| i.server_info.as_ref())
        .map_or(json!({}), |s| {
            json!({
                "name": text(&s.name, NAME_CAP),
                "version": text(&s.version, NAME_CAP),
                "title": opt(s.title.as_deref(), NAME_CAP),
            })
        });
    json!({
        "untrusted": NOTICE,
        "server": server,
        "instructions": opt(info.and_then(|i| i.instructions.as_deref()), TEXT_CAP),
        "protocol_version": info.map(|i| i.protocol_version.to_string()),
        "tools": list,
        "tools_truncated": cut,
        "tools_list_ms": (tools_list_ms * 10.0).round() / 10.0,
        "connect_ms": (connect_ms * 10.0).round() / 10.0,
    })
}
