//! The simulator's inputs as the command line gives them: a gate (`--gate`, its error shown
//! under the text with a caret) and a workload file (read with the documents' size bound).
//! Used by `brownout sim`, `brownout search` and the MCP server's `simulate`.

use anyhow::Context;
use brownout_core::slo::Gate;
use brownout_sim::Workload;
use std::path::Path;

/// clap's parser for `--gate`: the gate, or its error under the text with a caret.
pub fn parse_gate(text: &str) -> Result<Gate, String> {
    Gate::parse(text).map_err(|e| {
        let pad = " ".repeat(e.column.saturating_sub(1));
        format!("{e}\n  {text}\n  {pad}^\n  (the grammar: docs/gates.md)")
    })
}

pub fn load_workload(path: &Path) -> anyhow::Result<Workload> {
    let text = brownout_relay::input::read_document(path).context("cannot read the workload")?;
    Workload::from_str_named(&text, &path.display().to_string()).map_err(|e| anyhow::anyhow!("{e}"))
}
