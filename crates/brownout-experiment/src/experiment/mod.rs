//! Experiments: a steady-state hypothesis checked under staged faults, with live SLO gates,
//! guardrails, rollbacks that always run, and a journal (see docs/experiments.md).
//!
//! - [`spec`]: the file's keys and schema; [`load`]: loading and checking a file; [`cmd`]:
//!   `brownout experiment check|schema`;
//! - [`policy`]: the guardrails ([`production`]: the same production labels for the relay);
//!   [`gates`]: the runner's view of SLO gates;
//! - [`runner`]: `brownout run`, with [`target`] (where load and faults go), [`loadgen`]
//!   (the load), [`phase`] (gates watched live), [`steady`] (probes), [`detect`] (their
//!   MTTD/MTTR), [`baseline`] (tolerances from history), [`predict`] (the simulator's
//!   estimate of each stage), [`rollback`], [`recovery`] (removal of the faults, MTTR),
//!   [`status`] (the live state a watcher reads), [`stop`] (signals, stdin's end);
//! - [`journal`]: the record of a run, and [`summary`]: its printed form.

pub mod baseline;
pub mod checks;
pub mod cli;
pub mod clock;
pub mod cmd;
pub mod detect;
pub mod dur;
pub mod fault_ids;
pub mod fleet;
pub mod fleet_choice;
pub mod fleet_dns;
pub mod fleet_spec;
pub mod foreign;
pub mod gates;
pub mod health;
pub mod history;
pub mod injections;
pub mod journal;
pub mod load;
pub mod loadgen;
pub mod lock;
pub mod otel;
pub mod outputs;
pub mod phase;
pub mod policy;
pub mod predict;
pub mod production;
pub mod program;
pub mod records;
pub mod recovery;
pub mod remote;
pub mod remote_log;
pub mod rollback;
pub mod run_args;
pub mod run_record;
pub mod runner;
pub mod servers;
pub mod silent;
pub mod spec;
pub mod status;
pub mod steady;
pub mod stop;
pub mod summary;
pub mod target;

pub use load::{load_file, Loaded};
pub use policy::{Policy, Refusal};
pub use run_args::RunArgs;
pub use runner::run;
pub use spec::{describe_target, Experiment};
