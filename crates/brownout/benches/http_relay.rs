//! Benchmark: what the HTTP relay adds to a `tools/call` over streamable HTTP.
//!
//! Run: `cargo bench -p brownout --bench http_relay` (release build). The upstream is a
//! minimal MCP streamable-HTTP server defined in this file, on its own tokio runtime, so the
//! relay's cost is visible: two instances, one answering JSON (`application/json`), one SSE
//! (`text/event-stream`, one `event: message` with an `id:`). brownout (`proxy http`) runs
//! as its own process, with no plan and with a plan whose faults never match. For scale, a
//! reference proxy (this bench re-run as a process: axum + reqwest like brownout, forwarding
//! bodies and the MCP headers, no MCP parsing, no engine) is measured the same way: the cost
//! of any process in the middle built on that stack.
//!
//! In the same run and in alternating rounds (the order of the paths rotates each round) it
//! measures, direct and through each proxy: per-call round trip (p50, p99) with one call in
//! flight on one session, for JSON and for SSE answers; throughput with 64 sessions calling
//! at once (each its own client and connection); the proxy's CPU per call. Then, on a fresh
//! relay, brownout's RSS with 1,000 idle sessions, and with half of them also holding a GET
//! SSE stream open. Prints tables and writes `target/bench/http_relay.json`. Medians over
//! rounds; these machines are noisy.

use futures::StreamExt;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

const ROUNDS: usize = 5;
const WARMUP_CALLS: usize = 200;
const LATENCY_CALLS: usize = 3000;
const SESSIONS: usize = 64;
const CALLS_PER_SESSION: usize = 200;
const IDLE_SESSIONS: usize = 1000;
/// Sessions being opened at once in the RSS phase.
const OPENING_AT_ONCE: usize = 32;
/// Any single HTTP request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The whole run; past it the relays are killed and the bench exits.
const WATCHDOG: Duration = Duration::from_secs(600);

/// The stdio bench's plan (message-level faults whose selectors never match), plus two
/// HTTP-level faults that never match either: every selector is evaluated on every message.
const NEVER_MATCHES: &str = "seed: 1\nfaults:\n  - {kind: latency, tools: [no_such_tool], added_ms: 100}\n  - {kind: error, methods: [no/such/method]}\n  - {kind: schema_drift, tools: [nothing_*], probability: 0.5}\n  - {kind: drop, arguments: {message: never}}\n  - {kind: http_status, status: 503, tools: [no_such_tool]}\n  - {kind: slow_stream, gap_ms: 100, tools: [nothing_*]}\n";

const ACCEPT: &str = "application/json, text/event-stream";
const PROTOCOL: &str = "2025-11-25";

/// A minimal MCP streamable-HTTP server: `initialize` (with `Mcp-Session-Id`),
/// notifications (202), `tools/list` (one tool, `echo`), `tools/call` of `echo` (answers the
/// `message` argument), `ping`; answers JSON or one SSE event. GET opens an SSE stream that
/// stays open (nothing is ever sent on it). Requests after `initialize` without a session id
/// are refused (400), so a relay that loses the header shows.
mod upstream {
    use axum::body::{Body, Bytes};
    use axum::http::{HeaderMap, Method, StatusCode};
    use axum::response::{IntoResponse, Response};
    use axum::Router;
    use futures::StreamExt;
    use serde_json::{json, Value};
    use std::net::SocketAddr;
    use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
    use std::sync::Arc;

    #[derive(Clone)]
    struct State {
        sse: bool,
        sessions: Arc<AtomicU64>,
        events: Arc<AtomicU64>,
        open_streams: Arc<AtomicI64>,
    }

    pub struct Upstream {
        pub url: String,
        /// GET streams open right now.
        pub open_streams: Arc<AtomicI64>,
    }

