//! A load session on either transport, opened (initialized) and closed the same way. A
//! stdio session whose process exits (a crash, a `process` fault) is started and initialized
//! again on its next call, at most once per [`RESTART_GAP`], as an agent host restarts a
//! server; calls meanwhile fail as unanswered.

use super::http::{self, HttpSession};
use super::stdio::StdioSession;
use super::wire::{self, Answer};
use super::{LoadError, LoadTarget};
use brownout_relay::relay::http_sessions::LABEL_HEADER;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a session has to start and answer `initialize`.
pub const INIT_TIMEOUT: Duration = Duration::from_secs(30);

/// The least time between two restarts of one stdio session.
pub const RESTART_GAP: Duration = Duration::from_secs(1);

pub enum Session {
    Stdio(StdioSlot),
    Http(HttpSession),
    /// A session on one relay of a fleet whose relays change ([`super::LoadTarget::Fleet`]
    /// with `live`): it moves to the relay the list now gives it.
    Fleet(FleetSlot),
    /// One agent's sessions on several servers ([`super::routed`]).
    Routed(super::routed::Routed),
}

/// A stdio session and what it takes to start it again.
pub struct StdioSlot {
    command: Vec<String>,
    index: usize,
    current: std::sync::RwLock<Arc<StdioSession>>,
    /// When a restart was last tried.
    restart: tokio::sync::Mutex<Instant>,
    restarts: AtomicU64,
}

