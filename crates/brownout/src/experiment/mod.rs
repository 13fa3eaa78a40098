//! Experiments: a steady-state hypothesis checked under staged faults, with live SLO gates,
//! guardrails, rollbacks that always run, and a journal (see docs/experiments.md).
//!
//! - [`spec`]: the file's keys and schema; [`load`]: loading and checking a file;
//! - [`policy`]: the guardrails; [`gates`]: the runner's view of SLO gates.

pub mod gates;
pub mod load;
pub mod policy;
pub mod spec;

pub use load::{load_file, Loaded};
pub use policy::{Policy, Refusal};
pub use spec::Experiment;
