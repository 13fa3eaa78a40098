//! brownout, the binary's library: the commands over the layered crates, and the layers
//! re-exported under the names the tests, benchmarks and fuzz targets use.
//!
//! The layers (docs/architecture.md), lowest first:
//! - `brownout-core` (pure engine) and `brownout-sim` (the simulator);
//! - `brownout-relay`: [`relay`], [`control`], [`http_guard`], [`events`], [`input`],
//!   [`otlp`];
//! - `brownout-store`: [`store`] (the journal store), [`report`] (reports from journals);
//! - `brownout-experiment`: [`experiment`], [`load`], [`probe`], [`search`], [`calibrate`],
//!   [`gameday`], [`otlp_args`];
//! - `brownout-mcp`: [`mcp`] (brownout as an MCP server), [`design`];
//! - here: [`fixture`] (the built-in example MCP server), [`client`] (a small stdio MCP
//!   client), [`admin_addr`] (an admin API address made a URL), [`demo`] (live) and [`demo_sim`] (simulated), [`plan_cmd`], [`sim_cmd`],
//!   [`faults_cmd`], [`journal_cmd`] (`brownout journal`).

pub use brownout_core::human;
pub use brownout_experiment::{calibrate, experiment, gameday, load, otlp_args, probe, search};
pub use brownout_mcp::{design, mcp};
pub use brownout_relay::{control, events, http_guard, input, otlp, relay};
pub use brownout_store::{report, store};

pub mod admin_addr;
pub mod client;
pub mod demo;
pub mod demo_sim;
pub mod faults_cmd;
pub mod fixture;
pub mod journal_cmd;
pub mod plan_cmd;
pub mod sim_cmd;
