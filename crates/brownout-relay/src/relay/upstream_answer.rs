//! One answer of a server at a URL, carried to the stdio client of
//! `proxy stdio --upstream` message by message, through the engine.
//!
//! Every request a POST carried is answered, one way or another: by the server (JSON, or
//! SSE events), or by brownout with a clear JSON-RPC error when the server could not. An
//! SSE stream that ends before its answer is resumed with `Last-Event-ID` (a GET, as the
//! streamable HTTP transport says) when it gave an event id; without one, or when resuming
//! fails, the calls still owed get an error. A body that is not JSON-RPC is never written to
//! the client: its calls get an error naming the status and content type.

use super::head::{Headers, ACCEPT, CONTENT_TYPE, LAST_EVENT_ID};
use super::http::{content_type, is_json, is_sse};
use super::http_back::{describe, Pump, Upstream};
use super::sse;
use super::up_client::UpResponse;
use brownout_core::jsonrpc::{classify, Message};
use hyper::Method;
use std::time::Duration;

/// Resumptions of one answer's stream before brownout gives up on it.
const MAX_RESUMES: u32 = 5;

/// The longest wait before resuming, whatever `retry:` the server asked for.
const MAX_RETRY: Duration = Duration::from_secs(5);

/// How an SSE stream ended.
enum End {
    /// The server closed it.
    Closed,
    /// The client went away.
    ClientGone,
    /// It broke (the reason).
    Failed(String),
}

/// Carry `resp` (a 2xx answer) to the client; answer with an error every call it leaves
/// unanswered. `resume` are the headers of a GET on the session (id, protocol version).
pub async fn carry(pump: &mut Pump, back: &Upstream, resume: Headers, resp: UpResponse) {
    let status = resp.status();
    let ct = content_type(resp.headers()).to_string();
    if is_sse(resp.headers()) {
        return carry_stream(pump, back, resume, resp).await;
    }
    let json = is_json(resp.headers());
    let mut resp = resp;
    let mut body = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(c)) if json => {
                if body.len() + c.len() > pump.max_body {
                    let why = format!(
                        "the upstream MCP server's answer is over the limit of {} bytes",
                        pump.max_body
                    );
                    return pump.fail_owed(&why).await;
                }
                body.extend_from_slice(&c);
            }
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(e) => return pump.fail_owed(&describe(&e)).await,
        }
    }
    if json && !body.iter().all(u8::is_ascii_whitespace) {
        if matches!(classify(&body), Message::Invalid(_)) {
            let why = format!(
                "the upstream MCP server answered HTTP {status} ({ct}) with a body that is not JSON-RPC ({} bytes: {})",
                body.len(),
                preview(&body)
            );
            return pump.fail_owed(&why).await;
        }
        if !deliver(pump, body).await {
            return;
        }
    }
    if !pump.owed.is_empty() {
        let why = format!(
            "the upstream MCP server answered HTTP {status} ({}) without a response to this request",
            if ct.is_empty() { "no content type" } else { &ct }
        );
        pump.fail_owed(&why).await;
    }
}

async fn carry_stream(pump: &mut Pump, back: &Upstream, resume: Headers, mut resp: UpResponse) {
    let mut last_id: Option<String> = None;
    let mut retry: Option<u64> = None;
    let mut resumes = 0;
    loop {
        let why = match read_stream(pump, &mut resp, &mut last_id, &mut retry).await {
            End::ClientGone => return,
            _ if pump.owed.is_empty() => return,
            End::Closed => "the upstream MCP server ended the stream before answering".to_string(),
            End::Failed(why) => why,
        };
        let mut h = resume.clone();
        if !last_id
            .as_deref()
            .is_some_and(|id| h.set(&LAST_EVENT_ID, id))
        {
            return pump
                .fail_owed(&format!("{why} (no event id to resume from)"))
                .await;
        }
        if resumes == MAX_RESUMES {
            let why = format!("{why}; gave up after resuming it {MAX_RESUMES} times");
            return pump.fail_owed(&why).await;
        }
        resumes += 1;
        if let Some(ms) = retry {
            tokio::time::sleep(Duration::from_millis(ms).min(MAX_RETRY)).await;
        }
        h.remove(&CONTENT_TYPE);
        h.set(&ACCEPT, "text/event-stream");
        resp = match back.send(Method::GET, &back.path, h, Vec::new()).await {
            Ok(r) if r.status().is_success() && is_sse(r.headers()) => r,
            Ok(r) => {
                let why = format!(
                    "{why}; resuming it with Last-Event-ID was refused (HTTP {})",
                    r.status()
                );
                return pump.fail_owed(&why).await;
            }
            Err(e) => {
                let why = format!("{why}; resuming it failed: {}", describe(&e));
                return pump.fail_owed(&why).await;
            }
        };
    }
}

/// Read one SSE stream to its end, noting the last event id and `retry:`.
async fn read_stream(
    pump: &mut Pump,
    resp: &mut UpResponse,
    last_id: &mut Option<String>,
    retry: &mut Option<u64>,
) -> End {
    let mut parser = sse::Parser::new();
    let mut events = Vec::new();
    loop {
        let chunk = match resp.chunk().await {
            Ok(Some(c)) => c,
            Ok(None) => return End::Closed,
            Err(e) => return End::Failed(describe(&e)),
        };
        if let Err(e) = parser.feed(&chunk, pump.max_body, &mut events) {
            return End::Failed(e.to_string());
        }
        for ev in events.drain(..) {
            if let Some(id) = ev.id.as_deref().filter(|id| !id.is_empty()) {
                *last_id = Some(id.to_string());
            }
            if ev.retry.is_some() {
                *retry = ev.retry;
            }
            let is_message = ev.event.as_deref().is_none_or(|e| e == "message");
            let Some(bytes) = ev.data.as_ref().map(|d| AsRef::<[u8]>::as_ref(d).to_vec()) else {
                continue;
            };
            if !is_message || bytes.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if matches!(classify(&bytes), Message::Invalid(_)) {
                eprintln!(
                    "brownout: the upstream MCP server sent an SSE event that is not JSON-RPC ({}); skipped",
                    preview(&bytes)
                );
                continue;
            }
            if !deliver(pump, bytes).await {
                return End::ClientGone;
            }
        }
    }
}

/// One JSON-RPC message from the server, through the engine, on to the client.
async fn deliver(pump: &mut Pump, bytes: Vec<u8>) -> bool {
    pump.message(bytes, None).await
}

/// The start of a body, for an error message.
fn preview(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(60)]);
    let text: String = text.chars().filter(|c| !c.is_control()).collect();
    if bytes.len() > 60 {
        format!("`{text}…`")
    } else {
        format!("`{text}`")
    }
}
