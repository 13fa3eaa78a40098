//! Fault kinds: one file each, with its parameters, its effect and its tests.
//!
//! The engine decides *whether* a fault hits a call (selectors, probability, correlation);
//! a kind decides *what* the hit does, by shaping the message that is passing: delay it,
//! replace it, answer in its place, drop, duplicate, hold, corrupt it, or ask the driver to
//! signal the server process. [`KINDS`] lists every kind with its schema and defaults.

pub mod bandwidth;
pub mod cold_start;
pub mod connection;
pub mod correlation;
pub mod drop;
pub mod duplicate;
pub mod error;
pub mod http_status;
pub mod latency;
pub mod malformed;
pub mod partial_result;
pub mod process;
pub mod rate_limit;
pub mod registry;
pub mod reorder;
pub mod schema_drift;
pub mod session_expiry;
pub mod simulated;
pub mod slow_stream;
pub mod timeout;

use crate::jsonrpc::Id;
use crate::rng::{salt, StreamKey};
use crate::select::Direction;
use crate::time::Time;
use crate::verdict::{HttpAction, ProcessAction, StreamShape};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::HashSet;

/// A compiled fault effect.
#[derive(Debug, Clone)]
pub enum Effect {
    Latency(latency::Latency),
    ColdStart(cold_start::ColdStart),
    Error(error::ErrorFault),
    Timeout(timeout::Timeout),
    Malformed(malformed::Malformed),
    Drop(drop::Drop),
    Duplicate(duplicate::Duplicate),
    Reorder(reorder::Reorder),
    RateLimit(rate_limit::RateLimit),
    SchemaDrift(schema_drift::SchemaDrift),
    PartialResult(partial_result::PartialResult),
    Registry(registry::Registry),
    Process(process::Process),
    HttpStatus(http_status::HttpStatus),
    Connection(connection::Connection),
    SlowStream(slow_stream::SlowStream),
    Bandwidth(bandwidth::Bandwidth),
    SessionExpiry(session_expiry::SessionExpiry),
}

/// What the registry knows about one kind.
pub struct KindInfo {
    pub name: &'static str,
    pub summary: &'static str,
    /// Methods a fault of this kind looks at when `methods` is absent.
    pub default_methods: &'static [&'static str],
    /// The side of a call the effect lands on when `direction` is absent.
    pub default_direction: Direction,
    schema: fn(&mut SchemaGenerator) -> Schema,
    compile: fn(Value) -> Result<Effect, serde_json::Error>,
}

impl KindInfo {
    /// The JSON Schema of this kind's own keys.
    pub fn params_schema(&self, g: &mut SchemaGenerator) -> Schema {
        (self.schema)(g)
    }

    /// Build the effect from the fault's JSON object (extra keys are ignored here; the
    /// validator has already rejected unknown ones).
    pub fn compile(&self, v: Value) -> Result<Effect, serde_json::Error> {
        (self.compile)(v)
    }
}

fn schema_of<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    T::json_schema(g)
}

fn parse<T: DeserializeOwned>(v: Value) -> Result<T, serde_json::Error> {
    serde_json::from_value(v)
}

const CALLS: &[&str] = &["tools/call"];
const LISTS: &[&str] = &["tools/list", "tools/call"];
const EVERY: &[&str] = &["*"];

macro_rules! kind {
    ($name:literal, $summary:literal, $methods:expr, $dir:expr, $ty:ty, $variant:ident) => {
        KindInfo {
            name: $name,
            summary: $summary,
            default_methods: $methods,
            default_direction: $dir,
            schema: schema_of::<$ty>,
            compile: |v| parse::<$ty>(v).map(Effect::$variant),
        }
    };
}

