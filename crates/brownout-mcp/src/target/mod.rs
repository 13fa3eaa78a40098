//! What brownout reads of a target MCP server, for the MCP server (`brownout mcp`) and the
//! experiment designer (`design`) alike: its description ([`connect`], bounded by
//! [`tool_pages`]), which of its tools may write ([`writes`]), its text made safe to show
//! ([`untrusted`]) and what the store remembers of it ([`history`]). Below both: nothing
//! here uses `mcp` or `design`.

pub mod connect;
pub mod history;
pub mod tool_pages;
pub mod untrusted;
pub mod writes;