    /// Bind a free loopback port and serve on `rt`.
    pub fn start(rt: &tokio::runtime::Runtime, sse: bool) -> Upstream {
        let state = State {
            sse,
            sessions: Arc::default(),
            events: Arc::default(),
            open_streams: Arc::default(),
        };
        let open_streams = Arc::clone(&state.open_streams);
        let app = Router::new()
            .route("/mcp", axum::routing::any(handle))
            .with_state(state);
        let listener = rt
            .block_on(tokio::net::TcpListener::bind(SocketAddr::from((
                [127, 0, 0, 1],
                0,
            ))))
            .expect("bind the upstream");
        let addr = listener.local_addr().expect("upstream address");
        rt.spawn(async move {
            use axum::serve::ListenerExt;
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            let _ = axum::serve(listener, app).await;
        });
        Upstream {
            url: format!("http://{addr}/mcp"),
            open_streams,
        }
    }

    /// Counts an open GET stream for as long as it lives.
    struct Open(Arc<AtomicI64>);
    impl Drop for Open {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::Relaxed);
        }
    }

    async fn handle(
        axum::extract::State(s): axum::extract::State<State>,
        method: Method,
        headers: HeaderMap,
        body: Bytes,
    ) -> Response {
        let session = headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        if method == Method::GET {
            if session.is_none() {
                return (StatusCode::BAD_REQUEST, "no session").into_response();
            }
            s.open_streams.fetch_add(1, Ordering::Relaxed);
            let open = Open(Arc::clone(&s.open_streams));
            let stream =
                futures::stream::pending::<Result<Bytes, std::io::Error>>().map(move |x| {
                    let _ = &open;
                    x
                });
            return (
                [
                    ("content-type", "text/event-stream"),
                    ("cache-control", "no-cache"),
                ],
                Body::from_stream(stream),
            )
                .into_response();
        }
        if method == Method::DELETE {
            return StatusCode::OK.into_response();
        }
        if method != Method::POST {
            return StatusCode::METHOD_NOT_ALLOWED.into_response();
        }
        let Ok(msg) = serde_json::from_slice::<Value>(&body) else {
            return (StatusCode::BAD_REQUEST, "not JSON").into_response();
        };
        let m = msg.get("method").and_then(Value::as_str).unwrap_or("");
        if m != "initialize" && session.is_none() {
            return (StatusCode::BAD_REQUEST, "no Mcp-Session-Id").into_response();
        }
        let Some(id) = msg.get("id").cloned() else {
            return StatusCode::ACCEPTED.into_response(); // a notification or a response
        };
        let mut new_session = None;
        let answer = match m {
            "initialize" => {
                let n = s.sessions.fetch_add(1, Ordering::Relaxed) + 1;
                new_session = Some(n.to_string());
                json!({"jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": super::PROTOCOL,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "bench-upstream", "version": "1"}}})
            }
            "tools/list" => json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [{
                "name": "echo", "description": "Echo the message.",
                "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}},
                                "required": ["message"]}}]}}),
            "tools/call" => {
                let text = msg["params"]["arguments"]["message"].clone();
                json!({"jsonrpc": "2.0", "id": id,
                       "result": {"content": [{"type": "text", "text": text}]}})
            }
            "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
            _ => json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32601, "message": "method not found"}}),
        };
        let answer = answer.to_string();
        let mut r = if s.sse {
            let n = s.events.fetch_add(1, Ordering::Relaxed) + 1;
            (
                [
                    ("content-type", "text/event-stream"),
                    ("cache-control", "no-cache"),
                ],
                format!("event: message\nid: {n}\ndata: {answer}\n\n"),
            )
                .into_response()
        } else {
            ([("content-type", "application/json")], answer).into_response()
        };
        if let Some(id) = new_session {
            if let Ok(v) = id.parse() {
                r.headers_mut().insert("mcp-session-id", v);
            }
        }
        r
    }
}

/// Set on the reference proxy's process (this bench run again): the upstream URL.
const PLAIN_PROXY_ENV: &str = "BROWNOUT_HTTP_BENCH_PLAIN_PROXY";