/// Every fault kind brownout knows, in the order the docs list them.
pub static KINDS: &[KindInfo] = &[
    kind!(
        "latency",
        "delay a request or its response (fixed, uniform, normal, pareto; jitter)",
        CALLS,
        Direction::ToClient,
        latency::Latency,
        Latency
    ),
    kind!(
        "cold_start",
        "extra latency on the first call of each tool in a session",
        CALLS,
        Direction::ToServer,
        cold_start::ColdStart,
        ColdStart
    ),
    kind!(
        "error",
        "answer with a JSON-RPC error or an isError tool result",
        CALLS,
        Direction::ToServer,
        error::ErrorFault,
        Error
    ),
    kind!(
        "timeout",
        "withhold the response forever, or for a while then drop or deliver it",
        CALLS,
        Direction::ToClient,
        timeout::Timeout,
        Timeout
    ),
    kind!(
        "malformed",
        "corrupt the bytes: truncated JSON, garbage, invalid UTF-8, JSON-RPC violations",
        CALLS,
        Direction::ToClient,
        malformed::Malformed,
        Malformed
    ),
    kind!(
        "drop",
        "drop the message",
        CALLS,
        Direction::ToClient,
        drop::Drop,
        Drop
    ),
    kind!(
        "duplicate",
        "deliver the message more than once",
        CALLS,
        Direction::ToClient,
        duplicate::Duplicate,
        Duplicate
    ),
    kind!(
        "reorder",
        "hold the message behind the next one",
        CALLS,
        Direction::ToClient,
        reorder::Reorder,
        Reorder
    ),
    kind!(
        "rate_limit",
        "a token bucket per session or global; calls over it get an error",
        CALLS,
        Direction::ToServer,
        rate_limit::RateLimit,
        RateLimit
    ),
    kind!(
        "schema_drift",
        "rename, retype, drop, null or add fields of structured and JSON text results",
        CALLS,
        Direction::ToClient,
        schema_drift::SchemaDrift,
        SchemaDrift
    ),
    kind!(
        "partial_result",
        "truncate text, drop content items or array elements, drop nextCursor",
        CALLS,
        Direction::ToClient,
        partial_result::PartialResult,
        PartialResult
    ),
    kind!(
        "registry",
        "hide, remove, fake or stale tools in tools/list; spurious list_changed",
        LISTS,
        Direction::ToClient,
        registry::Registry,
        Registry
    ),
    kind!(
        "process",
        "kill (TERM/KILL) or pause (STOP/CONT) the stdio server; restart policy",
        CALLS,
        Direction::ToServer,
        process::Process,
        Process
    ),
    kind!(
        "http_status",
        "answer the HTTP request with a status (401 with WWW-Authenticate, 500, 503)",
        CALLS,
        Direction::ToServer,
        http_status::HttpStatus,
        HttpStatus
    ),
    kind!(
        "connection",
        "refuse, reset before the answer, stall, or cut an SSE stream after N events/bytes",
        CALLS,
        Direction::ToServer,
        connection::Connection,
        Connection
    ),
    kind!(
        "slow_stream",
        "wait between the SSE events of an answer (HTTP)",
        CALLS,
        Direction::ToServer,
        slow_stream::SlowStream,
        SlowStream
    ),
    kind!(
        "bandwidth",
        "throttle the answer to N bytes per second (HTTP)",
        CALLS,
        Direction::ToServer,
        bandwidth::Bandwidth,
        Bandwidth
    ),
    kind!(
        "session_expiry",
        "expire the session: 404 (stdio: an error) for everything it sends from then on",
        EVERY,
        Direction::ToServer,
        session_expiry::SessionExpiry,
        SessionExpiry
    ),
];

/// Look a kind up by name.
pub fn kind_info(name: &str) -> Option<&'static KindInfo> {
    KINDS.iter().find(|k| k.name == name)
}

pub fn kind_names() -> Vec<&'static str> {
    KINDS.iter().map(|k| k.name).collect()
}

