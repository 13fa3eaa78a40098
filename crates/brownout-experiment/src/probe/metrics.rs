//! `--metrics ADDR`: the monitor's figures in the Prometheus text format — probes by
//! target and result, probe durations, up, rolling percentiles, incidents and notices.
//! Loopback unless a bearer token is given (`--metrics-token`).

use super::monitor::MonitorEvent;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

type L = Vec<(String, String)>;

/// The monitor's metric families.
pub struct Metrics {
    registry: Mutex<Registry>,
    probes: Family<L, Counter>,
    duration: Family<L, Histogram>,
    up: Family<L, Gauge>,
    latency: Family<L, Gauge<f64, AtomicU64>>,
    incident: Family<L, Gauge>,
    notices: Family<L, Counter>,
}

impl Default for Metrics {
    fn default() -> Metrics {
        let mut r = Registry::default();
        let probes = Family::<L, Counter>::default();
        let duration = Family::<L, Histogram>::new_with_constructor(|| {
            Histogram::new([
                0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
            ])
        });
        let up = Family::<L, Gauge>::default();
        let latency = Family::<L, Gauge<f64, AtomicU64>>::default();
        let incident = Family::<L, Gauge>::default();
        let notices = Family::<L, Counter>::default();
        r.register(
            "brownout_probe",
            "Probes by target and result (ok or the failure reason)",
            probes.clone(),
        );
        r.register(
            "brownout_probe_duration_seconds",
            "Wall time of a probe, close included",
            duration.clone(),
        );
        r.register(
            "brownout_probe_up",
            "1 if the target's last probe passed",
            up.clone(),
        );
        r.register(
            "brownout_probe_rolling_latency_ms",
            "Rolling percentile of probe wall time over the window",
            latency.clone(),
        );
        r.register(
            "brownout_probe_incident",
            "1 while the target has an open incident",
            incident.clone(),
        );
        r.register(
            "brownout_probe_notices",
            "Alerts and recovery notices sent",
            notices.clone(),
        );
        Metrics {
            registry: Mutex::new(r),
            probes,
            duration,
            up,
            latency,
            incident,
            notices,
        }
    }
}

impl Metrics {
    pub fn record(&self, event: &MonitorEvent, target: &str) {
        let t = || vec![("target".to_string(), target.to_string())];
        match event {
            MonitorEvent::Probe {
                result,
                percentiles,
                ..
            } => {
                let mut l = t();
                let outcome = result.failure_reason.as_ref().map_or("ok", |r| r.name());
                l.push(("result".into(), outcome.into()));
                self.probes.get_or_create(&l).inc();
                self.duration
                    .get_or_create(&t())
                    .observe(result.total_ms / 1000.0);
                self.up.get_or_create(&t()).set(i64::from(result.ok));
                if let Some(p) = percentiles {
                    for (q, v) in [("0.5", p.p50_ms), ("0.95", p.p95_ms), ("0.99", p.p99_ms)] {
                        let mut l = t();
                        l.push(("quantile".into(), q.into()));
                        self.latency.get_or_create(&l).set(v);
                    }
                }
            }
            MonitorEvent::Alert(_) | MonitorEvent::Recovery(_) => {
                let alert = matches!(event, MonitorEvent::Alert(_));
                self.incident.get_or_create(&t()).set(i64::from(alert));
                let mut l = t();
                l.push((
                    "event".into(),
                    if alert { "alert" } else { "recovery" }.into(),
                ));
                self.notices.get_or_create(&l).inc();
            }
            MonitorEvent::Done { .. } => {}
        }
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        let r = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        if encode(&mut out, &r).is_err() {
            out.clear();
        }
        out
    }
}

/// Refuse to serve metrics beyond loopback without a token.
pub fn check_bind(addr: &SocketAddr, token: Option<&str>) -> anyhow::Result<()> {
    if !addr.ip().is_loopback() && token.is_none_or(str::is_empty) {
        anyhow::bail!(
            "--metrics {addr} is beyond loopback: give a bearer token with --metrics-token (or BROWNOUT_METRICS_TOKEN)"
        );
    }
    Ok(())
}

#[derive(Clone)]
struct App {
    metrics: Arc<Metrics>,
    token: Option<Arc<str>>,
}

/// Serve `GET /metrics` on `addr`; the address bound.
pub async fn serve(
    metrics: Arc<Metrics>,
    addr: SocketAddr,
    token: Option<String>,
) -> anyhow::Result<SocketAddr> {
    check_bind(&addr, token.as_deref())?;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let app = App {
        metrics,
        token: token.filter(|t| !t.is_empty()).map(Arc::from),
    };
    let router = axum::Router::new()
        .route("/metrics", axum::routing::get(scrape))
        .with_state(app);
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Ok(bound)
}

async fn scrape(State(app): State<App>, headers: HeaderMap) -> Response {
    if let Some(token) = &app.token {
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        use subtle::ConstantTimeEq;
        if !bool::from(given.as_bytes().ct_eq(token.as_bytes())) {
            return (StatusCode::UNAUTHORIZED, "a bearer token is required\n").into_response();
        }
    }
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        app.metrics.render(),
    )
        .into_response()
}
