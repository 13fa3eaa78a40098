//! The failure taxonomy: why a probe failed, one [`FailureReason`] per cause (docs/probes.md
//! lists what produces each), and the classification of transport errors into it.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Why a probe failed. Serialized as `{"reason": "timeout", "phase": "tools_list"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum FailureReason {
    /// Nothing listens at the address (TCP refused).
    ConnectionRefused,
    /// The host name does not resolve.
    Dns,
    /// TLS could not be set up (a handshake or certificate failure, or `https` unsupported).
    Tls,
    /// Another transport failure: the connection was reset or closed mid-exchange.
    ConnectionFailed,
    /// A phase did not finish within the probe's time budget.
    Timeout { phase: String },
    /// The server answered with an HTTP status the probe does not accept.
    HttpStatus { code: u16 },
    /// Not JSON-RPC 2.0, an unsupported protocol version, bad framing or a stream that
    /// ended without the answer.
    ProtocolError,
    /// `initialize` was answered with a JSON-RPC error.
    InitializeFailed { code: i64 },
    /// The tool to call is not in `tools/list`.
    ToolMissing,
    /// The tool answered with `isError: true`.
    ToolError,
    /// A request other than `initialize` was answered with a JSON-RPC error.
    JsonrpcError { code: i64 },
    /// `structuredContent` does not match the tool's advertised `outputSchema`.
    SchemaInvalid,
    /// An answer (a tool result, an HTTP body, a command's output) broke an expectation.
    UnexpectedContent,
    /// The answer came, but slower than the latency tolerance.
    Latency,
    /// The stdio server exited before the probe finished (`status`: its exit code;
    /// `signal`: the signal that killed it).
    ProcessExited {
        status: Option<i32>,
        signal: Option<i32>,
    },
    /// The command could not be started.
    SpawnFailed,
    /// A `command` probe's exit code is not the expected one.
    ExitStatus { code: Option<i32> },
    /// An `sli` probe's check does not hold.
    SliBreached,
}

impl FailureReason {
    /// The reason's name (`timeout`, `http_status`, …), as in `--json` and the metrics.
    pub fn name(&self) -> &'static str {
        match self {
            FailureReason::ConnectionRefused => "connection_refused",
            FailureReason::Dns => "dns",
            FailureReason::Tls => "tls",
            FailureReason::ConnectionFailed => "connection_failed",
            FailureReason::Timeout { .. } => "timeout",
            FailureReason::HttpStatus { .. } => "http_status",
            FailureReason::ProtocolError => "protocol_error",
            FailureReason::InitializeFailed { .. } => "initialize_failed",
            FailureReason::ToolMissing => "tool_missing",
            FailureReason::ToolError => "tool_error",
            FailureReason::JsonrpcError { .. } => "jsonrpc_error",
            FailureReason::SchemaInvalid => "schema_invalid",
            FailureReason::UnexpectedContent => "unexpected_content",
            FailureReason::Latency => "latency",
            FailureReason::ProcessExited { .. } => "process_exited",
            FailureReason::SpawnFailed => "spawn_failed",
            FailureReason::ExitStatus { .. } => "exit_status",
            FailureReason::SliBreached => "sli_breached",
        }
    }
}

impl fmt::Display for FailureReason {
    /// `timeout(tools_list)`, `http_status(503)`, `process_exited(1)`, `tool_missing`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.name();
        match self {
            FailureReason::Timeout { phase } => write!(f, "{name}({phase})"),
            FailureReason::HttpStatus { code } => write!(f, "{name}({code})"),
            FailureReason::InitializeFailed { code } | FailureReason::JsonrpcError { code } => {
                write!(f, "{name}({code})")
            }
            FailureReason::ProcessExited { status, signal } => match (status, signal) {
                (Some(s), _) => write!(f, "{name}({s})"),
                (None, Some(sig)) => write!(f, "{name}(signal {sig})"),
                (None, None) => f.write_str(name),
            },
            FailureReason::ExitStatus { code: Some(c) } => write!(f, "{name}({c})"),
            _ => f.write_str(name),
        }
    }
}

/// A failed step: the reason and a human explanation (never carrying a header's value).
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub reason: FailureReason,
    pub detail: String,
}

impl Failure {
    pub fn new(reason: FailureReason, detail: impl Into<String>) -> Failure {
        Failure {
            reason,
            detail: detail.into(),
        }
    }

    pub fn protocol(detail: impl Into<String>) -> Failure {
        Failure::new(FailureReason::ProtocolError, detail)
    }
}

/// Sort a transport error (reqwest's) into the taxonomy by walking its causes.
pub fn classify_http(e: &reqwest::Error) -> Failure {
    let mut chain = String::new();
    let mut refused = false;
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cur {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            refused |= io.kind() == std::io::ErrorKind::ConnectionRefused;
        }
        chain.push_str(&c.to_string());
        chain.push_str(": ");
        cur = c.source();
    }
    let lower = chain.to_ascii_lowercase();
    let detail = chain.trim_end_matches(": ").to_string();
    let reason = if refused || lower.contains("connection refused") {
        FailureReason::ConnectionRefused
    } else if lower.contains("dns error")
        || lower.contains("failed to lookup address")
        || lower.contains("name or service not known")
        || lower.contains("no address associated")
    {
        FailureReason::Dns
    } else if lower.contains("tls")
        || lower.contains("certificate")
        || lower.contains("ssl")
        || lower.contains("scheme is not http")
    {
        FailureReason::Tls
    } else if e.is_timeout() {
        FailureReason::Timeout {
            phase: "connect".into(),
        }
    } else {
        FailureReason::ConnectionFailed
    };
    Failure::new(reason, detail)
}
