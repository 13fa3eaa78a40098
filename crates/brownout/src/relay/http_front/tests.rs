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
    let stdio = crate::relay::stdio_child::driver();
    assert_eq!(stdio.name(), "`proxy stdio -- CMD`");
    assert!(!stdio.can.has(Capability::ShapeStreams));
    assert_eq!(
        crate::relay::stdio_http::driver().name(),
        "`proxy stdio --upstream`"
    );
}
