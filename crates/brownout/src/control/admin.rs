//! The admin API: HTTP on its own listener, for steering a running relay's faults.
//!
//! ```text
//! GET    /faults          the running faults (id, kind, TTL left, spec)
//! POST   /faults          add one fault in plan syntax (YAML or JSON body); ?ttl=30s
//! DELETE /faults/{id}     remove one fault
//! DELETE /faults          remove every fault
//! PUT    /plan            replace the whole plan (body: a plan; ?format=yaml|json|toml)
//! GET    /status          uptime, sessions, pending requests, calls, injections per fault
//! GET    /metrics         Prometheus / OpenMetrics text (see [`super::metrics`])
//! ```
//!
//! Loopback by default. Bound beyond loopback it requires a bearer token, compared in
//! constant time; the token is never logged.

use super::{Control, ControlError};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, put};
use axum::{Json, Router};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

/// How often faults with a TTL are checked for expiry.
const EXPIRY_TICK: Duration = Duration::from_millis(50);

#[derive(Clone)]
struct App {
    control: Arc<Control>,
    token: Option<Arc<str>>,
}

/// Refuse to expose the admin API beyond loopback without a token.
pub fn check_bind(addr: &SocketAddr, token: Option<&str>) -> anyhow::Result<()> {
    if !addr.ip().is_loopback() && token.is_none_or(str::is_empty) {
        anyhow::bail!(
            "--admin {addr} is beyond loopback: give a bearer token with --admin-token (or BROWNOUT_ADMIN_TOKEN)"
        );
    }
    Ok(())
}

/// Bind the admin listener and serve it (and the TTL expiry) on the current runtime.
/// Returns the address actually bound (port 0 picks a free one).
pub async fn serve(
    control: Arc<Control>,
    addr: SocketAddr,
    token: Option<String>,
) -> anyhow::Result<SocketAddr> {
    check_bind(&addr, token.as_deref())?;
    if !addr.ip().is_loopback() {
        eprintln!("brownout: warning: the admin API listens on {addr}, beyond loopback");
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {addr} for the admin API: {e}"))?;
    let bound = listener.local_addr()?;
    let app = App {
        control: Arc::clone(&control),
        token: token.filter(|t| !t.is_empty()).map(Arc::from),
    };
    let router = Router::new()
        .route("/faults", get(list).post(add).delete(clear))
        .route("/faults/{id}", delete(remove))
        .route("/plan", put(replace))
        .route("/status", get(status))
        .route("/metrics", get(metrics))
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            require_token,
        ))
        .with_state(app);
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router).await {
            eprintln!("brownout: the admin API stopped: {e}");
        }
    });
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(EXPIRY_TICK);
        loop {
            tick.tick().await;
            for id in control.expire(Instant::now()) {
                eprintln!("brownout: fault `{id}` expired");
            }
        }
    });
    Ok(bound)
}

fn authorized(app: &App, headers: &HeaderMap) -> bool {
    let Some(token) = &app.token else {
        return true;
    };
    let given = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    bool::from(given.as_bytes().ct_eq(token.as_bytes()))
}

/// Every route goes through here: with a token set, no request passes without it.
async fn require_token(
    State(app): State<App>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if authorized(&app, request.headers()) {
        next.run(request).await
    } else {
        unauthorized()
    }
}

fn unauthorized() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(axum::http::header::WWW_AUTHENTICATE, "Bearer")],
        Json(json!({"error": "missing or wrong bearer token"})),
    )
        .into_response()
}

fn refused(e: ControlError) -> Response {
    let status = match e {
        ControlError::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
        ControlError::NoSuchFault(_) => StatusCode::NOT_FOUND,
        ControlError::DuplicateId(_) => StatusCode::CONFLICT,
    };
    let text = e.to_string();
    let errors: Vec<&str> = text.lines().collect();
    (
        status,
        Json(json!({"error": errors.first(), "errors": errors})),
    )
        .into_response()
}

/// `30s`, `500ms`, `2m`, `1h`, or a number of seconds.
pub fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let (number, unit) = match s.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: f64 = number.parse().ok()?;
    let seconds = match unit.trim() {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return None,
    };
    (seconds.is_finite() && seconds > 0.0).then(|| Duration::from_secs_f64(seconds))
}

async fn list(State(app): State<App>) -> Response {
    Json(app.control.list()).into_response()
}

#[derive(serde::Deserialize)]
struct AddQuery {
    ttl: Option<String>,
}

async fn add(State(app): State<App>, Query(q): Query<AddQuery>, body: String) -> Response {
    let ttl = match q.ttl.as_deref().map(|t| (t, parse_duration(t))) {
        None => None,
        Some((_, Some(d))) => Some(d),
        Some((t, None)) => {
            return refused(ControlError::Invalid(format!(
                "ttl `{t}` is not a duration such as 30s, 500ms or 2m"
            )))
        }
    };
    match app.control.add(&body, ttl) {
        Ok(id) => (StatusCode::CREATED, Json(json!({"id": id}))).into_response(),
        Err(e) => refused(e),
    }
}

async fn remove(State(app): State<App>, Path(id): Path<String>) -> Response {
    match app.control.remove(&id) {
        Ok(()) => Json(json!({"removed": id})).into_response(),
        Err(e) => refused(e),
    }
}

async fn clear(State(app): State<App>) -> Response {
    Json(json!({"removed": app.control.clear()})).into_response()
}

#[derive(serde::Deserialize)]
struct PlanQuery {
    format: Option<String>,
}

async fn replace(State(app): State<App>, Query(q): Query<PlanQuery>, body: String) -> Response {
    // The name picks the format, as a file's extension would, and labels the errors.
    let name = format!("plan.{}", q.format.as_deref().unwrap_or("yaml"));
    match app.control.replace_text(&body, &name) {
        Ok(n) => Json(json!({"faults": n})).into_response(),
        Err(e) => refused(e),
    }
}

async fn metrics(State(app): State<App>) -> Response {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        app.control.metrics(),
    )
        .into_response()
}

async fn status(State(app): State<App>) -> Response {
    let v: Value = app.control.status();
    Json(v).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("0s"), None);
        assert_eq!(parse_duration("soon"), None);
        assert_eq!(parse_duration("3 parsecs"), None);
    }

    #[test]
    fn beyond_loopback_needs_a_token() {
        let public: SocketAddr = "0.0.0.0:9000".parse().expect("addr");
        let local: SocketAddr = "127.0.0.1:9000".parse().expect("addr");
        assert!(check_bind(&public, None).is_err());
        assert!(check_bind(&public, Some("")).is_err());
        assert!(check_bind(&public, Some("s3cret")).is_ok());
        assert!(check_bind(&local, None).is_ok());
    }
}
