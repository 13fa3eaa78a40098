//! The resource bounds of `brownout mcp --http` against a hostile client: how many MCP
//! sessions it holds (in all, and per client address), when an idle session ends, and the
//! listener's connection cap and header/idle timeouts (the relay front's listener,
//! [`brownout_relay::relay::http_serve`]).
//!
//! Sessions are counted by [`Capped`], a session manager around rmcp's
//! [`LocalSessionManager`]: it refuses a new session beyond a cap, and the middleware
//! [`sessions_gate`] turns that refusal into `503 Service Unavailable` with `Retry-After`
//! (rmcp would answer 500). The client address reaches the manager through a task-local
//! set by the middleware: rmcp creates a session inside the request's own future.

use axum::extract::{ConnectInfo, Request};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use clap::Args;
use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The bounds an operator may tune (all but `--max-sim-time` for `--http` only).
#[derive(Args, Debug, Clone)]
pub struct Bounds {
    /// The longest one `simulate` call computes (wall time); it then answers with the run
    /// so far and `stopped_by`.
    #[arg(long, default_value = "30s", value_parser = brownout_core::duration::parse_flag, value_name = "DURATION")]
    pub max_sim_time: Duration,
    /// At most this many MCP sessions at once (HTTP); beyond, 503 with Retry-After.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub max_sessions: usize,
    /// At most this many MCP sessions per client address (HTTP).
    #[arg(long, default_value_t = 64, value_name = "N")]
    pub max_sessions_per_client: usize,
    /// An HTTP session with no request and no open stream for this long ends (its runs
    /// stop).
    #[arg(long, default_value = "300s", value_parser = brownout_core::duration::parse_flag, value_name = "DURATION")]
    pub session_idle_timeout: Duration,
    /// At most this many open HTTP connections; beyond, the one with no request in flight
    /// that has been quiet longest is closed to make room (or the new one, if all are busy),
    /// unless one client address holds two more than the newcomer's: it gives one up.
    #[arg(long, default_value_t = 512, value_name = "N")]
    pub max_connections: usize,
    /// A request's head must arrive within this long (slow or silent clients are cut).
    #[arg(long, default_value = "10s", value_parser = brownout_core::duration::parse_flag, value_name = "DURATION")]
    pub header_timeout: Duration,
    /// A kept-alive HTTP connection with nothing in flight is closed after this long.
    #[arg(long, default_value = "120s", value_parser = brownout_core::duration::parse_flag, value_name = "DURATION")]
    pub idle_timeout: Duration,
}

/// Which cap refused a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    Total(usize),
    PerClient(usize),
}

/// The session manager's error: rmcp's, or a cap.
#[derive(Debug, thiserror::Error)]
pub enum CappedError {
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
    #[error("too many MCP sessions")]
    Refused(Refused),
}

/// The caller of the request being served: its address, and what a cap refused it.
struct Caller {
    ip: Option<IpAddr>,
    refused: Mutex<Option<Refused>>,
}

tokio::task_local! {
    static CALLER: Arc<Caller>;
}

/// rmcp's session manager, with sessions counted in all and per client address.
pub struct Capped {
    inner: LocalSessionManager,
    max: usize,
    per_client: usize,
    /// Session → the client address that opened it.
    owners: Mutex<HashMap<SessionId, Option<IpAddr>>>,
}

impl Capped {
    pub fn new(b: &Bounds) -> Capped {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(b.session_idle_timeout);
        Capped {
            inner,
            max: b.max_sessions.max(1),
            per_client: b.max_sessions_per_client.max(1),
            owners: Mutex::new(HashMap::new()),
        }
    }

    fn owners(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Option<IpAddr>>> {
        self.owners.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sessions held now.
    pub fn len(&self) -> usize {
        self.owners().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Admit a new session for `ip`, or say which cap refuses it.
    fn admit(&self, ip: Option<IpAddr>) -> Result<(), Refused> {
        let owners = self.owners();
        if owners.len() >= self.max {
            return Err(Refused::Total(self.max));
        }
        if ip.is_some() && owners.values().filter(|o| **o == ip).count() >= self.per_client {
            return Err(Refused::PerClient(self.per_client));
        }
        Ok(())
    }
}

impl SessionManager for Capped {
    type Error = CappedError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let caller = CALLER.try_with(Arc::clone).ok();
        let ip = caller.as_ref().and_then(|c| c.ip);
        if let Err(r) = self.admit(ip) {
            if let Some(c) = &caller {
                *c.refused.lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
            }
            return Err(CappedError::Refused(r));
        }
        let (id, t) = self.inner.create_session().await?;
        self.owners().insert(id.clone(), ip);
        Ok((id, t))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.owners().remove(id);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }
    // No restore from a store: a session the manager does not hold is 404, never re-created
    // past the caps.
}

/// Seconds a refused client is told to wait.
const RETRY_AFTER: &str = "5";

/// Run the request with its caller known to [`Capped`]; a session refused by a cap is
/// answered 503 with `Retry-After`.
pub async fn sessions_gate(req: Request, next: Next) -> Response {
    let ip = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    let caller = Arc::new(Caller {
        ip,
        refused: Mutex::new(None),
    });
    let resp = CALLER.scope(Arc::clone(&caller), next.run(req)).await;
    let refused = *caller.refused.lock().unwrap_or_else(|p| p.into_inner());
    match refused {
        None => resp,
        Some(r) => {
            let why = match r {
                Refused::Total(n) => format!(
                    "brownout mcp holds its most MCP sessions ({n}, --max-sessions): retry later"
                ),
                Refused::PerClient(n) => format!(
                    "this client address holds its most MCP sessions ({n}, --max-sessions-per-client): end one (DELETE) or retry later"
                ),
            };
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, RETRY_AFTER)],
                why,
            )
                .into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(max: usize, per: usize) -> Bounds {
        Bounds {
            max_sim_time: Duration::from_secs(1),
            max_sessions: max,
            max_sessions_per_client: per,
            session_idle_timeout: Duration::from_secs(60),
            max_connections: 10,
            header_timeout: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(1),
        }
    }

    #[tokio::test]
    async fn caps_in_all_and_per_client_and_frees_on_close() {
        let c = Capped::new(&bounds(3, 2));
        let a: IpAddr = "127.0.0.2".parse().expect("ip");
        let b: IpAddr = "127.0.0.3".parse().expect("ip");
        let mut ids = Vec::new();
        for ip in [a, a] {
            let caller = Arc::new(Caller {
                ip: Some(ip),
                refused: Mutex::new(None),
            });
            let (id, _t) = CALLER
                .scope(caller, c.create_session())
                .await
                .expect("admitted");
            ids.push(id);
        }
        assert_eq!(c.admit(Some(a)), Err(Refused::PerClient(2)));
        assert_eq!(c.admit(Some(b)), Ok(()));
        c.owners().insert("x".to_string().into(), Some(b));
        assert_eq!(c.admit(Some(b)), Err(Refused::Total(3)));
        c.close_session(&ids[0]).await.expect("closed");
        assert_eq!(c.admit(Some(a)), Ok(()));
        assert_eq!(c.len(), 2);
    }
}