impl Effect {
    pub fn kind(&self) -> &'static str {
        match self {
            Effect::Latency(_) => "latency",
            Effect::ColdStart(_) => "cold_start",
            Effect::Error(_) => "error",
            Effect::Timeout(_) => "timeout",
            Effect::Malformed(_) => "malformed",
            Effect::Drop(_) => "drop",
            Effect::Duplicate(_) => "duplicate",
            Effect::Reorder(_) => "reorder",
            Effect::RateLimit(_) => "rate_limit",
            Effect::SchemaDrift(_) => "schema_drift",
            Effect::PartialResult(_) => "partial_result",
            Effect::Registry(_) => "registry",
            Effect::Process(_) => "process",
            Effect::HttpStatus(_) => "http_status",
            Effect::Connection(_) => "connection",
            Effect::SlowStream(_) => "slow_stream",
            Effect::Bandwidth(_) => "bandwidth",
            Effect::SessionExpiry(_) => "session_expiry",
        }
    }

    /// Effects that act when the request passes (short-circuits, request delays, process
    /// signals); the rest act on the response.
    pub fn acts_on_request(&self, direction: Direction) -> bool {
        match self {
            Effect::Error(e) => e.phase == error::Phase::Request,
            Effect::RateLimit(_) | Effect::ColdStart(_) | Effect::Process(_) => true,
            Effect::HttpStatus(_)
            | Effect::Connection(_)
            | Effect::SlowStream(_)
            | Effect::Bandwidth(_)
            | Effect::SessionExpiry(_) => true,
            Effect::Registry(r) => r.acts_on_request(),
            Effect::SchemaDrift(_) | Effect::PartialResult(_) => false,
            _ => direction == Direction::ToServer,
        }
    }

    /// Effects that also act on the response of a call they hit.
    pub fn acts_on_response(&self, direction: Direction) -> bool {
        match self {
            Effect::Error(e) => e.phase == error::Phase::Response,
            Effect::RateLimit(_) | Effect::ColdStart(_) | Effect::Process(_) => false,
            Effect::Connection(c) => c.acts_on_response(),
            Effect::HttpStatus(_)
            | Effect::SlowStream(_)
            | Effect::Bandwidth(_)
            | Effect::SessionExpiry(_) => false,
            Effect::Registry(r) => r.acts_on_response(),
            Effect::SchemaDrift(_) | Effect::PartialResult(_) => true,
            _ => direction == Direction::ToClient,
        }
    }

    /// What this fault needs its driver to do (see [`crate::capability`]).
    pub fn needs(&self, direction: Direction) -> Vec<crate::capability::Need> {
        use crate::capability::{Capability as C, Need};
        match self {
            Effect::Process(p) => {
                let mut n = vec![Need::whole(C::SignalProcess)];
                if p.at_ms.is_some() {
                    n.push(Need::key(C::ProcessTimers, "at_ms"));
                }
                n
            }
            Effect::Duplicate(_) if direction == Direction::ToClient => {
                vec![Need::whole(C::MultipleAnswers)]
            }
            Effect::Duplicate(_) => vec![Need::whole(C::MultipleRequests)],
            Effect::Registry(r) if r.action == registry::Action::ListChanged => {
                vec![Need::key(C::MultipleAnswers, "action")]
            }
            Effect::SlowStream(_) | Effect::Bandwidth(_) => vec![Need::whole(C::ShapeStreams)],
            Effect::Connection(c) if c.mode == connection::Mode::DropStream => {
                vec![Need::key(C::ShapeStreams, "mode")]
            }
            _ => Vec::new(),
        }
    }

    /// Whether this kind can act on a message that is not part of a call (a notification,
    /// or a server-initiated request), in the fault's direction.
    pub fn acts_on_loose_messages(&self) -> bool {
        matches!(
            self,
            Effect::Latency(_)
                | Effect::Drop(_)
                | Effect::Duplicate(_)
                | Effect::Reorder(_)
                | Effect::Malformed(_)
        )
    }
}

/// Per (fault, session) state that a kind may keep.
#[derive(Debug, Default, Clone)]
pub struct KindState {
    pub seen_tools: HashSet<String>,
    pub bucket: Option<rate_limit::Bucket>,
}

