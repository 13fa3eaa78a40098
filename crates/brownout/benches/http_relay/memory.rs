//! The memory phase: a fresh relay's RSS with idle sessions, then with GET streams open.

use super::*;

/// Memory of the relay process at one moment.
#[derive(Default)]
pub(crate) struct Mem {
    pub(crate) rss_kib: u64,
    pub(crate) hwm_kib: u64,
    pub(crate) fds: usize,
    pub(crate) threads: u64,
}

pub(crate) fn mem_json(m: &Mem) -> serde_json::Value {
    json!({"rss_mib": m.rss_kib as f64 / 1024.0, "hwm_mib": m.hwm_kib as f64 / 1024.0,
           "fds": m.fds, "threads": m.threads})
}

pub(crate) fn idle_json(i: &Idle) -> serde_json::Value {
    json!({
        "sessions": i.sessions, "get_streams": i.streams,
        "get_streams_open_at_upstream": i.upstream_streams,
        "seconds_to_open": i.secs_to_open, "call_afterwards_ok": i.call_after_ok,
        "start": mem_json(&i.start),
        "sessions_only": mem_json(&i.sessions_only),
        "with_get_streams": mem_json(&i.with_streams),
    })
}

pub(crate) fn mem(pid: u32) -> Mem {
    Mem {
        rss_kib: status_kib(pid, "VmRSS:"),
        hwm_kib: status_kib(pid, "VmHWM:"),
        threads: status_kib(pid, "Threads:"),
        fds: std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|d| d.count())
            .unwrap_or(0),
    }
}

pub(crate) struct Idle {
    pub(crate) sessions: usize,
    pub(crate) streams: usize,
    pub(crate) upstream_streams: i64,
    pub(crate) start: Mem,
    /// `IDLE_SESSIONS` initialized sessions, no GET stream.
    pub(crate) sessions_only: Mem,
    /// The same, and every second one holding a GET stream.
    pub(crate) with_streams: Mem,
    pub(crate) secs_to_open: f64,
    pub(crate) call_after_ok: bool,
}

/// A fresh proxy; `IDLE_SESSIONS` sessions, each its own client (keep-alive connection),
/// initialized and left idle; memory. Then every second session opens a GET SSE stream and
/// makes one more call (so it has a second connection, as a client with a standing stream
/// does); memory again.
pub(crate) fn idle_sessions(
    rt: &tokio::runtime::Runtime,
    relay: Relay,
    up: &upstream::Upstream,
) -> Idle {
    let pid = relay.pid();
    let url = relay.url.clone();
    // Let it settle, then its resting size.
    std::thread::sleep(Duration::from_millis(300));
    let start_mem = mem(pid);
    let streams_before = up.open_streams.load(Ordering::Relaxed);
    let start = Instant::now();
    let sessions: Vec<(reqwest::Client, String)> = rt.block_on(async {
        futures::stream::iter(0..IDLE_SESSIONS)
            .map(|_| {
                let url = url.clone();
                async move {
                    let http = client();
                    let sid = open_session(&http, &url).await;
                    (http, sid)
                }
            })
            .buffer_unordered(OPENING_AT_ONCE)
            .collect()
            .await
    });
    let secs_to_open = start.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_secs(1));
    let sessions_only = mem(pid);
    let streams: Vec<reqwest::Response> = rt.block_on(async {
        futures::stream::iter(sessions.iter().step_by(2).enumerate())
            .map(|(n, (http, sid))| {
                let url = url.clone();
                async move {
                    let resp = tokio::time::timeout(
                        REQUEST_TIMEOUT,
                        http.get(&url)
                            .header("accept", "text/event-stream")
                            .header("mcp-session-id", sid)
                            .header("mcp-protocol-version", PROTOCOL)
                            .send(),
                    )
                    .await
                    .unwrap_or_else(|_| panic!("GET stream {n}: no answer in 10 s"))
                    .unwrap_or_else(|e| panic!("GET stream {n}: {e}"));
                    assert!(resp.status().is_success(), "GET stream: {}", resp.status());
                    let sse = resp
                        .headers()
                        .get("content-type")
                        .and_then(|v| v.to_str().ok())
                        .is_some_and(|v| v.starts_with("text/event-stream"));
                    assert!(sse, "GET stream {n}: not text/event-stream");
                    call(http, &url, sid, n).await;
                    resp
                }
            })
            .buffer_unordered(OPENING_AT_ONCE)
            .collect()
            .await
    });
    std::thread::sleep(Duration::from_secs(1));
    let with_streams = mem(pid);
    let upstream_streams = up.open_streams.load(Ordering::Relaxed) - streams_before;
    // The relay still answers with all of them open.
    let (http, sid) = &sessions[1];
    let call_after_ok = rt.block_on(async {
        tokio::time::timeout(REQUEST_TIMEOUT, call(http, &url, sid, 7))
            .await
            .is_ok()
    });
    let n_streams = streams.len();
    let n_sessions = sessions.len();
    drop(streams);
    drop(sessions);
    drop(relay);
    Idle {
        sessions: n_sessions,
        streams: n_streams,
        upstream_streams,
        start: start_mem,
        sessions_only,
        with_streams,
        secs_to_open,
        call_after_ok,
    }
}
