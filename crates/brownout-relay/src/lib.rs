//! brownout's relay layer: everything between a client and a server at run time.
//!
//! - [`relay`]: the live relay (fronts, backs, carrying out verdicts);
//! - [`control`]: live control of a running relay's faults (admin API and its client, reloads);
//! - [`http_guard`]: the `Origin`/`Host` checks every HTTP listener applies;
//! - [`events`]: the event log;
//! - [`input`]: bounded reads of files every layer above uses;
//! - [`otlp`]: OpenTelemetry spans and metrics over OTLP/HTTP (`--otlp URL`).
//!
//! May use: `brownout-core`. Used by every layer above (docs/architecture.md).

pub mod control;
pub mod events;
pub mod http_guard;
pub mod input;
pub mod otlp;
pub mod relay;
