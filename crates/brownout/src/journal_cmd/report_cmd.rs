//! `brownout journal report` and `brownout run --report FORMAT:FILE`.

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

/// One `--report FORMAT:FILE` of `brownout run`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportTarget {
    pub format: Format,
    pub file: PathBuf,
}

impl std::str::FromStr for ReportTarget {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (f, file) = s
            .split_once(':')
            .filter(|(_, file)| !file.is_empty())
            .ok_or_else(|| {
                format!("{s:?}: expected FORMAT:FILE, e.g. html:report.html or junit:junit.xml")
            })?;
        let format = <Format as clap::ValueEnum>::from_str(f, true)
            .map_err(|_| format!("{f:?}: the formats are md, html, json, junit"))?;
        Ok(ReportTarget {
            format,
            file: PathBuf::from(file),
        })
    }
}

/// Write a run's reports (`brownout run --report`); each failure is printed, and the first
/// returned.
pub fn write_reports(journal: &Value, targets: &[ReportTarget]) -> anyhow::Result<()> {
    let mut first = None;
    for t in targets {
        let res = report::render(journal, t.format)
            .map_err(anyhow::Error::from)
            .and_then(|text| {
                std::fs::write(&t.file, text).map_err(|e| {
                    anyhow::anyhow!("cannot write the report {}: {e}", t.file.display())
                })
            });
        if let Err(e) = res {
            eprintln!("brownout run: {e:#}");
            first.get_or_insert(e);
        }
    }
    first.map_or(Ok(()), Err)
}
