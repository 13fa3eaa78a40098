//! The admin API: HTTP on its own listener, for steering a running relay's faults.
//!
//! ```text
//! GET    /faults          the running faults (id, kind, TTL left, spec)
//! POST   /faults          add one fault in plan syntax (YAML or JSON body); ?ttl=30s
//! DELETE /faults/{id}     remove one fault
//! PUT    /faults/{id}/lease?ttl=5s   renew a fault's lease (state kept)
//! DELETE /faults          remove every fault
//! PUT    /plan            replace the whole plan (body: a plan; ?format=yaml|json|toml)
//! GET    /status          uptime, sessions, pending requests, calls, injections per fault
//! GET    /metrics         Prometheus / OpenMetrics text (see [`super::metrics`])
//! ```
//!
//! Loopback by default. Bound beyond loopback it requires a bearer token, compared in
//! constant time; the token is never logged. A web page cannot drive it: a request with a
//! foreign `Origin` (or, on loopback, a foreign `Host`) is refused, and a request with a body
//! must say what the body is (`application/json`, or for plans also `application/yaml` and
//! `application/toml`); any other `Content-Type` (`text/plain`, forms) is answered 415.

use super::{Control, ControlError};
use crate::http_guard;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, put};
use axum::{Json, Router};
use brownout_core::plan::source::Format;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

/// How often faults with a TTL are checked for expiry.
const EXPIRY_TICK: Duration = Duration::from_millis(50);

/// How long a client has to send a request's headers, and how long a connection may sit
/// idle between requests (hyper's header timer runs from the moment it waits for a request).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a request's body may take to arrive once its headers have.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest body taken (a plan of tens of thousands of faults fits).
const MAX_BODY: usize = 32 * 1024 * 1024;

/// Connections served at once; more are closed as they arrive.
const MAX_CONNECTIONS: usize = 64;

/// The longest TTL a fault can be given: a year (longer would be a permanent fault; remove
/// it by id instead).
pub const MAX_TTL: Duration = Duration::from_secs(365 * 24 * 3600);

#[derive(Clone)]
struct App {
    control: Arc<Control>,
    token: Option<Arc<str>>,
    /// Whether the listener is on loopback (then `Host` must name loopback too).
    loopback: bool,
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
        loopback: addr.ip().is_loopback(),
    };
    let router = Router::new()
        .route("/faults", get(list).post(add).delete(clear))
        .route("/faults/{id}", delete(remove))
        .route("/faults/{id}/lease", put(renew))
        .route("/plan", put(replace))
        .route("/status", get(status))
        .route("/metrics", get(metrics))
        .layer(axum::middleware::from_fn_with_state(app.clone(), guard))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
        .with_state(app);
    tokio::spawn(accept(listener, router));
    tokio::spawn(async move {
        loop {
            // Wake at the first expiry (a lease lapses on time, not up to a tick late), and
            // at least every tick (a fault added or renewed meanwhile).
            let tick = Instant::now() + EXPIRY_TICK;
            let wake = control.next_expiry().map_or(tick, |t| t.min(tick));
            tokio::time::sleep_until(wake.into()).await;
            if !control.any_expired(Instant::now()) {
                continue;
            }
            let c = Arc::clone(&control);
            let gone = tokio::task::spawn_blocking(move || c.expire(Instant::now())).await;
            for id in gone.unwrap_or_default() {
                eprintln!("brownout: fault `{id}` expired");
            }
        }
    });
    Ok(bound)
}

/// Accept connections for as long as the runtime runs. Each is HTTP/1 with a header (and
/// idle) timeout, and at most [`MAX_CONNECTIONS`] are open at once, so clients that trickle
/// bytes or hold connections open (slowloris) cannot exhaust the API.
async fn accept(listener: tokio::net::TcpListener, router: Router) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let tcp = match listener.accept().await {
            Ok((tcp, _)) => tcp,
            Err(e) => {
                // Out of file descriptors, most likely: wait rather than spin.
                eprintln!("brownout: the admin API cannot accept a connection: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            continue; // dropping `tcp` closes it
        };
        let service = hyper_util::service::TowerToHyperService::new(router.clone());
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(hyper_util::rt::TokioIo::new(tcp), service)
                .await;
            drop(slot);
        });
    }
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

/// Every route goes through here: no request from a foreign origin or host passes, and with
/// a token set, no request passes without it.
async fn guard(
    State(app): State<App>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if let Err(r) = http_guard::check(request.headers(), app.loopback, &[], &[]) {
        return error(
            r.status(),
            format!("brownout: {r}: the admin API takes no requests from web pages"),
        );
    }
    if !authorized(&app, request.headers()) {
        return unauthorized();
    }
    // Read the body here, in bounded time and size: a client that trickles it is cut off
    // before any handler runs (a handler that then takes long still finishes its change).
    let (parts, body) = request.into_parts();
    let bytes = match tokio::time::timeout(BODY_TIMEOUT, axum::body::to_bytes(body, MAX_BODY)).await
    {
        Ok(Ok(b)) => b,
        Ok(Err(_)) => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("brownout: the body is over {MAX_BODY} bytes, or was cut short"),
            )
        }
        Err(_) => {
            return error(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "brownout: the body took over {}s to arrive",
                    BODY_TIMEOUT.as_secs()
                ),
            )
        }
    };
    let request = axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes));
    next.run(request).await
}

fn error(status: StatusCode, message: String) -> Response {
    (status, Json(json!({"error": message, "errors": [message]}))).into_response()
}

