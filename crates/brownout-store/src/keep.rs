//! What `brownout run` does with its journal besides the `--journal` file: keep it in the
//! store (`--store`, `--no-store`) and write reports (`--report FORMAT:FILE`).

use crate::report::{self, Format};
use clap::Args;
use serde_json::Value;
use std::path::PathBuf;

/// `brownout run`'s store and report options.
#[derive(Args, Debug, Clone, Default)]
pub struct KeepArgs {
    /// Keep the journal in this store: a SQLite file or a postgres:// URL (default:
    /// BROWNOUT_STORE, else $XDG_DATA_HOME/brownout/journal.sqlite); see `brownout journal --help`.
    #[arg(long, value_name = "PATH|URL", value_parser = crate::store::location::parse_arg)]
    pub store: Option<PathBuf>,
    /// Do not keep the journal in the store (the --journal file is still written).
    #[arg(long, conflicts_with = "store")]
    pub no_store: bool,
    /// Write a report when the run ends: md, html, json or junit, to FILE (repeatable),
    /// e.g. --report html:report.html --report junit:junit.xml.
    #[arg(long, value_name = "FORMAT:FILE")]
    pub report: Vec<ReportTarget>,
}

impl KeepArgs {
    /// Called once the journal is written: store it (not a dry run) and write the reports.
    /// Failures are warnings on stderr: the run's outcome and exit code stand.
    pub fn after_run(&self, journal: &Value, dry_run: bool, quiet: bool) {
        if !dry_run && !self.no_store {
            match crate::store::keep_run_journal(self.store.as_deref(), journal) {
                Ok(id) if !quiet => println!("store: run {id} (brownout journal show {id})"),
                Ok(_) => {}
                Err(e) => {
                    eprintln!("brownout run: warning: the journal was not kept in the store: {e}")
                }
            }
        }
        if !self.report.is_empty() {
            let _ = write_reports(journal, &self.report);
        }
    }
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