impl StdioSlot {
    fn current(&self) -> Arc<StdioSession> {
        Arc::clone(&self.current.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// The live process, started again if it exited (not more often than [`RESTART_GAP`]).
    async fn live(&self) -> Arc<StdioSession> {
        let cur = self.current();
        if !cur.is_closed() {
            return cur;
        }
        let mut last = self.restart.lock().await;
        let now = self.current();
        if !Arc::ptr_eq(&cur, &now) || last.elapsed() < RESTART_GAP {
            return now; // restarted by another call meanwhile, or too soon to try again
        }
        *last = Instant::now();
        match start_stdio(&self.command, self.index).await {
            Ok(fresh) => {
                let fresh = Arc::new(fresh);
                *self.current.write().unwrap_or_else(|p| p.into_inner()) = Arc::clone(&fresh);
                self.restarts.fetch_add(1, Ordering::Relaxed);
                fresh
            }
            Err(_) => now,
        }
    }
}

/// How long a session a fleet's session moved away from is kept before it is closed (calls
/// still in flight on it finish there).
const MOVED_CLOSE_AFTER: Duration = Duration::from_secs(10);

/// A fleet session: its relay now and what it follows.
pub struct FleetSlot {
    index: usize,
    urls: super::LiveUrls,
    current: std::sync::RwLock<(String, Arc<HttpSession>)>,
    moving: tokio::sync::Mutex<()>,
    moves: AtomicU64,
    /// The trace context its sessions' set-up carries (`--otlp`).
    traceparent: Option<String>,
}

impl FleetSlot {
    fn current(&self) -> (String, Arc<HttpSession>) {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The relay this session should be on now, if the list names any.
    fn wanted(&self) -> Option<String> {
        let urls = self.urls.0.borrow();
        (!urls.is_empty()).then(|| urls[self.index % urls.len()].clone())
    }

    /// The session to call through: moved first if the list now gives this session another
    /// relay (a new MCP session there, initialized; if that fails, it stays where it is and
    /// tries again at its next call).
    async fn live(&self) -> Arc<HttpSession> {
        let (url, cur) = self.current();
        let Some(want) = self.wanted().filter(|w| *w != url) else {
            return cur;
        };
        let _moving = self.moving.lock().await;
        let (url, cur) = self.current();
        if url == want {
            return cur;
        }
        match open_http(&want, &[], self.index, self.traceparent.as_deref()).await {
            Ok(fresh) => {
                let fresh = Arc::new(fresh);
                *self.current.write().unwrap_or_else(|p| p.into_inner()) =
                    (want, Arc::clone(&fresh));
                self.moves.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(async move {
                    tokio::time::sleep(MOVED_CLOSE_AFTER).await;
                    cur.close(Duration::from_secs(2)).await;
                });
                fresh
            }
            Err(_) => cur,
        }
    }

    /// The relay it is on now (for tests).
    pub fn url(&self) -> String {
        self.current().0
    }
}

impl Session {
    /// A request; an `ok` answer is checked against `schema` (the tool's `outputSchema`),
    /// and the value its result offers later steps returned when `keep`.
    pub async fn request(
        &self,
        method: &str,
        params: &str,
        timeout: Duration,
        schema: Option<&Arc<jsonschema::Validator>>,
        keep: bool,
    ) -> (Answer, Option<serde_json::Value>) {
        match self {
            Session::Stdio(s) => {
                s.live()
                    .await
                    .request(method, params, timeout, schema.cloned(), keep)
                    .await
            }
            Session::Http(s) => {
                s.request(method, params, timeout, schema.map(|v| &**v), keep)
                    .await
            }
            Session::Fleet(f) => {
                f.live()
                    .await
                    .request(method, params, timeout, schema.map(|v| &**v), keep)
                    .await
            }
            // Calls reach a routed agent's parts through [`Session::part`]; a request made
            // of the agent as a whole goes to its first server.
            Session::Routed(r) => match r.parts.first() {
                Some(p) => Box::pin(p.request(method, params, timeout, schema, keep)).await,
                None => (Answer::Closed, None),
            },
        }
    }

    /// The session a call to server `i` of a routed agent goes through (any other session
    /// is its own only part).
    pub fn part(&self, i: usize) -> &Session {
        match self {
            Session::Routed(r) => r.parts.get(i).or(r.parts.first()).unwrap_or(self),
            other => other,
        }
    }

    /// A request's raw answer (`None`: none in time); a routed agent asks its first server.
    pub async fn request_raw(
        &self,
        method: &str,
        params: &str,
        timeout: Duration,
    ) -> Option<Vec<u8>> {
        match self {
            Session::Stdio(s) => s.current().request_raw(method, params, timeout).await,
            Session::Http(s) => s.request_raw(method, params, timeout).await,
            Session::Fleet(f) => f.live().await.request_raw(method, params, timeout).await,
            Session::Routed(r) => match r.parts.first() {
                Some(p) => Box::pin(p.request_raw(method, params, timeout)).await,
                None => None,
            },
        }
    }

    /// The output schemas of the server's tools (`tools/list`, first page); none if the
    /// server does not answer.
    pub async fn schemas(&self) -> wire::Schemas {
        if let Session::Routed(r) = self {
            let mut all = wire::Schemas::new();
            for p in &r.parts {
                all.extend(Box::pin(p.schemas()).await);
            }
            return all;
        }
        let raw = self.request_raw("tools/list", "{}", INIT_TIMEOUT).await;
        raw.map(|r| wire::schemas(&r)).unwrap_or_default()
    }

    pub async fn close(&self) {
        let wait = Duration::from_secs(2);
        match self {
            Session::Stdio(s) => s.current().close(wait).await,
            Session::Http(s) => s.close(wait).await,
            Session::Fleet(f) => f.current().1.close(wait).await,
            Session::Routed(r) => {
                futures::future::join_all(r.parts.iter().map(|p| Box::pin(p.close()))).await;
            }
        }
    }

    /// How many times the session was started again after its process exited.
    pub fn restarts(&self) -> u64 {
        match self {
            Session::Stdio(s) => s.restarts.load(Ordering::Relaxed),
            Session::Http(_) | Session::Fleet(_) => 0,
            Session::Routed(r) => r.parts.iter().map(Session::restarts).sum(),
        }
    }
}

/// Open `n` sessions on `target`, all initialized, at most 16 starting at once.
pub async fn open_all(target: &LoadTarget, n: usize) -> Result<Vec<Session>, LoadError> {
    open_all_from(target, 0, n, None).await
}

/// [`open_all`] with every HTTP session's set-up under the trace context `traceparent`.
pub async fn open_all_traced(
    target: &LoadTarget,
    n: usize,
    traceparent: Option<&str>,
) -> Result<Vec<Session>, LoadError> {
    open_all_from(target, 0, n, traceparent).await
}

/// [`open_all`] for sessions `first..first + n`.
pub async fn open_all_from(
    target: &LoadTarget,
    first: usize,
    n: usize,
    traceparent: Option<&str>,
) -> Result<Vec<Session>, LoadError> {
    use futures::stream::{self, StreamExt, TryStreamExt};
    if let LoadTarget::Fleet { urls, live } = target {
        if urls.is_empty() {
            return Err(LoadError::BadUrl { url: String::new() });
        }
        // Round-robin by session: each session is one streamable-HTTP session on its relay.
        return stream::iter(first..first + n)
            .map(|i| async move {
                let url = urls[i % urls.len()].clone();
                let s = open_http(&url, &[], i, traceparent).await?;
                Ok(match live {
                    None => Session::Http(s),
                    Some(live) => Session::Fleet(FleetSlot {
                        index: i,
                        urls: live.clone(),
                        current: std::sync::RwLock::new((url, Arc::new(s))),
                        moving: tokio::sync::Mutex::new(()),
                        moves: AtomicU64::new(0),
                        traceparent: traceparent.map(str::to_string),
                    }),
                })
            })
            .buffered(16)
            .try_collect()
            .await;
    }
    if let LoadTarget::Servers { servers } = target {
        return stream::iter(first..first + n)
            .map(|i| super::routed::open(servers, i))
            .buffered(16)
            .try_collect()
            .await;
    }
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
        LoadTarget::Stdio { .. } | LoadTarget::Servers { .. } | LoadTarget::Fleet { .. } => None,
    };
    stream::iter(first..first + n)
        .map(|i| open(target, url.clone(), i, traceparent))
        .buffered(16)
        .try_collect()
        .await
}

/// Session `i` on the streamable-HTTP endpoint `url`, initialized.
async fn open_http(
    url: &str,
    headers: &[(String, String)],
    i: usize,
    traceparent: Option<&str>,
) -> Result<HttpSession, LoadError> {
    let parsed = reqwest::Url::parse(url)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .ok_or_else(|| LoadError::BadUrl {
            url: url.to_string(),
        })?;
    let target = LoadTarget::Http {
        url: url.to_string(),
        headers: headers.to_vec(),
    };
    match open(&target, Some(parsed), i, traceparent).await? {
        Session::Http(s) => Ok(s),
        _ => Err(LoadError::BadUrl {
            url: url.to_string(),
        }),
    }
}

pub(super) async fn open(
    target: &LoadTarget,
    url: Option<reqwest::Url>,
    i: usize,
    traceparent: Option<&str>,
) -> Result<Session, LoadError> {
    match (target, url) {
        (LoadTarget::Http { headers, .. }, Some(url)) => {
            // Session number `i` is labelled `load-i` for a brownout relay on the way, which
            // then draws its blast radius from the label, not the order sessions happened to
            // arrive in: the same seed puts the same sessions under the faults every run.
            let mut headers = headers.clone();
            if !headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case(LABEL_HEADER))
            {
                headers.push((LABEL_HEADER.to_string(), format!("load-{i}")));
            }
            let s = HttpSession::new(http::client(&headers)?, url)
                .traced(traceparent.map(str::to_string));
            s.initialize(INIT_TIMEOUT)
                .await
                .map_err(|reason| LoadError::Initialize { session: i, reason })?;
            Ok(Session::Http(s))
        }
        (LoadTarget::Stdio { command }, _) => Ok(Session::Stdio(StdioSlot {
            command: command.clone(),
            index: i,
            current: std::sync::RwLock::new(Arc::new(start_stdio(command, i).await?)),
            restart: tokio::sync::Mutex::new(Instant::now()),
            restarts: AtomicU64::new(0),
        })),
        (LoadTarget::Http { url, .. }, None) => Err(LoadError::BadUrl { url: url.clone() }),
        // Opened by `open_all_from`, a session per server (`super::routed`).
        (LoadTarget::Servers { .. }, _) => Err(LoadError::Route(
            "a routed agent is opened through its servers".into(),
        )),
        (LoadTarget::Fleet { .. }, _) => Err(LoadError::Route(
            "a fleet's sessions are opened each on its relay".into(),
        )),
    }
}

/// Start `command` and initialize it as session `i`.
async fn start_stdio(command: &[String], i: usize) -> Result<StdioSession, LoadError> {
    let s = StdioSession::spawn(command).map_err(|source| LoadError::Spawn {
        command: command.join(" "),
        source,
    })?;
    match s
        .request(
            "initialize",
            &wire::initialize_params(),
            INIT_TIMEOUT,
            None,
            false,
        )
        .await
        .0
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
    Ok(s)
}
