//! `brownout journal report` (`brownout run --report FORMAT:FILE` is `brownout_store::keep`).

use crate::report::{self, Format};
use crate::store::{self, Store};
use clap::Args;
use serde_json::Value;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// A run id (or a unique prefix) in the store, or a journal file.
    pub run: String,
    /// md (a pull request, a post-mortem), html (one self-contained file with charts),
    /// json (the journal), junit (CI test results).
    #[arg(long, value_enum, default_value_t = Format::Md)]
    pub format: Format,
    /// Write here instead of stdout.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

/// A journal from a file path, else from the store by run id.
pub fn load_journal_arg(arg: &str, store_path: &Path) -> anyhow::Result<Value> {
    let p = Path::new(arg);
    if p.is_file() {
        let text = crate::input::read_text(p, crate::input::MAX_JOURNAL)?;
        let v: Value = serde_json::from_str(&text)
            .map_err(|e| anyhow::anyhow!("{}: not JSON: {e}", p.display()))?;
        store::ingest::check(&v).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
        return Ok(v);
    }
    let s = store::open(Some(store_path))?;
    Ok(s.journal(arg)?.1)
}

pub fn run(a: ReportArgs, store_path: &Path) -> anyhow::Result<i32> {
    let j = load_journal_arg(&a.run, store_path)?;
    let text = report::render(&j, a.format)?;
    match &a.output {
        Some(p) => std::fs::write(p, text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?,
        None => print!("{text}"),
    }
    Ok(0)
}
