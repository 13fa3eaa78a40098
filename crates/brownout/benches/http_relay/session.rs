//! An MCP client over streamable HTTP, as the bench drives it: sessions and `tools/call echo`.

use super::*;

/// A client with keep-alive: sequential calls reuse one connection.
pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(4)
        .tcp_nodelay(true)
        .build()
        .expect("client")
}

/// `initialize` and `notifications/initialized`; the session id.
pub(crate) async fn open_session(http: &reqwest::Client, url: &str) -> String {
    let resp = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", ACCEPT)
        .timeout(REQUEST_TIMEOUT)
        .body(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": PROTOCOL, "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"}}})
            .to_string(),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("initialize {url}: {e}"));
    assert!(resp.status().is_success(), "initialize: {}", resp.status());
    let sid = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("an Mcp-Session-Id")
        .to_string();
    let body = resp.bytes().await.expect("initialize body");
    assert!(
        std::str::from_utf8(&body).is_ok_and(|b| b.contains(PROTOCOL)),
        "initialize answer: {body:?}"
    );
    let resp = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", ACCEPT)
        .header("mcp-session-id", &sid)
        .header("mcp-protocol-version", PROTOCOL)
        .timeout(REQUEST_TIMEOUT)
        .body(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .send()
        .await
        .expect("notifications/initialized");
    assert_eq!(resp.status().as_u16(), 202, "notifications/initialized");
    let _ = resp.bytes().await;
    sid
}

/// One `tools/call echo`; checks the answer is this call's. Whether it came as SSE.
pub(crate) async fn call(http: &reqwest::Client, url: &str, sid: &str, i: usize) -> bool {
    let resp = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", ACCEPT)
        .header("mcp-session-id", sid)
        .header("mcp-protocol-version", PROTOCOL)
        .timeout(REQUEST_TIMEOUT)
        .body(format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"m{i}"}}}}}}"#
        ))
        .send()
        .await
        .unwrap_or_else(|e| panic!("tools/call {url}: {e}"));
    assert!(resp.status().is_success(), "tools/call: {}", resp.status());
    let sse = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let body = resp.bytes().await.expect("tools/call body");
    let text = std::str::from_utf8(&body).unwrap_or("");
    assert!(
        text.contains(&format!(r#""text":"m{i}""#)),
        "tools/call {i}: unexpected answer {text:?}"
    );
    sse
}
