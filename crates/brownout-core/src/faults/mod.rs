//! Fault kinds: one file each, behind one trait, registered in one list.
//!
//! The engine decides *whether* a fault hits a call (selectors, probability, correlation);
//! a kind decides *what* the hit does. Each `faults/<kind>.rs` holds the kind's parameters
//! (a serde + JSON Schema type), its semantic checks, its decision rules (which phases,
//! methods and directions it acts on), its live effect on the message passing, its effect
//! in the simulator and what it needs of a driver — the [`FaultKind`] trait — and a
//! [`KindInfo`] constant (name, summary, default methods and direction). [`KINDS`] lists
//! them all: adding a kind is a new file and one line in that list (and its `mod` line).

pub mod bandwidth;
pub mod cold_start;
pub mod connection;
pub mod correlation;
pub mod corrupt;
pub mod drop;
pub mod duplicate;
pub mod error;
pub mod http_status;
pub mod latency;
pub mod malformed;
pub mod partial_result;
pub(crate) mod perturb;
pub mod process;
pub mod rate_limit;
pub mod registry;
pub mod reorder;
pub mod schema_drift;
pub mod session_expiry;
mod shaping;
pub mod simulated;
pub mod slow_stream;
pub mod timeout;

use crate::capability::Need;
use crate::jsonrpc::Id;
use crate::rng::{salt, StreamKey};
use crate::select::{Direction, Globs};
use crate::time::Time;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde_json::Value;
pub use shaping::{Answer, Shaping};
use simulated::SimulatedCall;
use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// Every fault kind brownout knows, in the order the docs list them.
pub static KINDS: &[KindInfo] = &[
    latency::KIND,
    cold_start::KIND,
    error::KIND,
    timeout::KIND,
    malformed::KIND,
    drop::KIND,
    duplicate::KIND,
    reorder::KIND,
    rate_limit::KIND,
    schema_drift::KIND,
    partial_result::KIND,
    corrupt::KIND,
    registry::KIND,
    process::KIND,
    http_status::KIND,
    connection::KIND,
    slow_stream::KIND,
    bandwidth::KIND,
    session_expiry::KIND,
];

/// Which side of a call a fault is acting on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The request (or a message toward the server), as it passes.
    Request,
    /// The response (or a message toward the client), as it passes.
    Response,
}

/// How a fault's `tools` globs apply to a message (see [`FaultKind::targets`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Targets {
    /// The usual: the message must match the fault's selectors, `tools` included.
    BySelector,
    /// The selectors apply except `tools`, which names what the fault acts on (the tools a
    /// registry fault hides), not which calls it looks at.
    IgnoreTools,
    /// The fault does not look at this message at all (no counters move).
    Skip,
    /// The fault always hits this message, whatever its selectors and counters say.
    Always,
}

/// A semantic error in a fault's own keys (one the schema cannot express).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// JSON pointer of the key inside the fault, without the leading `/` (`min_ms`,
    /// `headers/X-A`).
    pub key: String,
    /// Point at the key itself rather than its value.
    pub at_key: bool,
    pub message: String,
}

impl Invalid {
    pub fn value(key: impl Into<String>, message: impl Into<String>) -> Invalid {
        Invalid {
            key: key.into(),
            at_key: false,
            message: message.into(),
        }
    }
}

/// Downcasting a kind to its type (the plan reads a `process` fault's restart policy).
pub trait AsAny {
    fn as_any(&self) -> &dyn Any;
}

impl<T: Any> AsAny for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// One fault kind: its checks, its decision rules, its live and simulated effects and what
/// it needs of a driver. `Self` is the kind's parameters, read from the plan.
pub trait FaultKind: AsAny + fmt::Debug + Send + Sync {
    /// Semantic checks the schema cannot express.
    fn check(&self) -> Vec<Invalid> {
        Vec::new()
    }

    /// Whether the fault looks at a `method` message calling `tool`, and how its `tools`
    /// globs apply. Default: by its selectors.
    fn targets(&self, _method: &str, _tool: Option<&str>, _tools: Option<&Globs>) -> Targets {
        Targets::BySelector
    }

    /// Whether a hit acts when the request passes (short-circuits, request delays, signals).
    fn acts_on_request(&self, direction: Direction) -> bool {
        direction == Direction::ToServer
    }

    /// Whether a hit also acts on the response of the call it hit.
    fn acts_on_response(&self, direction: Direction) -> bool {
        direction == Direction::ToClient
    }

    /// Whether the kind acts on messages outside any call (notifications, server requests).
    fn acts_on_loose_messages(&self) -> bool {
        false
    }

    /// Whether its short-circuit answer replaces one an earlier fault already gave.
    fn overrides_reply(&self) -> bool {
        false
    }

    /// Whether its state ([`Ctx::state`]) is one for all sessions rather than one each.
    fn shared_state(&self) -> bool {
        false
    }

    /// The selector default of `max_injections` per session (`None`: unlimited).
    fn default_max_injections(&self) -> Option<u64> {
        None
    }

