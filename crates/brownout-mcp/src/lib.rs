//! brownout's MCP layer: brownout as an MCP server, and experiment design from a goal.
//!
//! - [`mcp`]: brownout as an MCP server (`brownout mcp`);
//! - [`design`]: experiment design from a goal (`brownout design`, `design_experiments`);
//! - [`target`]: what both read of a target MCP server (its description, which tools may
//!   write, its text made safe to show, its history in the store);
//! - [`verdicts`]: a plan's errors and the policy's verdict as JSON, for both.
//!
//! `mcp` serves `design`; `design` builds on `target` and `verdicts`, never on `mcp`.
//!
//! May use: `brownout-core`, `brownout-sim`, `brownout-relay`, `brownout-store`,
//! `brownout-experiment` (docs/architecture.md).

pub mod design;
pub mod mcp;
pub mod target;
pub mod verdicts;