/// The media type of a request's body (`application/json`), lowercased, without parameters.
fn media_type(headers: &HeaderMap) -> String {
    headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// The plan format a media type names, if it is one the admin API takes.
fn format_of(media: &str) -> Option<Format> {
    match media {
        "application/json" => Some(Format::Json),
        "application/yaml" | "application/x-yaml" | "text/yaml" => Some(Format::Yaml),
        "application/toml" => Some(Format::Toml),
        _ => None,
    }
}

fn unsupported(media: &str, allowed: &str) -> Response {
    let got = if media.is_empty() {
        "no Content-Type".to_string()
    } else {
        format!("Content-Type `{media}`")
    };
    error(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        format!("brownout: {got}: send the body as {allowed}"),
    )
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
        ControlError::Lapsed(_) => StatusCode::GONE,
    };
    let text = e.to_string();
    let errors: Vec<&str> = text.lines().collect();
    (
        status,
        Json(json!({"error": errors.first(), "errors": errors})),
    )
        .into_response()
}

/// `30s`, `500ms`, `2m`, `1h`, or a number of seconds; above zero and at most [`MAX_TTL`].
/// The error says why, for the caller.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    use brownout_core::duration::{parse, DurationError, Rules};
    let rules = Rules {
        max: MAX_TTL,
        ..Rules::FLAG
    };
    parse(s, rules).map_err(|e| match e {
        DurationError::TooLong { text, max } => format!(
            "`{text}` is out of range: at most {}h (a year); for a fault that stays, give no TTL",
            max.as_secs() / 3600
        ),
        e => e.to_string(),
    })
}

/// Run a change on the blocking pool: compiling a large plan takes a while, and the relay's
/// own I/O shares this runtime (one thread for `proxy stdio`). The engine's lock is taken
/// only to swap the compiled plan in.
async fn off_runtime<T: Send + 'static>(
    change: impl FnOnce() -> Result<T, ControlError> + Send + 'static,
) -> Result<T, ControlError> {
    tokio::task::spawn_blocking(change)
        .await
        .unwrap_or_else(|e| {
            Err(ControlError::Invalid(format!(
                "brownout: internal error: {e}"
            )))
        })
}

async fn list(State(app): State<App>) -> Response {
    Json(app.control.list()).into_response()
}

#[derive(serde::Deserialize)]
struct AddQuery {
    ttl: Option<String>,
}

async fn add(
    State(app): State<App>,
    Query(q): Query<AddQuery>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let media = media_type(&headers);
    let format = match format_of(&media) {
        Some(f @ (Format::Json | Format::Yaml)) => f,
        _ => return unsupported(&media, "application/json or application/yaml"),
    };
    let ttl = match q.ttl.as_deref().map(parse_duration) {
        None => None,
        Some(Ok(d)) => Some(d),
        Some(Err(e)) => return refused(ControlError::Invalid(format!("ttl {e}"))),
    };
    match off_runtime(move || app.control.add(&body, format, ttl)).await {
        Ok(id) => (StatusCode::CREATED, Json(json!({"id": id}))).into_response(),
        Err(e) => refused(e),
    }
}

async fn remove(State(app): State<App>, Path(id): Path<String>) -> Response {
    let control = Arc::clone(&app.control);
    let gone = id.clone();
    match off_runtime(move || control.remove(&gone)).await {
        Ok(()) => Json(json!({"removed": id})).into_response(),
        Err(e) => refused(e),
    }
}

/// Renew a fault's lease (`?ttl=` required): it expires that long from now.
async fn renew(
    State(app): State<App>,
    Path(id): Path<String>,
    Query(q): Query<AddQuery>,
) -> Response {
    let ttl = match q.ttl.as_deref().map(parse_duration) {
        Some(Ok(d)) => d,
        Some(Err(e)) => return refused(ControlError::Invalid(format!("ttl {e}"))),
        None => {
            return refused(ControlError::Invalid(
                "ttl: renewing a lease needs `?ttl=` (e.g. ?ttl=5s)".into(),
            ))
        }
    };
    let control = Arc::clone(&app.control);
    let which = id.clone();
    match off_runtime(move || control.renew(&which, ttl)).await {
        Ok(s) => Json(json!({"id": id, "expires_in_s": s})).into_response(),
        Err(e) => refused(e),
    }
}

async fn clear(State(app): State<App>) -> Response {
    match off_runtime(move || Ok(app.control.clear())).await {
        Ok(n) => Json(json!({"removed": n})).into_response(),
        Err(e) => refused(e),
    }
}

#[derive(serde::Deserialize)]
struct PlanQuery {
    format: Option<String>,
}

async fn replace(
    State(app): State<App>,
    Query(q): Query<PlanQuery>,
    headers: HeaderMap,
    body: String,
) -> Response {
    const TYPES: &str = "application/json, application/yaml or application/toml";
    let media = media_type(&headers);
    let Some(by_type) = format_of(&media) else {
        return unsupported(&media, TYPES);
    };
    // `?format=` overrides the media type (a YAML plan sent by a client that can only say
    // application/json); it must name a format.
    let format = match q.format.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None => by_type,
        Some("yaml" | "yml") => Format::Yaml,
        Some("json") => Format::Json,
        Some("toml") => Format::Toml,
        Some(other) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("brownout: unknown plan format `{other}`: use format=yaml, json or toml"),
            )
        }
    };
    // The name labels the errors, as a file's would.
    let name = match format {
        Format::Yaml => "plan.yaml",
        Format::Json => "plan.json",
        Format::Toml => "plan.toml",
    };
    match off_runtime(move || app.control.replace_text(&body, name, format)).await {
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
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("3 parsecs").is_err());
        assert!(parse_duration("1e30").is_err());
        let huge = parse_duration("1000000000000000000000000000000s");
        assert!(huge.is_err_and(|e| e.contains("out of range")));
        assert!(parse_duration("10000000000000000000").is_err());
        assert!(parse_duration("8760h").is_ok());
        assert!(parse_duration("8761h").is_err());
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
