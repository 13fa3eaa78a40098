//! brownout's runner layer: what drives a target and judges it.
//!
//! - [`experiment`]: experiments (staged faults, SLO gates, guaranteed rollback; `brownout run`);
//! - [`load`]: live, agent-like load (`brownout load`);
//! - [`probe`]: synthetic probes and monitors (`brownout probe`);
//! - [`search`]: the boundary search (`brownout search`), over [`marks`] in a file;
//! - [`calibrate`]: the simulator calibrated against live measurements;
//! - [`gameday`]: escalating series of experiments, scored (`brownout gameday`);
//! - [`sim_args`]: the simulator's inputs as the command line gives them;
//! - [`otlp_args`]: `--otlp [URL]`, shared with the relay commands.
//!
//! May use: `brownout-core`, `brownout-sim`, `brownout-relay`, `brownout-store`
//! (docs/architecture.md).

pub mod calibrate;
pub mod experiment;
pub mod gameday;
pub mod load;
pub mod marks;
pub mod otlp_args;
pub mod probe;
pub mod search;
pub mod sim_args;
