//! Taints: the values a fault put into a result, and what the agent did with them next.
//!
//! When a fault changes a delivered result (`corrupt`, `schema_drift`, `partial_result`, a
//! stale registry — every kind whose [`crate::faults::FaultKind::alters_result`] is true),
//! the engine compares the result the server sent with the one the client got and keeps
//! the **distinctive** values that only the changed one holds ([`introduced`]): a *taint*,
//! per session, bounded in count and size, expiring after a window of run time. Each later
//! request of that session is checked against them ([`Book::check`]):
//!
//! - a request whose arguments carry a tainted value (equal, or inside a longer string) is a
//!   **propagation**: the agent acted on corrupted data — a silent failure;
//! - a request that calls the same tool with the same arguments again, or a cancellation,
//!   means the agent **noticed** — a safe failure;
//! - a taint that sees neither within the window is **unobserved**.
//!
//! False positives are avoided by construction: only distinctive values taint
//! ([`distinctive`]: no booleans, nulls, small integers or short strings), and never a
//! value the untouched result also held. Pure: time comes in as an argument.

mod book;
mod values;

pub use book::{Book, Class, Finding, Taint, TaintConfig};
pub use values::{distinctive, fingerprint, introduced, leaves, Key, Tainted};
