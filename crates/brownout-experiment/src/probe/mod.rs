//! Synthetic probes: `brownout probe`. One probe checks one thing end to end and says why
//! it failed — a real MCP session (`mcp`), an HTTP endpoint (`http`), a command
//! (`command`) or a running relay's live SLIs (`sli`) — with the time of each phase.
//! The failure taxonomy, options and alert body are in docs/probes.md.
//!
//! For other parts of brownout (the experiment runner): [`ProbeSpec`] (deserializable from
//! YAML, with a JSON Schema), [`run_once`] and [`monitor::Monitor`], whose events say when
//! an alert fired and when the target recovered.
//!
//! - [`spec`]: what a probe is; [`reason`]: why it failed;
//! - [`mcp`], [`wire`], [`wire_http`], [`wire_stdio`]: the MCP session and its two wires;
//! - [`kinds`]: the `http`, `command` and `sli` probes;
//! - [`steady`]: a probe run `samples` times, judged by its tolerance; [`session`]: a
//!   session kept open between samples (the runner's `during: true` probes);
//! - [`monitor`], [`rolling`], [`alert`], [`metrics`], [`targets`]: monitor mode;
//! - [`cli`]: the command line.

pub mod alert;
pub mod cli;
pub mod kinds;
pub mod mcp;
pub mod metrics;
pub mod monitor;
pub mod otel;
pub mod reason;
pub mod rolling;
pub mod session;
pub mod spec;
pub mod steady;
pub mod targets;
pub mod wire;
pub mod wire_http;
pub mod wire_stdio;

pub use monitor::{Monitor, MonitorEvent, MonitorOptions};
pub use reason::{Failure, FailureReason};
pub use spec::ProbeSpec;

use serde::Serialize;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;

/// The MCP protocol versions a probe accepts; it asks for the last.
pub const PROTOCOL_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// How long one phase took.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseTime {
    /// `spawn`, `initialize`, `initialized`, `tools_list`, `tools_call`, `close` (mcp);
    /// `request` (http); `run` (command); `status` (sli).
    pub phase: String,
    pub ms: f64,
}

/// One probe's outcome (one line of `--json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProbeResult {
    pub ok: bool,
    /// What was probed (no header values, no URL credentials).
    pub target: String,
    /// Why it failed (`null` when `ok`): `{"reason": "timeout", "phase": "tools_list"}`.
    pub failure_reason: Option<FailureReason>,
    /// The reason as one word with its detail in brackets: `http_status(503)`.
    pub failure: Option<String>,
    pub phases: Vec<PhaseTime>,
    /// When the probe started, in milliseconds since the Unix epoch.
    pub at_ms: f64,
    /// Wall time of the whole probe, close included.
    pub total_ms: f64,
    /// What passed, or what went wrong, in a sentence (never a header's value).
    pub detail: String,
}

/// The phases of a probe as they complete.
#[derive(Debug, Default)]
pub struct Phases(pub Vec<PhaseTime>);

impl Phases {
    /// Run one phase against the probe's deadline; past it, `timeout` naming the phase.
    pub async fn time<T>(
        &mut self,
        phase: &str,
        deadline: Instant,
        fut: impl std::future::Future<Output = Result<T, Failure>>,
    ) -> Result<T, Failure> {
        let start = Instant::now();
        let r = tokio::time::timeout_at(deadline, fut).await;
        self.0.push(PhaseTime {
            phase: phase.to_string(),
            ms: start.elapsed().as_secs_f64() * 1000.0,
        });
        match r {
            Ok(r) => r,
            Err(_) => Err(Failure::new(
                FailureReason::Timeout {
                    phase: phase.to_string(),
                },
                format!("no answer in {phase} before the probe's time budget ran out"),
            )),
        }
    }
}

/// The HTTP client every probe in this process shares (its connection pool too).
pub fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .pool_idle_timeout(Duration::from_secs(30))
            .build()
            .unwrap_or_default()
    })
}

/// Run one probe.
pub async fn run_once(spec: &ProbeSpec) -> ProbeResult {
    run_with(spec, client()).await
}

/// Run one probe with this HTTP client.
pub async fn run_with(spec: &ProbeSpec, client: &reqwest::Client) -> ProbeResult {
    let at_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0);
    let started = Instant::now();
    let deadline = started + spec.timeout();
    let mut phases = Phases::default();
    let r = match spec {
        ProbeSpec::Mcp(m) => mcp::probe(m, client, deadline, &mut phases).await,
        ProbeSpec::Http(h) => kinds::http(h, client, deadline, &mut phases).await,
        ProbeSpec::Command(c) => kinds::command(c, deadline, &mut phases).await,
        ProbeSpec::Sli(s) => kinds::sli(s, client, deadline, &mut phases).await,
    };
    let (ok, reason, detail) = match r {
        Ok(d) => (true, None, d),
        Err(f) => (false, Some(f.reason), f.detail),
    };
    ProbeResult {
        ok,
        target: spec.target(),
        failure: reason.as_ref().map(ToString::to_string),
        failure_reason: reason,
        phases: phases.0,
        at_ms,
        total_ms: started.elapsed().as_secs_f64() * 1000.0,
        detail: scrub(&detail, &spec.secrets()),
    }
}

/// Replace every secret in `text` with `***`.
pub fn scrub(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for s in secrets {
        if !s.is_empty() {
            out = out.replace(s.as_str(), "***");
        }
        // A bearer token alone (the server may echo just the token).
        if let Some(token) = s.strip_prefix("Bearer ").filter(|t| t.len() >= 3) {
            out = out.replace(token, "***");
        }
    }
    out
}