/// The reference proxy: what any process in the middle built on brownout's stack costs.
/// A hyper server (axum) on a default multi-thread runtime, like brownout's; each request is
/// forwarded with reqwest (keep-alive pool) with its body and the MCP headers; the answer's
/// status and MCP headers come back with the body: a JSON body whole, an SSE body streamed
/// as it comes. No JSON parsing, no engine.
mod plain {
    use axum::body::{Body, Bytes};
    use axum::http::{HeaderMap, Method, StatusCode};
    use axum::response::{IntoResponse, Response};
    use axum::Router;

    const UP: [&str; 5] = [
        "content-type",
        "accept",
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
    ];
    const DOWN: [&str; 3] = ["content-type", "cache-control", "mcp-session-id"];

    pub fn main(upstream: String) -> ! {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let http = reqwest::Client::builder()
                .pool_max_idle_per_host(1024)
                .build()
                .expect("client");
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let addr = listener.local_addr().expect("address");
            // The line brownout prints, so the bench starts both the same way.
            eprintln!("brownout: relaying http://{addr}/mcp -> {upstream}");
            let app = Router::new()
                .route("/mcp", axum::routing::any(forward))
                .with_state((http, upstream));
            use axum::serve::ListenerExt;
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            let _ = axum::serve(listener, app).await;
        });
        std::process::exit(0)
    }

    async fn forward(
        axum::extract::State((http, upstream)): axum::extract::State<(reqwest::Client, String)>,
        method: Method,
        headers: HeaderMap,
        body: Bytes,
    ) -> Response {
        let mut req = http.request(method, &upstream).body(body);
        for name in UP {
            if let Some(v) = headers.get(name) {
                req = req.header(name, v);
            }
        }
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) => return (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
        };
        let mut out = Response::builder().status(resp.status());
        for name in DOWN {
            if let Some(v) = resp.headers().get(name) {
                out = out.header(name, v);
            }
        }
        let sse = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !sse {
            // A whole JSON answer, passed on with its length, as brownout does.
            return match resp.bytes().await {
                Ok(b) => out
                    .body(Body::from(b))
                    .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response()),
                Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
            };
        }
        let chunks = futures::stream::unfold(Some(resp), |r| async move {
            let mut r = r?;
            match r.chunk().await {
                Ok(Some(c)) => Some((Ok(c), Some(r))),
                Ok(None) => None,
                Err(e) => Some((Err(e), None)),
            }
        });
        out.body(Body::from_stream(chunks))
            .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response())
    }
}

/// The reference proxy, as a process.
fn start_plain_proxy(upstream: &str) -> Relay {
    let exe = std::env::current_exe().expect("this bench's path");
    let exe = exe.to_str().expect("a UTF-8 path");
    start_process(exe, &[], &[(PLAIN_PROXY_ENV, upstream)])
}

/// Pids of the proxy processes alive, for the watchdog.
static PIDS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// A proxy process (brownout or the reference proxy), killed when dropped (also on a panic).
struct Relay {
    child: Child,
    url: String,
}

impl Relay {
    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let pid = self.child.id();
        PIDS.lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|p| *p != pid);
    }
}

fn start_relay(exe: &str, upstream: &str, plan: Option<&std::path::Path>) -> Relay {
    let mut args: Vec<String> = ["proxy", "http", "--quiet", "--listen", "127.0.0.1:0"]
        .map(String::from)
        .to_vec();
    args.extend(["--upstream".into(), upstream.into()]);
    if let Some(p) = plan {
        args.extend(["--plan".into(), p.display().to_string()]);
    }
    start_process(exe, &args, &[])
}

