//! Monitor mode: alerts are deduplicated (one per incident) and followed by one recovery
//! notice, delivered to a local webhook receiver (an axum server in the test); metrics; a
//! `--targets` file; the library's `Monitor` API.

mod common;
mod probe_support;

use axum::{extract::State, routing::post, Json, Router};
use probe_support::{probe, scripted};
use serde_json::Value;
use std::sync::{Arc, Mutex};

type Received = Arc<Mutex<Vec<Value>>>;

/// A webhook receiver on loopback: its URL and what it received.
fn receiver(rt: &tokio::runtime::Runtime) -> (String, Received) {
    let got: Received = Arc::default();
    let app = Router::new()
        .route(
            "/hook",
            post(
                |State(got): State<Received>, Json(v): Json<Value>| async move {
                    got.lock().unwrap_or_else(|p| p.into_inner()).push(v);
                },
            ),
        )
        .with_state(Arc::clone(&got));
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    rt.spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}/hook"), got)
}

/// Requests 0–2 pass, 3–7 get 503, 8 on pass again.
fn flapping() -> String {
    let (url, _) = scripted(|n, _| {
        Some(if (3..8).contains(&n) {
            (503, "text/plain", "down".to_string())
        } else {
            (200, "application/json", r#"{"status":"ok"}"#.to_string())
        })
    });
    format!("{url}/health")
}

#[test]
fn one_alert_per_incident_then_one_recovery_reach_the_webhook() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (hook, got) = receiver(&rt);
    let health = flapping();
    let (lines, code, out) = probe(&[
        "--kind",
        "http",
        &health,
        "--interval",
        "50ms",
        "--count",
        "12",
        "--alert-after",
        "2",
        "--webhook",
        &hook,
    ]);
    assert_eq!(code, 0, "{out}");
    let notices: Vec<&Value> = lines.iter().filter(|l| l.get("event").is_some()).collect();
    let events: Vec<&str> = notices.iter().filter_map(|n| n["event"].as_str()).collect();
    assert_eq!(events, ["alert", "recovery"], "{out}");
    // Delivered, once each, with the reason and a Slack-style text. The probe exits only
    // once its deliveries are answered, and the receiver notes one before it answers: what
    // it holds now is all there will be.
    let got = got.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0]["event"], "alert");
    assert_eq!(got[0]["failure_reason"]["reason"], "http_status");
    assert_eq!(got[0]["failure_reason"]["code"], 503);
    assert_eq!(got[0]["consecutive_failures"], 2);
    assert!(
        got[0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("http_status(503)"),
        "{got:?}"
    );
    assert_eq!(got[1]["event"], "recovery");
    assert_eq!(got[1]["failure"], "http_status(503)");
    assert!(got[1]["duration_ms"].as_f64().unwrap_or(0.0) > 0.0);
}

#[test]
fn a_targets_file_watches_each_target_with_its_own_options() {
    let dir = common::tmp();
    let (ok_url, _) = scripted(|_, _| Some((200, "text/plain", "fine".into())));
    let closed = format!("http://127.0.0.1:{}/mcp", common::http::free_port());
    let file = dir.path().join("targets.yaml");
    std::fs::write(
        &file,
        format!("- probe: http\n  url: {ok_url}/health\n  expect: [\"~ /fine/\"]\n- probe: mcp\n  url: {closed}\n  alert_after: 1\n"),
    )
    .expect("write");
    let path = file.display().to_string();
    let (lines, code, out) = probe(&["--targets", &path, "--count", "2", "--interval", "50ms"]);
    assert_eq!(code, 1, "one target fails: {out}");
    let alerts: Vec<&Value> = lines.iter().filter(|l| l["event"] == "alert").collect();
    assert_eq!(alerts.len(), 1, "{out}");
    assert_eq!(alerts[0]["failure"], "connection_refused");
    // A typo is reported with its line and column.
    std::fs::write(
        &file,
        "- probe: http\n  url: http://127.0.0.1:1/\n  statuss: 200\n",
    )
    .expect("write");
    let (_, code, out) = probe(&["--targets", &path]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("targets.yaml:3:"), "{out}");
}

#[test]
fn metrics_are_served_on_loopback_and_need_a_token_beyond() {
    let (_, code, out) = probe(&["--metrics", "0.0.0.0:0", "http://127.0.0.1:1/mcp"]);
    assert_eq!(code, 2);
    assert!(out.contains("beyond loopback"), "{out}");
    let health = flapping();
    let port = common::http::free_port();
    let addr = format!("127.0.0.1:{port}");
    let child = std::process::Command::new(common::brownout())
        .args([
            "probe",
            "--kind",
            "http",
            &health,
            "--interval",
            "50ms",
            "--metrics",
            &addr,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let _guard = KillOnDrop(child);
    let url = format!("http://{addr}/metrics");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut text = String::new();
    while std::time::Instant::now() < deadline {
        if let Ok(r) = reqwest::blocking_get(&url) {
            text = r;
            if text.contains("brownout_probe_notices_total") && text.contains("event=\"recovery\"")
            {
                break;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(text.contains("brownout_probe_total{"), "{text}");
    assert!(text.contains("result=\"http_status\""), "{text}");
    assert!(text.contains("event=\"alert\""), "{text}");
    assert!(text.contains("event=\"recovery\""), "{text}");
    assert!(text.contains("brownout_probe_rolling_latency_ms"), "{text}");
}

struct KillOnDrop(std::process::Child);
impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

mod reqwest {
    /// A blocking GET through a one-off runtime (the test is synchronous).
    pub fn blocking_get(url: &str) -> Result<String, ()> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|_| ())?;
        rt.block_on(async {
            let r = ::reqwest::get(url).await.map_err(|_| ())?;
            r.text().await.map_err(|_| ())
        })
    }
}

#[test]
fn the_monitor_api_yields_alert_and_recovery_events() {
    use brownout::probe::{Monitor, MonitorEvent, MonitorOptions, ProbeSpec};
    let health = flapping();
    let spec: ProbeSpec =
        serde_json::from_value(serde_json::json!({"probe": "http", "url": health})).expect("spec");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let events = rt.block_on(async {
        let opts = MonitorOptions {
            interval: std::time::Duration::from_millis(30),
            count: Some(12),
            ..MonitorOptions::default()
        };
        let mut m = Monitor::start(vec![(spec, opts)]);
        let mut seen = Vec::new();
        while let Some(e) = tokio::time::timeout(std::time::Duration::from_secs(30), m.next())
            .await
            .ok()
            .flatten()
        {
            match e {
                MonitorEvent::Alert(_) => seen.push("alert"),
                MonitorEvent::Recovery(_) => seen.push("recovery"),
                MonitorEvent::Done { .. } => break,
                MonitorEvent::Probe { .. } => {}
            }
        }
        seen
    });
    assert_eq!(events, ["alert", "recovery"]);
}
