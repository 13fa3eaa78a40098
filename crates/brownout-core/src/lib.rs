//! brownout-core: the pure fault engine of brownout.
//!
//! Everything that *decides* lives here: the JSON-RPC message view, request/response
//! correlation, fault plans and their selectors, every fault kind, the deterministic random
//! source and the summary statistics. Nothing here performs I/O, spawns tasks or reads a
//! clock: time comes in as an argument ([`Time`]), bytes come in as slices, and the engine
//! answers with a [`Verdict`] that a driver (the live relay, the simulator) carries out.

pub mod approx;
pub mod capability;
pub mod correlate;
pub mod duration;
pub mod engine;
pub mod event;
pub mod faults;
pub mod human;
pub mod jsonrpc;
pub mod millis;
pub mod plan;
pub mod plan_spec;
pub mod rng;
pub mod select;
pub mod session_key;
pub mod sli;
pub mod slo;
pub mod splice;
pub mod stats;
pub mod taint;
pub mod time;
pub mod verdict;

pub use capability::{Capabilities, Capability};
pub use engine::{Engine, EngineConfig, Side};
pub use plan::{Plan, PlanErrors};
pub use time::Time;
pub use verdict::{Forward, Outgoing, ProcessAction, Verdict};