/// Start a proxy and wait (20 s at most) for its `brownout: relaying URL -> …` line.
fn start_process(exe: &str, args: &[String], env: &[(&str, &str)]) -> Relay {
    let mut child = Command::new(exe)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {exe}: {e}"));
    PIDS.lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(child.id());
    let pid = child.id();
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel::<String>();
    // Everything brownout says besides its start line is shown: nothing is expected.
    std::thread::spawn(move || {
        let mut started = false;
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if started {
                eprintln!("  [brownout {pid}] {line}");
            } else if line.starts_with("brownout: relaying ") {
                started = true;
                let _ = tx.send(line);
            } else {
                eprintln!("  [brownout {pid}, starting] {line}");
            }
        }
    });
    let relay_line = rx.recv_timeout(Duration::from_secs(20));
    let mut relay = Relay {
        child,
        url: String::new(),
    };
    let line = match relay_line {
        Ok(l) => l,
        Err(_) => {
            let status = relay.child.try_wait();
            panic!("{exe} {args:?} did not print its `relaying` line within 20 s ({status:?})")
        }
    };
    relay.url = line["brownout: relaying ".len()..]
        .split(" -> ")
        .next()
        .unwrap_or_default()
        .to_string();
    relay
}

/// A client with keep-alive: sequential calls reuse one connection.
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(4)
        .tcp_nodelay(true)
        .build()
        .expect("client")
}

/// `initialize` and `notifications/initialized`; the session id.
async fn open_session(http: &reqwest::Client, url: &str) -> String {
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
async fn call(http: &reqwest::Client, url: &str, sid: &str, i: usize) -> bool {
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

#[derive(Clone, Copy, PartialEq, Debug)]
enum Path {
    Direct,
    Plain,
    Empty,
    NoMatch,
}

const PATHS: [Path; 4] = [Path::Direct, Path::Plain, Path::Empty, Path::NoMatch];

impl Path {
    fn name(self) -> &'static str {
        match self {
            Path::Direct => "direct",
            Path::Plain => "reference proxy (no MCP)",
            Path::Empty => "brownout, no plan",
            Path::NoMatch => "brownout, non-matching plan",
        }
    }
}

#[derive(Default, Clone)]
struct Sample {
    p50_us: f64,
    p99_us: f64,
    /// The proxy's user + system CPU per call over the timed latency calls.
    lat_cpu_us: f64,
    calls_per_s: f64,
    /// The proxy's user + system CPU per call over the throughput run.
    tput_cpu_us: f64,
}

/// utime + stime of a process, in microseconds (0 for no process).
fn cpu_us(pid: Option<u32>) -> f64 {
    let Some(pid) = pid else { return 0.0 };
    let ticks = 100.0; // USER_HZ on Linux
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let after = s.rsplit_once(')')?.1;
            let f: Vec<&str> = after.split_whitespace().collect();
            Some((f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?) / ticks * 1e6)
        })
        .unwrap_or(0.0)
}

fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One session, one call at a time: p50, p99 (µs), brownout's CPU per call.
async fn latency(url: &str, pid: Option<u32>, sse: bool) -> (f64, f64, f64) {
    let http = client();
    let sid = open_session(&http, url).await;
    for i in 0..WARMUP_CALLS {
        assert_eq!(call(&http, url, &sid, i).await, sse, "answer type");
    }
    let mut t = Vec::with_capacity(LATENCY_CALLS);
    let cpu0 = cpu_us(pid);
    for i in 0..LATENCY_CALLS {
        let s = Instant::now();
        call(&http, url, &sid, i).await;
        t.push(s.elapsed().as_secs_f64() * 1e6);
    }
    let cpu = (cpu_us(pid) - cpu0) / LATENCY_CALLS as f64;
    t.sort_by(f64::total_cmp);
    (pct(&t, 0.5), pct(&t, 0.99), cpu)
}

