//! Live, agent-like load: brownout plays a workload (the simulator's format, with each
//! call's `arguments`) against a real MCP server with its own clients, many sessions at once,
//! each a real MCP session (`initialize`, `notifications/initialized`, then `tools/call`s).
//!
//! - [`schedule`]: when tasks arrive (open loop, seeded) and which session runs them;
//! - [`agent`]: one task's steps, calls, retries, limiter, breaker and deadlines;
//! - `chain`: arguments taken from earlier results, and the agent's policy on them;
//! - [`wire`]: the JSON-RPC text both transports send and how answers are read;
//! - [`stdio`] and [`http`]: the two transports; [`session`] picks one;
//! - [`stats`]: the summary (outcomes, latency percentiles, rates);
//! - [`cli`]: `brownout load`.
//!
//! Latency is measured from each call's *intended* start: in an open loop, a task's first
//! step is due at its scheduled arrival even if the generator (or the system) is behind, so a
//! stalled server shows up as latency, not as fewer calls (no coordinated omission).

pub mod agent;
mod chain;
pub mod cli;
pub mod http;
pub mod otel;
pub mod routed;
pub mod schedule;
pub mod session;
pub mod stats;
pub mod stdio;
pub mod trace;
pub mod wire;

pub use brownout_core::slo::{CallObservation, TaskObservation};
pub use brownout_sim::Workload;
pub use stats::{LatencySummary, LoadSummary};

use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

/// Where the load goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadTarget {
    /// A stdio MCP server: the command is started once per session (e.g. `brownout proxy
    /// stdio --plan P -- CMD`, or a server directly).
    Stdio { command: Vec<String> },
    /// A streamable-HTTP MCP endpoint; every session is its own `Mcp-Session-Id`. `headers`
    /// are sent with every request (e.g. `Authorization`).
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
    /// Several streamable-HTTP servers, by name: each session of the load is one agent with
    /// a session on every server, all labelled alike (`Brownout-Session: load-i`), and each
    /// call goes to the server whose `tools/list` has its tool.
    Servers { servers: Vec<(String, String)> },
    /// A fleet of relays, each in front of one replica of the same server: session `i`
    /// goes to `urls[i mod n]` (labelled `load-i` as with one URL). With `live` (a DNS
    /// fleet resolved again during the run), the list is followed: a session whose relay is
    /// no longer `urls[i mod n]` moves (a new MCP session, same label) at its next call, so
    /// the load spreads over relays that join and leaves those that left.
    Fleet {
        urls: Vec<String>,
        live: Option<LiveUrls>,
    },
}

/// A fleet's MCP URLs as they change during a run (sorted; the runner's DNS resolution).
#[derive(Clone)]
pub struct LiveUrls(pub tokio::sync::watch::Receiver<Vec<String>>);

impl std::fmt::Debug for LiveUrls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LiveUrls({:?})", *self.0.borrow())
    }
}

/// Two live lists are alike: a target is compared by what it names, not by its updates.
impl PartialEq for LiveUrls {
    fn eq(&self, _: &LiveUrls) -> bool {
        true
    }
}

impl Eq for LiveUrls {}

/// How to play the workload.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Sessions at once: with a stdio target, processes; with HTTP, MCP sessions. Tasks are
    /// spread over them round robin (task `k`, or agent `k` in a closed loop, uses session
    /// `k mod sessions`). At least 1.
    pub sessions: usize,
    /// Run for this long, whatever the workload's `tasks`; without it, the workload's
    /// `tasks` (default 1000) are run to the end.
    pub duration: Option<Duration>,
    /// Overrides the workload's `seed` (arrivals, retry jitter): a seed replays the same
    /// schedule.
    pub seed: Option<u64>,
    /// Cancel to stop: no new task, step, attempt or retry starts; attempts in flight get a
    /// short grace (at most [`STOP_GRACE`]) to finish. A call or task cut short (one that
    /// would still have retried, or whose steps had not all run) is not reported.
    pub cancel: CancellationToken,
    /// With `--otlp`: each logical call is a client span, its attempts carry its
    /// `traceparent` (see [`trace`]).
    pub trace: Option<trace::CallTracer>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            sessions: 1,
            duration: None,
            seed: None,
            cancel: CancellationToken::new(),
            trace: None,
        }
    }
}

/// How long calls in flight may take to finish once the load stops.
pub const STOP_GRACE: Duration = Duration::from_secs(2);

/// What the load reports as it runs, in completion order.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadEvent {
    /// A logical call ended (after its retries).
    Call(CallObservation),
    /// A task ended.
    Task(TaskObservation),
}

/// Why the load could not run. Calls that fail are not errors: they are observations.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("no command given for the stdio target")]
    NoCommand,
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{url}` is not an http:// or https:// URL")]
    BadUrl { url: String },
    #[error("invalid header `{name}`: {reason}")]
    BadHeader { name: String, reason: String },
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    #[error("session {session} could not initialize: {reason}")]
    Initialize { session: usize, reason: String },
    #[error("{0}")]
    Route(String),
}

/// Play `workload` against `target`; every ended call and task is sent on `events` (a
/// dropped receiver is fine). Returns when the tasks are done, the duration is up, or
/// `opts.cancel` fires. Errors only when the sessions cannot be set up.
pub async fn run(
    workload: &Workload,
    target: LoadTarget,
    opts: LoadOptions,
    events: UnboundedSender<LoadEvent>,
) -> Result<LoadSummary, LoadError> {
    agent::run(workload, target, opts, events).await
}
