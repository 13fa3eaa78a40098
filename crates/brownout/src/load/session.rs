//! A load session on either transport, opened (initialized) and closed the same way.

use super::http::{self, HttpSession};
use super::stdio::StdioSession;
use super::wire::{self, Answer};
use super::{LoadError, LoadTarget};
use std::time::Duration;

/// How long a session has to start and answer `initialize`.
pub const INIT_TIMEOUT: Duration = Duration::from_secs(30);

pub enum Session {
    Stdio(StdioSession),
    Http(HttpSession),
}

impl Session {
    pub async fn request(&self, method: &str, params: &str, timeout: Duration) -> Answer {
        match self {
            Session::Stdio(s) => s.request(method, params, timeout).await,
            Session::Http(s) => s.request(method, params, timeout).await,
        }
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
    let client = match target {
        LoadTarget::Http { url, headers } => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(LoadError::BadUrl { url: url.clone() });
            }
            Some(http::client(headers)?)
        }
        LoadTarget::Stdio { command } if command.is_empty() => return Err(LoadError::NoCommand),
        LoadTarget::Stdio { .. } => None,
    };
    stream::iter(0..n)
        .map(|i| open(target, client.clone(), i))
        .buffered(16)
        .try_collect()
        .await
}

async fn open(
    target: &LoadTarget,
    client: Option<reqwest::Client>,
    i: usize,
) -> Result<Session, LoadError> {
    match (target, client) {
        (LoadTarget::Http { url, .. }, Some(client)) => {
            let s = HttpSession::new(client, url);
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
                .request("initialize", &wire::initialize_params(), INIT_TIMEOUT)
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
        (LoadTarget::Http { .. }, None) => Err(LoadError::Client("no HTTP client".into())),
    }
}