/// `SESSIONS` sessions, each its own client (own connection), each calling
/// `CALLS_PER_SESSION` times one after another, all at once: calls/s, brownout's CPU per call.
async fn throughput(url: &str, pid: Option<u32>) -> (f64, f64) {
    let opened = futures::future::join_all((0..SESSIONS).map(|_| async {
        let http = client();
        let sid = open_session(&http, url).await;
        for i in 0..10 {
            call(&http, url, &sid, i).await; // warm the connection
        }
        (http, sid)
    }))
    .await;
    let cpu0 = cpu_us(pid);
    let start = Instant::now();
    let tasks: Vec<_> = opened
        .into_iter()
        .map(|(http, sid)| {
            let url = url.to_string();
            tokio::spawn(async move {
                for i in 0..CALLS_PER_SESSION {
                    call(&http, &url, &sid, i).await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("a session failed");
    }
    let secs = start.elapsed().as_secs_f64();
    let calls = (SESSIONS * CALLS_PER_SESSION) as f64;
    (calls / secs, (cpu_us(pid) - cpu0) / calls)
}

/// Memory of the relay process at one moment.
#[derive(Default)]
struct Mem {
    rss_kib: u64,
    hwm_kib: u64,
    fds: usize,
    threads: u64,
}

fn mem_json(m: &Mem) -> serde_json::Value {
    json!({"rss_mib": m.rss_kib as f64 / 1024.0, "hwm_mib": m.hwm_kib as f64 / 1024.0,
           "fds": m.fds, "threads": m.threads})
}

fn idle_json(i: &Idle) -> serde_json::Value {
    json!({
        "sessions": i.sessions, "get_streams": i.streams,
        "get_streams_open_at_upstream": i.upstream_streams,
        "seconds_to_open": i.secs_to_open, "call_afterwards_ok": i.call_after_ok,
        "start": mem_json(&i.start),
        "sessions_only": mem_json(&i.sessions_only),
        "with_get_streams": mem_json(&i.with_streams),
    })
}

fn mem(pid: u32) -> Mem {
    Mem {
        rss_kib: status_kib(pid, "VmRSS:"),
        hwm_kib: status_kib(pid, "VmHWM:"),
        threads: status_kib(pid, "Threads:"),
        fds: std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|d| d.count())
            .unwrap_or(0),
    }
}

struct Idle {
    sessions: usize,
    streams: usize,
    upstream_streams: i64,
    start: Mem,
    /// `IDLE_SESSIONS` initialized sessions, no GET stream.
    sessions_only: Mem,
    /// The same, and every second one holding a GET stream.
    with_streams: Mem,
    secs_to_open: f64,
    call_after_ok: bool,
}

/// A fresh proxy; `IDLE_SESSIONS` sessions, each its own client (keep-alive connection),
/// initialized and left idle; memory. Then every second session opens a GET SSE stream and
/// makes one more call (so it has a second connection, as a client with a standing stream
/// does); memory again.
fn idle_sessions(rt: &tokio::runtime::Runtime, relay: Relay, up: &upstream::Upstream) -> Idle {
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

fn main() {
    if let Ok(upstream) = std::env::var(PLAIN_PROXY_ENV) {
        plain::main(upstream);
    }
    let exe = env!("CARGO_BIN_EXE_brownout");
    assert!(
        std::path::Path::new(exe).exists(),
        "{exe} is missing: build it with `cargo build --release -p brownout`"
    );
    std::thread::spawn(|| {
        std::thread::sleep(WATCHDOG);
        eprintln!("http_relay bench: over {WATCHDOG:?}, giving up");
        for pid in PIDS.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(*pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        std::process::exit(3);
    });
    let wall = Instant::now();
    // The upstream's runtime and the load generator's are separate (two threads each).
    let up_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("upstream")
        .enable_all()
        .build()
        .expect("upstream runtime");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("client")
        .enable_all()
        .build()
        .expect("client runtime");
    let ups = [
        upstream::start(&up_rt, false),
        upstream::start(&up_rt, true),
    ];
    let dir = std::env::temp_dir().join(format!("brownout-http-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let plan = dir.join("never.yaml");
    std::fs::write(&plan, NEVER_MATCHES).expect("plan");

    // One sanity pass per upstream and path: tools/list and the answer's content type.
    for (m, up) in ups.iter().enumerate() {
        for p in [None, Some(plan.as_path())] {
            let relay = start_relay(exe, &up.url, p);
            rt.block_on(async {
                for url in [&up.url, &relay.url] {
                    let http = client();
                    let sid = open_session(&http, url).await;
                    let resp = http
                        .post(url)
                        .header("content-type", "application/json")
                        .header("accept", ACCEPT)
                        .header("mcp-session-id", &sid)
                        .header("mcp-protocol-version", PROTOCOL)
                        .timeout(REQUEST_TIMEOUT)
                        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
                        .send()
                        .await
                        .expect("tools/list");
                    let body = resp.text().await.expect("tools/list body");
                    assert!(body.contains(r#""name":"echo""#), "tools/list: {body}");
                    assert_eq!(call(&http, url, &sid, 2).await, m == 1, "content type");
                }
            });
        }
    }

    // samples[answer][path], one per round; answer 0 is JSON, 1 SSE.
    let mut samples: Vec<Vec<Vec<Sample>>> = vec![vec![Vec::new(); PATHS.len()]; 2];
    for round in 0..ROUNDS {
        for (m, up) in ups.iter().enumerate() {
            // A fresh relay per path, answer type and round.
            let relays: Vec<Option<Relay>> = PATHS
                .iter()
                .map(|p| match p {
                    Path::Direct => None,
                    Path::Plain => Some(start_plain_proxy(&up.url)),
                    Path::Empty => Some(start_relay(exe, &up.url, None)),
                    Path::NoMatch => Some(start_relay(exe, &up.url, Some(&plan))),
                })
                .collect();
            let target = |i: usize| {
                relays[i]
                    .as_ref()
                    .map_or((up.url.clone(), None), |r| (r.url.clone(), Some(r.pid())))
            };
            let mut s = vec![Sample::default(); PATHS.len()];
            // Alternating: latency of every path, then throughput of every path; the order
            // of the paths rotates each round.
            let order: Vec<usize> = (0..PATHS.len())
                .map(|k| (k + round) % PATHS.len())
                .collect();
            for &i in &order {
                let (url, pid) = target(i);
                let (p50, p99, cpu) = rt.block_on(latency(&url, pid, m == 1));
                (s[i].p50_us, s[i].p99_us, s[i].lat_cpu_us) = (p50, p99, cpu);
            }
            for &i in &order {
                let (url, pid) = target(i);
                let (cps, cpu) = rt.block_on(throughput(&url, pid));
                (s[i].calls_per_s, s[i].tput_cpu_us) = (cps, cpu);
            }
            eprintln!(
                "round {}/{ROUNDS} {}: p50 {:.0}/{:.0}/{:.0}/{:.0} µs, p99 {:.0}/{:.0}/{:.0}/{:.0} µs, {SESSIONS} sessions {:.0}/{:.0}/{:.0}/{:.0} calls/s (direct/reference/no plan/non-matching)",
                round + 1,
                if m == 0 { "JSON" } else { "SSE " },
                s[0].p50_us, s[1].p50_us, s[2].p50_us, s[3].p50_us,
                s[0].p99_us, s[1].p99_us, s[2].p99_us, s[3].p99_us,
                s[0].calls_per_s, s[1].calls_per_s, s[2].calls_per_s, s[3].calls_per_s,
            );
            for (i, x) in s.into_iter().enumerate() {
                samples[m][i].push(x);
            }
        }
    }

    // brownout, and the reference proxy for scale, both fresh, to the SSE upstream.
    let idle = idle_sessions(&rt, start_relay(exe, &ups[1].url, None), &ups[1]);
    let idle_ref = idle_sessions(&rt, start_plain_proxy(&ups[1].url), &ups[1]);

    let med =
        |m: usize, i: usize, f: fn(&Sample) -> f64| median(samples[m][i].iter().map(f).collect());
    // Added: the per-round difference to the direct path of the same round, then the median.
    let added = |m: usize, i: usize, f: fn(&Sample) -> f64| {
        median(
            samples[m][i]
                .iter()
                .zip(&samples[m][0])
                .map(|(r, d)| f(r) - f(d))
                .collect(),
        )
    };
    let ratio = |m: usize, i: usize| {
        median(
            samples[m][i]
                .iter()
                .zip(&samples[m][0])
                .map(|(r, d)| r.calls_per_s / d.calls_per_s)
                .collect(),
        )
    };
    println!(
        "\nHTTP relay vs direct, {ROUNDS} rounds, medians ({LATENCY_CALLS} sequential calls on one session per round for latency; {SESSIONS} sessions × {CALLS_PER_SESSION} calls for throughput)"
    );
    println!("| answer | path | p50 µs | p99 µs | added p50 µs | added p99 µs | calls/s, {SESSIONS} sessions | % of direct | proxy CPU µs/call (1 / {SESSIONS} sessions) |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut rows = Vec::new();
    for (m, per_path) in samples.iter().enumerate() {
        let mode = if m == 0 { "JSON" } else { "SSE" };
        for (i, p) in PATHS.iter().enumerate() {
            let (p50, p99, cps) = (
                med(m, i, |s| s.p50_us),
                med(m, i, |s| s.p99_us),
                med(m, i, |s| s.calls_per_s),
            );
            let (a50, a99, r, c1, c64) = (
                added(m, i, |s| s.p50_us),
                added(m, i, |s| s.p99_us),
                ratio(m, i) * 100.0,
                med(m, i, |s| s.lat_cpu_us),
                med(m, i, |s| s.tput_cpu_us),
            );
            if i == 0 {
                println!(
                    "| {mode} | {} | {p50:.0} | {p99:.0} | — | — | {cps:.0} | 100 % | — |",
                    p.name()
                );
            } else {
                println!("| {mode} | {} | {p50:.0} | {p99:.0} | **{a50:.0}** | **{a99:.0}** | {cps:.0} | **{r:.0} %** | {c1:.0} / {c64:.0} |", p.name());
            }
            rows.push(json!({
                "answer": mode, "path": p.name(), "p50_us": p50, "p99_us": p99,
                "added_p50_us": a50, "added_p99_us": a99,
                "calls_per_s_64_sessions": cps, "pct_of_direct": r,
                "proxy_cpu_us_per_call_sequential": c1,
                "proxy_cpu_us_per_call_64_sessions": c64,
                "rounds": per_path[i].iter().map(|s| json!({
                    "p50_us": s.p50_us, "p99_us": s.p99_us, "calls_per_s": s.calls_per_s})).collect::<Vec<_>>(),
            }));
        }
    }
    let mib = |k: u64| k as f64 / 1024.0;
    println!(
        "\n{} idle sessions through a fresh proxy (SSE upstream; brownout with no plan), each its own client; opened at {:.0}/s",
        idle.sessions,
        idle.sessions as f64 / idle.secs_to_open
    );
    println!("| proxy | state | VmRSS | VmHWM | open fds | threads |");
    println!("|---|---|---:|---:|---:|---:|");
    for (who, i) in [("brownout", &idle), ("reference proxy", &idle_ref)] {
        for (what, m) in [
            ("at start".to_string(), &i.start),
            (format!("{} idle sessions", i.sessions), &i.sessions_only),
            (
                format!(
                    "… and {} of them holding a GET SSE stream ({} open at the upstream)",
                    i.streams, i.upstream_streams
                ),
                &i.with_streams,
            ),
        ] {
            println!(
                "| {who} | {what} | **{:.1} MiB** | {:.1} MiB | {} | {} |",
                mib(m.rss_kib),
                mib(m.hwm_kib),
                m.fds,
                m.threads
            );
        }
        println!(
            "{who}: a call afterwards {}",
            if i.call_after_ok {
                "answered"
            } else {
                "TIMED OUT"
            }
        );
    }
    println!("whole run {:.0} s", wall.elapsed().as_secs_f64());

    let out = json!({
        "rounds": ROUNDS,
        "latency_calls": LATENCY_CALLS,
        "sessions": SESSIONS,
        "calls_per_session": CALLS_PER_SESSION,
        "rows": rows,
        "idle_brownout": idle_json(&idle),
        "idle_reference_proxy": idle_json(&idle_ref),
    });
    let dir_out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
    let _ = std::fs::create_dir_all(&dir_out);
    let _ = std::fs::write(dir_out.join("http_relay.json"), format!("{out:#}\n"));
    let _ = std::fs::remove_dir_all(&dir);
    drop(rt);
    drop(up_rt);
}