    /// A run time at which the fault also fires on its own (the driver runs timers).
    fn timer(&self) -> Option<Time> {
        None
    }

    /// What the driver must be able to do for this fault to act at all.
    fn needs(&self, _direction: Direction) -> Vec<Need> {
        Vec::new()
    }

    /// Whether a hit changes the result itself (a drifted or truncated answer is not a
    /// correct one, whatever its schema says).
    fn alters_result(&self) -> bool {
        false
    }

    /// Whether the results it changes break the tool's output schema, so a gate on what
    /// the agent did with results (`correctness`, `eta`, `tcsr`) sees them; valid-but-wrong
    /// results need `silent_rate`, `safe_rate` or `propagated` (docs/silent.md).
    fn breaks_output_schema(&self) -> bool {
        false
    }

    /// Whether a hit signals the server's process (kills, stops it): the guardrails allow
    /// such faults only when the policy says so.
    fn signals_process(&self) -> bool {
        false
    }

    /// Whether the tools it selects may be absent from the server's list (it adds or
    /// hides entries of the list itself), so a selector naming no listed tool is no typo.
    fn selects_unlisted_tools(&self) -> bool {
        false
    }

    /// The live effect: shape the message in `phase`; the action in words, or `None` when
    /// the kind had nothing to do to this message (then the hit is not counted).
    fn act(&self, phase: Phase, c: &mut Ctx<'_>, s: &mut Shaping<'_>) -> Option<String>;

    /// The effect on a call the simulator makes; false when the kind does nothing to such a
    /// call (it is then not counted as injected).
    fn simulate(&self, direction: Direction, c: &mut Ctx<'_>, out: &mut SimulatedCall) -> bool;

    /// The most delay one hit can add to a call (guardrails cap it). No default: a new kind
    /// must say what it can add.
    fn max_added_delay(&self) -> AddedDelay;
}

/// The most delay one hit of a fault can add to a call, as its kind declares it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AddedDelay {
    /// At most this many milliseconds (0: the kind adds none).
    Bounded(f64),
    /// This many milliseconds before each event of an answer (a paced stream).
    PerEvent(f64),
    /// This many milliseconds for each KiB of an answer (a throttled link).
    PerKib(f64),
    /// No bound of its own; why, in words.
    Unbounded(&'static str),
}

impl AddedDelay {
    /// A kind that delays nothing.
    pub const NONE: AddedDelay = AddedDelay::Bounded(0.0);

    /// The most added to an answer of `events` events and `kib` KiB, in milliseconds;
    /// `None` when nothing bounds it.
    pub fn on_answer(&self, events: f64, kib: f64) -> Option<f64> {
        match *self {
            AddedDelay::Bounded(ms) => Some(ms.max(0.0)),
            AddedDelay::PerEvent(ms) => Some(ms.max(0.0) * events),
            AddedDelay::PerKib(ms) => Some(ms.max(0.0) * kib),
            AddedDelay::Unbounded(_) => None,
        }
    }
}

/// A kind that only rewrites the result of a call as it passes (`schema_drift`,
/// `partial_result`, `corrupt`): it acts on the response, whatever its direction, and what it
/// does changes the result itself. Its [`FaultKind`] follows from these.
pub trait ResultRewrite: AsAny + fmt::Debug + Send + Sync {
    /// Semantic checks the schema cannot express.
    fn check(&self) -> Vec<Invalid> {
        Vec::new()
    }

    /// Rewrite the result; the change in words, or `None` when there was nothing to change.
    fn rewrite(&self, c: &mut Ctx<'_>, s: &mut Shaping<'_>) -> Option<String>;

    /// How a rewritten answer ends in the simulator.
    fn simulated(&self) -> simulated::SimOutcome;

    /// See [`FaultKind::breaks_output_schema`].
    fn breaks_output_schema(&self) -> bool {
        false
    }
}

impl<T: ResultRewrite> FaultKind for T {
    fn check(&self) -> Vec<Invalid> {
        ResultRewrite::check(self)
    }

    fn acts_on_request(&self, _direction: Direction) -> bool {
        false
    }

    fn acts_on_response(&self, _direction: Direction) -> bool {
        true
    }

    fn alters_result(&self) -> bool {
        true
    }

    fn breaks_output_schema(&self) -> bool {
        ResultRewrite::breaks_output_schema(self)
    }

    fn act(&self, phase: Phase, c: &mut Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        match phase {
            Phase::Response => self.rewrite(c, s),
            Phase::Request => None,
        }
    }

    fn simulate(&self, _direction: Direction, _c: &mut Ctx<'_>, out: &mut SimulatedCall) -> bool {
        out.worsen(self.simulated());
        true
    }

