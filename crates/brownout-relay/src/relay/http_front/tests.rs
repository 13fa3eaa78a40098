//! Unit tests of the HTTP front as a library: started in-process on a listener with a back,
//! stopped through its handle.

use super::*;
use crate::relay::http_back::Upstream;
use crate::relay::url_back::UrlBack;
use crate::relay::RelayOptions;
use axum::routing::post;
use brownout_core::Plan;

const ANSWER: &str = r#"{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}"#;

/// A server at a URL that answers every POST with [`ANSWER`].
async fn upstream() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let app = Router::new().route(
        "/mcp",
        post(|| async { ([("content-type", "application/json")], ANSWER) }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

#[tokio::test]
async fn an_http_relay_runs_in_process_on_a_listener_and_stops_through_its_handle() {
    let server = upstream().await;
    let opts = RelayOptions {
        driver: driver::<UrlBack>(),
        ..RelayOptions::default()
    };
    let relay = Arc::new(Relay::new(Plan::empty(), &opts, None));
    let up = Upstream::new(&format!("http://{server}/mcp"), 1 << 20).expect("url");
    let back = Arc::new(UrlBack::new(Arc::clone(&relay), Arc::new(up), 16));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let local = listener.local_addr().expect("addr");
    let front = Arc::new(Front::new(
        Arc::clone(&relay),
        back,
        FrontOptions::default(),
        &local,
    ));
    let running = start(front, listener).expect("start");
    assert_eq!(running.addr(), local);

    let answer = reqwest::Client::new()
        .post(format!("http://{local}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#)
        .send()
        .await
        .expect("through the relay");
    assert_eq!(answer.status(), 200);
    assert_eq!(
        answer.text().await.expect("body"),
        ANSWER,
        "passed byte for byte"
    );

    tokio::time::timeout(Duration::from_secs(20), running.stop())
        .await
        .expect("stops within the grace period")
        .expect("served without error");
    let report = relay.finish().await;
    assert_eq!(report.calls, 1, "the call went through the engine");
    assert!(
        tokio::net::TcpStream::connect(local).await.is_err(),
        "no longer listening"
    );
}

#[test]
fn a_relay_is_named_and_empowered_by_its_front_and_back() {
    use crate::relay::child_back::ChildBack;
    let url = driver::<UrlBack>();
    assert_eq!(url.name(), "`proxy http --upstream`");
    assert!(url.can.has(Capability::ShapeStreams));
    assert!(!url.can.has(Capability::SignalProcess));
    let child = driver::<ChildBack>();
    assert_eq!(child.name(), "`proxy http -- CMD`");
    assert!(child.can.has(Capability::SignalProcess) && child.can.has(Capability::ProcessTimers));
    let stdio = crate::relay::stdio::driver::<ChildBack>();
    assert_eq!(stdio.name(), "`proxy stdio -- CMD`");
    assert!(!stdio.can.has(Capability::ShapeStreams));
    assert_eq!(
        crate::relay::stdio::driver::<UrlBack>().name(),
        "`proxy stdio --upstream`"
    );
}

/// A front on a fresh listener before the URL back at `server`, with `opts`.
async fn front_to(
    server: SocketAddr,
    opts: FrontOptions,
    idle: Duration,
) -> (Arc<Relay>, Arc<UrlBack>, Running) {
    let ropts = RelayOptions {
        driver: driver::<UrlBack>(),
        ..RelayOptions::default()
    };
    let relay = Arc::new(Relay::new(Plan::empty(), &ropts, None));
    let up = Upstream::new(&format!("http://{server}/mcp"), 1 << 20).expect("url");
    let back = Arc::new(UrlBack::new(Arc::clone(&relay), Arc::new(up), 16).with_idle(idle));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let local = listener.local_addr().expect("addr");
    let front = Arc::new(Front::new(
        Arc::clone(&relay),
        Arc::clone(&back),
        opts,
        &local,
    ));
    (relay, back, start(front, listener).expect("start"))
}

/// GET and DELETE with session ids a client makes up (the server refuses them) leave
/// nothing behind; a session that did exist is forgotten after `--session-idle`, not the
/// engine's default ten minutes.
#[tokio::test]
async fn made_up_session_ids_hold_nothing_and_idle_sessions_are_forgotten() {
    let server = upstream().await;
    let (_relay, back, running) =
        front_to(server, FrontOptions::default(), Duration::from_secs(1)).await;
    let url = format!("http://{}/mcp", running.addr());
    let client = reqwest::Client::new();
    for i in 0..300 {
        let method = if i % 2 == 0 {
            reqwest::Method::GET
        } else {
            reqwest::Method::DELETE
        };
        let r = client
            .request(method, &url)
            .header("mcp-session-id", format!("made-up-{i}"))
            .send()
            .await
            .expect("answered");
        assert!(!r.status().is_success(), "the server refuses made-up ids");
    }
    assert_eq!(back.sessions_held(), 0, "made-up session ids were kept");

    let posted = client
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", "real-1")
        .body(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#)
        .send()
        .await
        .expect("through the relay");
    assert_eq!(posted.status(), 200);
    assert_eq!(back.sessions_held(), 1, "a POSTed session has a key");
    // Forgotten after the idle setting (1 s here): checked for a generous while.
    let mut held = 1;
    for _ in 0..120 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        held = back.sessions_held();
        if held == 0 {
            break;
        }
    }
    assert_eq!(held, 0, "an idle session outlived --session-idle");
    running.stop().await.expect("stops");
}

/// At `max_connections`, connections holding half a request head make room for new ones
/// (the oldest is closed), so a flood of them cannot lock a client out.
#[tokio::test]
async fn the_connection_cap_closes_idle_connections_to_make_room() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = upstream().await;
    let mut opts = FrontOptions {
        max_connections: 4,
        ..FrontOptions::default()
    };
    // Long enough that only the cap, not the header timeout, closes anything here.
    opts.timeouts.header = Duration::from_secs(600);
    let (_relay, _back, running) = front_to(server, opts, Duration::from_secs(600)).await;
    let addr = running.addr();
    let mut held = Vec::new();
    for _ in 0..12 {
        let mut c = tokio::net::TcpStream::connect(addr).await.expect("connect");
        c.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            .await
            .expect("half a head");
        held.push(c);
    }
    let answer = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#)
        .send()
        .await
        .expect("a client is served past a flood of half-sent heads");
    assert_eq!(answer.status(), 200);
    // The first ones opened were closed by the relay (end of stream, or a reset).
    let mut closed = 0;
    for c in held.iter_mut().take(8) {
        let mut buf = [0u8; 64];
        match tokio::time::timeout(Duration::from_secs(20), c.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => closed += 1,
            _ => {}
        }
    }
    assert_eq!(closed, 8, "connections past the cap were not closed");
    running.stop().await.expect("stops");
}

/// A front with at most four connections in front of [`upstream`].
async fn capped_at_four() -> (Arc<Relay>, Arc<UrlBack>, Running) {
    let opts = FrontOptions {
        max_connections: 4,
        ..FrontOptions::default()
    };
    front_to(upstream().await, opts, Duration::from_secs(600)).await
}

/// Send one request on a kept-alive raw connection and read its whole answer (the relay
/// answers a JSON request with a `content-length`).
async fn round_trip(c: &mut tokio::net::TcpStream) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    c.write_all(head.as_bytes()).await.expect("request");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = tokio::time::timeout(Duration::from_secs(30), c.read(&mut buf))
            .await
            .expect("an answer within 30 s")
            .expect("read");
        assert!(n > 0, "closed before the answer was whole");
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got).to_string();
        let Some(end) = text.find("\r\n\r\n") else {
            continue;
        };
        let length: usize = text[..end]
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().parse().expect("a length"))
            })
            .expect("a content-length");
        if got.len() >= end + 4 + length {
            return text;
        }
    }
}

