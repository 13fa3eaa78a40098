//! brownout's MCP layer: brownout as an MCP server, and experiment design from a goal.
//!
//! - [`mcp`]: brownout as an MCP server (`brownout mcp`);
//! - [`design`]: experiment design from a goal (`brownout design`, `design_experiments`),
//!   built on what [`mcp`] reads from a target.
//!
//! May use: `brownout-core`, `brownout-sim`, `brownout-relay`, `brownout-store`,
//! `brownout-experiment` (docs/architecture.md).

pub mod design;
pub mod mcp;
