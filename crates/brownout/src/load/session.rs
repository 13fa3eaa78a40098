//! A load session on either transport, opened (initialized) and closed the same way.

use super::http::{self, HttpSession};
use super::stdio::StdioSession;
use super::wire::{self, Answer};
use super::{LoadError, LoadTarget};
use std::sync::Arc;
use std::time::Duration;

/// How long a session has to start and answer `initialize`.
pub const INIT_TIMEOUT: Duration = Duration::from_secs(30);

pub enum Session {
    Stdio(StdioSession),
    Http(HttpSession),
}

impl Session {
    /// A request; an `ok` answer is checked against `schema` (the tool's `outputSchema`).
    pub async fn request(
        &self,
        method: &str,
        params: &str,
        timeout: Duration,
        schema: Option<&Arc<jsonschema::Validator>>,
    ) -> Answer {
        match self {
            Session::Stdio(s) => s.request(method, params, timeout, schema.cloned()).await,
            Session::Http(s) => {
                s.request(method, params, timeout, schema.map(|v| &**v))
                    .await
            }
        }
    }

    /// The output schemas of the server's tools (`tools/list`, first page); none if the
    /// server does not answer.
    pub async fn schemas(&self) -> wire::Schemas {
        let raw = match self {
            Session::Stdio(s) => s.request_raw("tools/list", "{}", INIT_TIMEOUT).await,
            Session::Http(s) => s.request_raw("tools/list", "{}", INIT_TIMEOUT).await,
        };
        raw.map(|r| wire::schemas(&r)).unwrap_or_default()
    }

    pub async fn close(&self) {
        let wait = Duration::from_secs(2);
        match self {
            Session::Stdio(s) => s.close(wait).await,
            Session::Http(s) => s.close(wait).await,
        }
    }
}

/// Open `n` sessions on `target`, all initialized, at most 16 starting at once.
pub async fn open_all(target: &LoadTarget, n: usize) -> Result<Vec<Session>, LoadError> {
    use futures::stream::{self, StreamExt, TryStreamExt};
    let url = match target {
        LoadTarget::Http { url, headers } => {
            let parsed = reqwest::Url::parse(url)
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https"))
                .ok_or_else(|| LoadError::BadUrl { url: url.clone() })?;
            http::client(headers)?; // a bad header fails here, before any session opens
            Some(parsed)
        }
        LoadTarget::Stdio { command } if command.is_empty() => return Err(LoadError::NoCommand),
        LoadTarget::Stdio { .. } => None,
    };
    stream::iter(0..n)
        .map(|i| open(target, url.clone(), i))
        .buffered(16)
        .try_collect()
        .await
}

async fn open(
    target: &LoadTarget,
    url: Option<reqwest::Url>,
    i: usize,
) -> Result<Session, LoadError> {
    match (target, url) {
        (LoadTarget::Http { headers, .. }, Some(url)) => {
            let s = HttpSession::new(http::client(headers)?, url);
            s.initialize(INIT_TIMEOUT)
                .await
                .map_err(|reason| LoadError::Initialize { session: i, reason })?;
            Ok(Session::Http(s))
        }
        (LoadTarget::Stdio { command }, _) => {
            let s = StdioSession::spawn(command).map_err(|source| LoadError::Spawn {
                command: command.join(" "),
                source,
            })?;
            match s
                .request("initialize", &wire::initialize_params(), INIT_TIMEOUT, None)
                .await
            {
                Answer::Ok => {}
                other => {
                    let tail = s.stderr_tail();
                    s.close(Duration::from_secs(1)).await;
                    let why = match other {
                        Answer::Closed => "the process exited".to_string(),
                        Answer::Timeout => "no answer in time".to_string(),
                        Answer::Error { code, message } => format!("error {code}: {message}"),
                        a => format!("{a:?}"),
                    };
                    let reason = if tail.is_empty() {
                        why
                    } else {
                        format!("{why}; its stderr: {tail}")
                    };
                    return Err(LoadError::Initialize { session: i, reason });
                }
            }
            s.notify("notifications/initialized").await;
            Ok(Session::Stdio(s))
        }
        (LoadTarget::Http { url, .. }, None) => Err(LoadError::BadUrl { url: url.clone() }),
    }
}