/// At the cap, the connection idle longest makes room, not the oldest one: a client's pool
/// reuses the connection it used last, so closing the oldest would cut the one in use.
#[tokio::test]
async fn the_connection_cap_closes_the_connection_idle_longest() {
    use tokio::io::AsyncReadExt;
    let (_relay, _back, running) = capped_at_four().await;
    let addr = running.addr();
    let mut conns = Vec::new();
    for _ in 0..4 {
        let mut c = tokio::net::TcpStream::connect(addr).await.expect("connect");
        assert!(round_trip(&mut c).await.starts_with("HTTP/1.1 200"));
        conns.push(c);
    }
    // The oldest connection is used again: now the second one has been idle longest.
    assert!(round_trip(&mut conns[0]).await.starts_with("HTTP/1.1 200"));
    let mut fifth = tokio::net::TcpStream::connect(addr).await.expect("connect");
    assert!(round_trip(&mut fifth).await.starts_with("HTTP/1.1 200"));
    let mut buf = [0u8; 64];
    let second = tokio::time::timeout(Duration::from_secs(20), conns[1].read(&mut buf)).await;
    assert!(
        matches!(second, Ok(Ok(0)) | Ok(Err(_))),
        "the connection idle longest was not closed: {second:?}"
    );
    // The oldest one, used last, still serves.
    assert!(round_trip(&mut conns[0]).await.starts_with("HTTP/1.1 200"));
    running.stop().await.expect("stops");
}

/// Review G4: at the cap, connections that each keep a request in flight (a head sent, its
/// body trickled) locked every other client out: a new connection was closed at once for as
/// long as the trickle went on. The client holding the most connections now gives one up.
#[tokio::test]
async fn a_client_holding_every_connection_busy_gives_one_up_to_another() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (_relay, _back, running) = capped_at_four().await;
    let addr = running.addr();
    let mut held = Vec::new();
    for _ in 0..4 {
        let mut c = tokio::net::TcpStream::connect(addr).await.expect("connect");
        c.write_all(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n\
              accept: application/json, text/event-stream\r\ncontent-length: 100000\r\n\r\n{",
        )
        .await
        .expect("a head and the body's first byte");
        held.push(c);
    }
    // Another client, from another address (127.0.0.2 reaches the loopback listener).
    let other = reqwest::Client::builder()
        .local_address(std::net::IpAddr::from([127, 0, 0, 2]))
        .build()
        .expect("client");
    let answer = other
        .post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#)
        .send()
        .await
        .expect("another client is served while one holds every connection busy");
    assert_eq!(answer.status(), 200);
    // One of the busy client's connections made room (polled until a deadline).
    let until = std::time::Instant::now() + Duration::from_secs(30);
    let mut closed = false;
    while !closed && std::time::Instant::now() < until {
        for c in held.iter_mut() {
            let mut buf = [0u8; 64];
            if let Ok(Ok(0) | Err(_)) =
                tokio::time::timeout(Duration::from_millis(50), c.read(&mut buf)).await
            {
                closed = true;
            }
        }
    }
    assert!(closed, "none of the busy client's connections was closed");
    running.stop().await.expect("stops");
}
