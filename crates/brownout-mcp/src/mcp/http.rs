//! `brownout mcp --http ADDR`: the MCP server over streamable HTTP at `/mcp`. Loopback
//! unless `--allow-remote` (which needs a bearer token); the `Origin`/`Host` checks of the
//! relay's front (`http_guard`); a bearer token compared in constant time when one is set.
//! Each MCP session gets its own handler, dropped — and its runs stopped — when the
//! session is deleted or idles out. Sessions, connections and slow clients are bounded
//! ([`super::http_limits`]).

use super::server::McpServer;
use super::{Ctx, McpArgs};
use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;
use std::time::Duration;
use subtle::ConstantTimeEq;

/// The largest request body accepted.
const MAX_BODY: usize = 4 * 1024 * 1024;

struct Gate {
    loopback: bool,
    token: Option<String>,
    origins: Vec<String>,
    hosts: Vec<String>,
}

async fn guard(gate: Arc<Gate>, req: Request, next: Next) -> Response {
    if let Err(r) =
        brownout_relay::http_guard::check(req.headers(), gate.loopback, &gate.origins, &gate.hosts)
    {
        return (r.status(), r.to_string()).into_response();
    }
    if let Some(t) = &gate.token {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        let ok: bool = given.as_bytes().ct_eq(t.as_bytes()).into();
        if !ok {
            return (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "a bearer token is required (brownout mcp --token)",
            )
                .into_response();
        }
    }
    next.run(req).await
}

/// Serve until SIGINT/SIGTERM; 0, or 2 when the listener cannot start.
pub async fn serve(ctx: Ctx, addr: &str, a: &McpArgs) -> anyhow::Result<i32> {
    // An empty token would let every request through: refused before anything listens.
    if a.token.as_deref().is_some_and(|t| t.trim().is_empty()) {
        eprintln!("brownout mcp: the bearer token (--token or BROWNOUT_MCP_TOKEN) is empty: give a non-empty token, or none to serve loopback only");
        return Ok(2);
    }
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("brownout mcp: cannot listen on {addr}: {e}");
            return Ok(2);
        }
    };
    let local = listener.local_addr()?;
    let loopback = local.ip().is_loopback();
    if !loopback && !a.allow_remote {
        eprintln!("brownout mcp: {local} is not loopback: add --allow-remote (with --token) to listen there");
        return Ok(2);
    }
    let gate = Arc::new(Gate {
        loopback,
        token: a.token.clone(),
        origins: a.allow_origin.clone(),
        hosts: a.allow_host.clone(),
    });
    let ct = tokio_util::sync::CancellationToken::new();
    let b = &a.bounds;
    let sessions = super::http_limits::Capped::new(b);
    // Host and Origin are checked by `guard` (the same rules as every brownout listener).
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_max_request_body_bytes(MAX_BODY)
        .with_cancellation_token(ct.child_token());
    let c = ctx.clone();
    let svc = StreamableHttpService::new(
        move || Ok(McpServer::new(c.clone())),
        Arc::new(sessions),
        config,
    );
    let app = axum::Router::new()
        .nest_service("/mcp", svc)
        .layer(axum::middleware::from_fn(super::http_limits::sessions_gate))
        .layer(axum::middleware::from_fn(move |req, next| {
            guard(gate.clone(), req, next)
        }));
    eprintln!("brownout mcp: serving MCP at http://{local}/mcp");
    let stop = ct.clone();
    let timeouts = brownout_relay::relay::http_serve::Timeouts {
        header: b.header_timeout.max(Duration::from_millis(100)),
        body: brownout_relay::relay::http_serve::Timeouts::default().body,
        idle: b.idle_timeout.max(Duration::from_millis(100)),
    };
    brownout_relay::relay::http_serve::serve_capped(
        listener,
        app,
        timeouts,
        b.max_connections.max(1),
        Duration::from_secs(5),
        async move {
            super::shutdown_signal().await;
            stop.cancel();
        },
    )
    .await?;
    Ok(0)
}
