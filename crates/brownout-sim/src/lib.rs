//! brownout-sim: a deterministic discrete-event simulator of the MCP tool-call plane.
//!
//! Agents run tasks made of steps of parallel tool calls; servers have latency models, base
//! error rates and bounded pools; clients have timeouts, retries and retry budgets, circuit
//! breakers, outbound rate limiters, graceful degradation and deadline-aware skipping. Faults
//! come from an ordinary plan and `brownout-core`'s engine, applied at the server boundary:
//! no fault is implemented twice. Everything runs in virtual time from seeds, so a run
//! replays exactly.

pub mod chain;
pub mod metrics;
pub mod search;
pub mod sim;
pub mod workload;

pub use metrics::Report;
pub use sim::{simulate, SimOptions};
pub use workload::Workload;
