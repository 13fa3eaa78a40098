//! A probe session kept open between samples, as an agent host keeps its server: opened
//! like an `mcp` probe (`initialize`, `initialized`, `tools/list`), then one `tools/call`
//! per sample judged exactly as a probe's (the same failure reasons). The experiment
//! runner's `during: true` probes sample through it, so a server killed and restarted
//! under the session is seen failing and coming back.

use super::mcp::{call_tool, find_tool, handshake, judge_call, open_wire, Wire};
use super::reason::{Failure, FailureReason};
use super::spec::McpProbe;
use super::Phases;
use brownout_core::sli::Slis;
use std::time::Duration;
use tokio::time::Instant;

/// An open probe session.
pub struct Session {
    wire: Wire,
    slis: Slis,
    next_id: u64,
}

impl Session {
    /// Open the session and find the probe's tool (`m.call` is required).
    pub async fn open(
        m: &McpProbe,
        client: &reqwest::Client,
        deadline: Instant,
    ) -> Result<Session, Failure> {
        let Some(call) = &m.call else {
            return Err(Failure::new(
                FailureReason::ToolMissing,
                "a kept probe session needs a `call`",
            ));
        };
        let mut phases = Phases::default();
        let mut wire = open_wire(m, client, deadline, &mut phases).await?;
        let found = match handshake(&mut wire, deadline, &mut phases).await {
            Ok(tools) => find_tool(&tools, &call.tool),
            Err(f) => Err(f),
        };
        match found {
            Ok(slis) => Ok(Session {
                wire,
                slis,
                next_id: 100,
            }),
            Err(f) => {
                let _ = tokio::time::timeout(
                    Duration::from_secs(2),
                    wire.close(Duration::from_secs(1)),
                )
                .await;
                Err(f)
            }
        }
    }

    /// One `tools/call` of the probe's call, judged; `Err` says why it failed.
    pub async fn sample(&mut self, m: &McpProbe, deadline: Instant) -> Result<(), Failure> {
        let Some(call) = &m.call else {
            return Err(Failure::new(FailureReason::ToolMissing, "no `call`"));
        };
        self.next_id += 1;
        let left = deadline.saturating_duration_since(Instant::now());
        let answer =
            match tokio::time::timeout(left, call_tool(&mut self.wire, self.next_id, call)).await {
                Ok(a) => a?,
                Err(_) => {
                    return Err(Failure::new(
                        FailureReason::Timeout {
                            phase: "tools_call".into(),
                        },
                        format!("`{}` did not answer within the probe's time", call.tool),
                    ))
                }
            };
        judge_call(m, &call.tool, &answer, &self.slis).map(|_| ())
    }

    /// Close the session (bounded).
    pub async fn close(self) {
        let _ = tokio::time::timeout(
            Duration::from_secs(2),
            self.wire.close(Duration::from_secs(1)),
        )
        .await;
    }
}

/// Whether a failure leaves the session unusable (the next sample opens a new one): every
/// reason but the answer-level ones (a tool error, a JSON-RPC error, a schema or content
/// mismatch, slowness).
pub fn ends_session(reason: &FailureReason) -> bool {
    !matches!(
        reason,
        FailureReason::ToolError
            | FailureReason::JsonrpcError { .. }
            | FailureReason::SchemaInvalid
            | FailureReason::UnexpectedContent
            | FailureReason::Latency
    )
}