/// Everything a kind may read about the message it acts on.
pub struct Ctx<'a> {
    pub key: StreamKey,
    pub seq: u64,
    pub now: Time,
    pub method: &'a str,
    pub tool: Option<&'a str>,
    pub id: Option<&'a Id>,
    pub state: &'a mut KindState,
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

/// The message being shaped, and everything the hits so far asked for.
#[derive(Debug)]
pub struct Shaping<'a> {
    pub original: &'a [u8],
    value: Option<Value>,
    /// A fault changed the JSON value: the message must be re-serialized.
    pub mutated: bool,
    pub delay: Time,
    pub drop: bool,
    /// Answer the sender instead of forwarding (short-circuit).
    pub reply: Option<Vec<u8>>,
    pub duplicates: u32,
    pub duplicate_gap: Time,
    pub hold: Option<Time>,
    pub corrupt: Option<(malformed::Mode, u64)>,
    /// Extra messages toward the receiver, after this one.
    pub extra: Vec<Vec<u8>>,
    pub process: Vec<ProcessAction>,
    /// An HTTP-level action (HTTP fronts prefer it over `reply`).
    pub http: Option<HttpAction>,
    /// How the answer's body or stream is shaped (HTTP fronts).
    pub stream: Option<StreamShape>,
}

impl<'a> Shaping<'a> {
    pub fn new(original: &'a [u8]) -> Shaping<'a> {
        Shaping {
            original,
            value: None,
            mutated: false,
            delay: Time::ZERO,
            drop: false,
            reply: None,
            duplicates: 0,
            duplicate_gap: Time::ZERO,
            hold: None,
            corrupt: None,
            extra: Vec::new(),
            process: Vec::new(),
            http: None,
            stream: None,
        }
    }

    /// Add a stream shape to the ones asked for so far.
    pub fn merge_stream(&mut self, shape: &StreamShape) {
        self.stream
            .get_or_insert_with(StreamShape::default)
            .merge(shape);
    }

    /// The message as a JSON value, parsed on first use. A kind that changes it calls
    /// [`Shaping::mark_mutated`], so a message nobody changed keeps its bytes.
    pub fn value_mut(&mut self) -> Option<&mut Value> {
        if self.value.is_none() {
            self.value = serde_json::from_slice(self.original).ok();
        }
        self.value.as_mut()
    }

    pub fn mark_mutated(&mut self) {
        self.mutated = self.value.is_some();
    }

    /// Replace the whole message.
    pub fn replace(&mut self, v: Value) {
        self.value = Some(v);
        self.mutated = true;
    }

    /// Whether the message still goes on to its receiver.
    pub fn forwards(&self) -> bool {
        !self.drop && self.reply.is_none()
    }

    /// The bytes to forward: the original when nothing changed it, else re-serialized,
    /// then corrupted if a malformed fault asked for it.
    pub fn output(&self) -> Option<Vec<u8>> {
        let base: Option<Vec<u8>> = match (&self.value, self.mutated) {
            (Some(v), true) => Some(crate::splice::to_vec_like(v, self.original)),
            _ => None,
        };
        match self.corrupt {
            Some((mode, seed)) => {
                let bytes = base.as_deref().unwrap_or(self.original);
                Some(malformed::corrupt(bytes, mode, seed))
            }
            None => base,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_a_schema_and_compiles_defaults() {
        let mut g = SchemaGenerator::default();
        for k in KINDS {
            let _ = k.params_schema(&mut g);
            // Kinds whose keys are all optional compile from an empty object.
            let _ = k.compile(serde_json::json!({}));
        }
        assert_eq!(kind_names().len(), KINDS.len());
        assert!(kind_info("latency").is_some());
        assert!(kind_info("nope").is_none());
    }

    #[test]
    fn unchanged_messages_keep_their_bytes() {
        let raw = br#"{"jsonrpc":"2.0", "id":1, "result":{"b":1,"a":2}}"#;
        let s = Shaping::new(raw);
        assert_eq!(
            s.output(),
            None,
            "no output means: forward the original bytes"
        );
    }
}
