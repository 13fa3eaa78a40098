//! brownout, the binary's library: the drivers around `brownout-core`.
//!
//! - [`relay`]: the live relay (fronts, backs, carrying out verdicts);
//! - [`control`]: live control of a running relay's faults (admin API, reloads);
//! - [`http_guard`]: the `Origin`/`Host` checks every HTTP listener applies;
//! - [`fixture`]: the built-in example MCP server;
//! - [`client`]: a small stdio MCP client (demo, benchmarks, tests);
//! - [`load`]: live, agent-like load (`brownout load`): workloads played by many MCP sessions;
//! - [`probe`]: synthetic probes and monitors (`brownout probe`);
//! - [`demo`] (live) and [`demo_sim`] (simulated), [`plan_cmd`], [`sim_cmd`], [`events`]:
//!   commands and the event log;
//! - [`mcp`]: brownout as an MCP server (`brownout mcp`); [`design`]: experiment design
//!   from a goal (`brownout design`, `design_experiments`);
//! - [`gameday`]: escalating series of experiments, scored (`brownout gameday`);
//! - [`store`] (the journal store), [`report`] (reports from journals) and [`journal_cmd`]
//!   (`brownout journal`);
//! - [`otlp`]: OpenTelemetry spans over OTLP/HTTP (`--otlp URL`).

pub mod calibrate;
pub mod client;
pub mod control;
pub mod demo;
pub mod demo_sim;
pub mod design;
pub mod events;
pub mod experiment;
pub mod faults_cmd;
pub mod fixture;
pub mod gameday;
pub mod http_guard;
pub mod human;
pub mod input;
pub mod journal_cmd;
pub mod load;
pub mod mcp;
pub mod otlp;
pub mod plan_cmd;
pub mod probe;
pub mod relay;
pub mod report;
pub mod search;
pub mod sim_cmd;
pub mod store;