    fn max_added_delay(&self) -> AddedDelay {
        AddedDelay::NONE
    }
}

/// What the registry knows about one kind.
pub struct KindInfo {
    pub name: &'static str,
    pub summary: &'static str,
    /// Methods a fault of this kind looks at when `methods` is absent.
    pub default_methods: &'static [&'static str],
    /// The side of a call the effect lands on when `direction` is absent.
    pub default_direction: Direction,
    /// The smallest valid fault of this kind, as JSON (for checks and docs).
    pub example: &'static str,
    schema: fn(&mut SchemaGenerator) -> Schema,
    compile: fn(Value) -> Result<Arc<dyn FaultKind>, serde_json::Error>,
}

fn schema_of<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    T::json_schema(g)
}

fn compile_as<T: FaultKind + DeserializeOwned + 'static>(
    v: Value,
) -> Result<Arc<dyn FaultKind>, serde_json::Error> {
    Ok(Arc::new(serde_json::from_value::<T>(v)?))
}

/// Methods most kinds look at.
pub const CALLS: &[&str] = &["tools/call"];
/// `tools/list` and `tools/call` (registry).
pub const LISTS: &[&str] = &["tools/list", "tools/call"];
/// Every method.
pub const EVERY: &[&str] = &["*"];

impl KindInfo {
    /// The entry of kind `T`, for its file's `KIND` constant.
    pub const fn of<T: FaultKind + JsonSchema + DeserializeOwned + 'static>(
        name: &'static str,
        summary: &'static str,
        default_methods: &'static [&'static str],
        default_direction: Direction,
        example: &'static str,
    ) -> KindInfo {
        KindInfo {
            name,
            summary,
            default_methods,
            default_direction,
            example,
            schema: schema_of::<T>,
            compile: compile_as::<T>,
        }
    }

    /// The JSON Schema of this kind's own keys.
    pub fn params_schema(&self, g: &mut SchemaGenerator) -> Schema {
        (self.schema)(g)
    }

    /// Build the effect from the fault's JSON object (extra keys are ignored here; the
    /// validator has already rejected unknown ones).
    pub fn compile(&'static self, v: Value) -> Result<Effect, serde_json::Error> {
        Ok(Effect {
            info: self,
            kind: (self.compile)(v)?,
        })
    }
}

/// Look a kind up by name.
pub fn kind_info(name: &str) -> Option<&'static KindInfo> {
    KINDS.iter().find(|k| k.name == name)
}

pub fn kind_names() -> Vec<&'static str> {
    KINDS.iter().map(|k| k.name).collect()
}

/// A compiled fault effect: a kind's parameters behind [`FaultKind`].
#[derive(Clone)]
pub struct Effect {
    info: &'static KindInfo,
    kind: Arc<dyn FaultKind>,
}

impl Effect {
    /// The kind's name.
    pub fn kind(&self) -> &'static str {
        self.info.name
    }

    pub fn info(&self) -> &'static KindInfo {
        self.info
    }

    /// The parameters, if the kind is `T`.
    pub fn downcast<T: FaultKind + 'static>(&self) -> Option<&T> {
        AsAny::as_any(&*self.kind).downcast_ref::<T>()
    }
}

impl std::ops::Deref for Effect {
    type Target = dyn FaultKind;

    fn deref(&self) -> &Self::Target {
        &*self.kind
    }
}

impl fmt::Debug for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.kind.fmt(f)
    }
}

/// State a kind keeps per (fault, session), or per fault when [`FaultKind::shared_state`]:
/// whatever type the kind chooses.
#[derive(Default)]
pub struct KindState(Option<Box<dyn Any + Send>>);

impl KindState {
    /// No state was made yet.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// The state as a `T`, made with `T::default()` on first use.
    pub fn get<T: Default + Send + 'static>(&mut self) -> &mut T {
        if !self.0.as_ref().is_some_and(|b| b.is::<T>()) {
            self.0 = Some(Box::new(T::default()));
        }
        match self.0.as_mut().and_then(|b| b.downcast_mut::<T>()) {
            Some(t) => t,
            None => unreachable!("set to a T just above"),
        }
    }
}

impl fmt::Debug for KindState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "KindState(..)"
        } else {
            "KindState"
        })
    }
}

/// Everything a kind may read about the message it acts on.
pub struct Ctx<'a> {
    pub key: StreamKey,
    pub seq: u64,
    pub now: Time,
    pub method: &'a str,
    pub tool: Option<&'a str>,
    pub id: Option<&'a Id>,
    /// The fault's `tools` globs.
    pub tools: Option<&'a Globs>,
    pub state: &'a mut KindState,
    /// The tool's advertised `outputSchema`, when the relay has seen `tools/list`.
    pub schema: Option<&'a crate::sli::ToolSchema>,
}

impl Ctx<'_> {
    pub fn unit(&self, salt: u64) -> f64 {
        self.key.unit(self.seq, salt)
    }

    /// A seed for a small generator, for kinds that need several draws on one message.
    pub fn mutation_seed(&self) -> u64 {
        self.key.draw(self.seq, salt::MUTATION)
    }
}

#[cfg(test)]
mod tests;
