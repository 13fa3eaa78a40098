//! The scenario templates, one file each: what a scenario is called, what it means, and
//! the escalating series it yields for a target (docs/design.md lists their parameters).
//! Every series has three steps of rising strength; the builder gives step *n* the
//! policy's ladder up to rung *n* (above what the store's history already allows).

mod dependency_outage;
mod error_burst;
mod pool_exhaustion;
mod process_kill;
mod rate_limit;
mod registry_stale;
mod retry_storm;
mod schema_drift;
mod silent_corruption;
mod slow_dependency;

use super::{Ground, Series};
use rmcp::model::Tool;
use serde_json::{json, Value};

/// A designed load's agents: their think time between calls (ms); a scenario's estimate
/// (rate_limit.rs) counts with it, and the load (build.rs) sets it.
pub const THINK_MS: u64 = 20;
/// The most tools a designed load calls.
pub const LOAD_TOOLS: usize = 3;

/// A scenario template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scenario {
    SlowDependency,
    ErrorBurst,
    RateLimit,
    PoolExhaustion,
    RetryStorm,
    ProcessKill,
    SchemaDrift,
    SilentCorruption,
    RegistryStale,
    DependencyOutage,
}

impl Scenario {
    /// Every scenario, in the order a GameDay runs them (the seed's escalation first).
    pub const ALL: &'static [Scenario] = &[
        Scenario::SlowDependency,
        Scenario::ErrorBurst,
        Scenario::RateLimit,
        Scenario::PoolExhaustion,
        Scenario::RetryStorm,
        Scenario::ProcessKill,
        Scenario::SchemaDrift,
        Scenario::SilentCorruption,
        Scenario::RegistryStale,
        Scenario::DependencyOutage,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::SlowDependency => "slow_dependency",
            Scenario::ErrorBurst => "error_burst",
            Scenario::RateLimit => "rate_limit",
            Scenario::PoolExhaustion => "pool_exhaustion",
            Scenario::RetryStorm => "retry_storm",
            Scenario::ProcessKill => "process_kill",
            Scenario::SchemaDrift => "schema_drift",
            Scenario::SilentCorruption => "silent_corruption",
            Scenario::RegistryStale => "registry_stale",
            Scenario::DependencyOutage => "dependency_outage",
        }
    }

    /// By name (`pool_exhaustion`; `pool-exhaustion` too).
    pub fn from_name(s: &str) -> Option<Scenario> {
        let s = s.trim().replace('-', "_");
        Scenario::ALL.iter().copied().find(|x| x.name() == s)
    }

    /// Every name, for errors and schemas.
    pub fn names() -> Vec<&'static str> {
        Scenario::ALL.iter().map(|s| s.name()).collect()
    }

    /// The title its experiments share (one ladder for the series).
    pub fn title(self) -> &'static str {
        match self {
            Scenario::SlowDependency => "a slow dependency",
            Scenario::ErrorBurst => "bursts of errors",
            Scenario::RateLimit => "a rate limit",
            Scenario::PoolExhaustion => "an exhausted connection pool",
            Scenario::RetryStorm => "a retry storm",
            Scenario::ProcessKill => "a killed server process",
            Scenario::SchemaDrift => "a drifted output schema",
            Scenario::SilentCorruption => "subtly wrong results",
            Scenario::RegistryStale => "a stale tool registry",
            Scenario::DependencyOutage => "a dependency outage",
        }
    }

    /// What it tests, in one sentence.
    pub fn summary(self) -> &'static str {
        match self {
            Scenario::SlowDependency => "one tool (the dependency) slows toward the client's timeout: 30 %, 60 %, 90 % of it on every call in the blast radius",
            Scenario::ErrorBurst => "errors that come in bursts (a Gilbert model), 2 %, 5 %, 15 % of calls in runs of 3, 8, 16, against a client with three attempts",
            Scenario::RateLimit => "a real token bucket per session at 80 %, 50 %, 25 % of the load's own call rate; calls over it are refused with retry_after_ms",
            Scenario::PoolExhaustion => "a bounded pool squeezed (the seed incident): 5 %, 25 %, 50 % of calls refused as `connection pool exhausted`, slow slots from step 2, 20 sessions with bounded retries",
            Scenario::RetryStorm => "a client with unbounded retries and a rejecting outbound limiter meets 10 %, 30 %, 60 % refused calls: amplification is the gate",
            Scenario::ProcessKill => "the stdio server is killed (SIGKILL) and restarted: once, three times, then every fifth call per session",
            Scenario::SchemaDrift => "the results break their declared shape: a field retyped, dropped, then any mutation, in 10 %, 30 %, 60 % of answers",
            Scenario::SilentCorruption => "well-formed but wrong results (`corrupt`): a value perturbed, swapped, then stale, in 10 %, 30 %, 60 % of answers; gated on what the agent does with them",
            Scenario::RegistryStale => "the tool registry lies: a stale schema, a hidden tool, then a listed tool whose calls fail",
            Scenario::DependencyOutage => "the dependency goes down: 25 %, 60 %, then every call to it refused as unavailable",
        }
    }

    /// The series this template yields for a target, or why it does not apply.
    pub fn series(self, g: &Ground) -> Result<Series, String> {
        if g.load.is_empty() {
            return Err("the target lists no tool a designed load may call".into());
        }
        match self {
            Scenario::SlowDependency => slow_dependency::series(g),
            Scenario::ErrorBurst => error_burst::series(g),
            Scenario::RateLimit => rate_limit::series(g),
            Scenario::PoolExhaustion => pool_exhaustion::series(g),
            Scenario::RetryStorm => retry_storm::series(g),
            Scenario::ProcessKill => process_kill::series(g),
            Scenario::SchemaDrift => schema_drift::series(g),
            Scenario::SilentCorruption => silent_corruption::series(g),
            Scenario::RegistryStale => registry_stale::series(g),
            Scenario::DependencyOutage => dependency_outage::series(g),
        }
    }
}

/// A glob that matches this tool alone, whatever characters its name holds.
fn glob(t: &Tool) -> String {
    brownout_core::select::escape(&t.name)
}

/// Globs of every tool the load calls.
fn all_globs(g: &Ground) -> Vec<String> {
    g.load.iter().take(LOAD_TOOLS).map(|t| glob(t)).collect()
}

/// A series with the usual load: 8 sessions, the client's timeout, no pool, 15 s recovery.
fn base(tool: Option<&Tool>, parameters: Value) -> Series {
    Series {
        tool: tool.map(|t| t.name.to_string()),
        parameters,
        sessions: 8,
        client: json!({}),
        pool: None,
        steps: Vec::new(),
        recovery_s: 15,
    }
}

/// Bounded retries: three attempts, jittered exponential backoff.
fn bounded_retries() -> Value {
    json!({"max_attempts": 3, "backoff_ms": 20, "multiplier": 2.0, "max_backoff_ms": 200, "jitter": 0.5})
}

/// A tool's name quoted for brownout's own sentences (it is the target's text).
fn q(t: &Tool) -> String {
    crate::target::untrusted::quote(&t.name, 60)
}
