//! `process`: act on the stdio server process itself.
//!
//! `action: kill` sends `signal` (TERM or KILL) when a matching call arrives (use the
//! selectors: `after_calls: 10` kills on the 11th call) or at `at_ms` of run time;
//! `action: pause` stops the process (SIGSTOP) for `pause_ms` and continues it (SIGCONT).
//! `restart` (`never` or `on_failure`, with exponential `restart_backoff_ms` and
//! `max_restarts`) tells the relay whether to bring a dead server back. Requests in flight
//! when the server dies are answered with a clear JSON-RPC error by the relay.

use super::simulated::SimulatedCall;
use super::{AddedDelay, FaultKind, KindInfo, Phase, CALLS};
use super::{Ctx, Shaping};
use crate::capability::{Capability, Need};
use crate::select::Direction;
use crate::time::Time;
use crate::verdict::{ProcessAction, Signal};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    #[default]
    Kill,
    Pause,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SignalSpec {
    #[default]
    Term,
    Kill,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Restart {
    #[default]
    Never,
    OnFailure,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct Process {
    /// `kill` (default) or `pause`.
    #[serde(default)]
    pub action: Action,
    /// kill: `TERM` (default) or `KILL`.
    #[serde(default)]
    pub signal: SignalSpec,
    /// Also (or only) trigger at this run time, in milliseconds.
    #[serde(default, deserialize_with = "crate::millis::opt")]
    #[schemars(schema_with = "crate::millis::opt_schema")]
    pub at_ms: Option<f64>,
    /// pause: how long the process stays stopped (default 1000).
    #[serde(default, deserialize_with = "crate::millis::opt")]
    #[schemars(schema_with = "crate::millis::opt_schema")]
    pub pause_ms: Option<f64>,
    /// What the relay does when the server dies: `never` (default) or `on_failure`.
    #[serde(default)]
    pub restart: Restart,
    /// First restart delay in milliseconds, doubled after each restart (default 500).
    #[serde(default, deserialize_with = "crate::millis::opt")]
    #[schemars(schema_with = "crate::millis::opt_schema")]
    pub restart_backoff_ms: Option<f64>,
    /// Give up after this many restarts (default 5).
    #[serde(default)]
    pub max_restarts: Option<u32>,
}

impl Process {
    pub fn action(&self) -> ProcessAction {
        match self.action {
            Action::Kill => ProcessAction::Kill(match self.signal {
                SignalSpec::Term => Signal::Term,
                SignalSpec::Kill => Signal::Kill,
            }),
            Action::Pause => {
                ProcessAction::Pause(Time((self.pause_ms.unwrap_or(1000.0) * 1000.0) as u64))
            }
        }
    }

    pub fn apply(&self, _c: &Ctx<'_>, s: &mut Shaping<'_>) -> String {
        let a = self.action();
        s.process.push(a);
        a.to_string()
    }
}

/// The restart policy the relay follows, from the first `process` fault that sets one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RestartPolicy {
    pub on_failure: bool,
    pub backoff: Time,
    pub max_restarts: u32,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        RestartPolicy {
            on_failure: false,
            backoff: Time::from_millis(500),
            max_restarts: 5,
        }
    }
}

impl RestartPolicy {
    pub fn from_fault(p: &Process) -> RestartPolicy {
        RestartPolicy {
            on_failure: p.restart == Restart::OnFailure,
            backoff: Time((p.restart_backoff_ms.unwrap_or(500.0) * 1000.0) as u64),
            max_restarts: p.max_restarts.unwrap_or(5),
        }
    }

    /// Delay before restart number `n` (0-based): exponential backoff, capped at 30 s.
    pub fn delay(&self, n: u32) -> Time {
        Time(
            self.backoff
                .0
                .saturating_mul(1u64 << n.min(16))
                .min(30_000_000),
        )
    }
}

pub const KIND: KindInfo = KindInfo::of::<Process>(
    "process",
    "kill (TERM/KILL) or pause (STOP/CONT) the stdio server; restart policy",
    CALLS,
    Direction::ToServer,
    r#"{}"#,
);

impl FaultKind for Process {
    fn signals_process(&self) -> bool {
        true
    }

    fn acts_on_request(&self, _direction: Direction) -> bool {
        true
    }

    fn acts_on_response(&self, _direction: Direction) -> bool {
        false
    }

    /// Killing a server is an event, not a rate: once per session unless told otherwise.
    fn default_max_injections(&self) -> Option<u64> {
        Some(1)
    }

    fn timer(&self) -> Option<Time> {
        self.at_ms.map(|ms| Time((ms * 1000.0) as u64))
    }

    fn needs(&self, _direction: Direction) -> Vec<Need> {
        let mut n = vec![Need::whole(Capability::SignalProcess)];
        if self.at_ms.is_some() {
            n.push(Need::key(Capability::ProcessTimers, "at_ms"));
        }
        n
    }

    fn act(&self, phase: Phase, c: &mut Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        match phase {
            Phase::Request => Some(self.apply(c, s)),
            Phase::Response => None,
        }
    }

    /// A process fault acts on a real process: the simulator does not model it.
    fn simulate(&self, _direction: Direction, _c: &mut Ctx<'_>, _out: &mut SimulatedCall) -> bool {
        false
    }

    /// A pause stops every call for `pause_ms`; a kill cuts them (a failure, not a delay).
    fn max_added_delay(&self) -> AddedDelay {
        match self.action {
            Action::Pause => AddedDelay::Bounded(self.pause_ms.unwrap_or(1000.0)),
            Action::Kill => AddedDelay::NONE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let p = RestartPolicy {
            on_failure: true,
            backoff: Time::from_millis(100),
            max_restarts: 3,
        };
        assert_eq!(p.delay(0), Time::from_millis(100));
        assert_eq!(p.delay(2), Time::from_millis(400));
        assert_eq!(p.delay(40), Time::from_millis(30_000));
    }
}
