//! `brownout journal`: the store of every run's journal — import, list, show, read-only SQL,
//! export, reports (and trends across runs). See docs/journal.md.
//!
//! Exit codes: 0 done; 1 `trend` found a drift (with `--fail-on-drift`); 2 bad input (an
//! unreadable or non-journal file, an unknown run, SQL refused or failing); 4 the store
//! could not be opened.

mod print;
mod report_cmd;

use crate::store::readonly::Limits;
use crate::store::{self, Backend, ListFilter, Store, StoreError};
use clap::{Args, Subcommand, ValueEnum};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use brownout_store::keep::{write_reports, KeepArgs, ReportTarget};
pub use report_cmd::load_journal_arg;

/// The store of every run's journal: list, show, query with SQL, export, report.
///
/// Every `brownout run` keeps its journal here as well as in its `--journal` file. The
/// store is one SQLite file: $XDG_DATA_HOME/brownout/journal.sqlite (else
/// ~/.local/share/brownout/journal.sqlite); `--store PATH` or BROWNOUT_STORE chooses another,
/// and `--store postgres://USER@HOST:5432/DB` a team's PostgreSQL database (docs/journal.md).
///
/// Examples:
///   brownout journal list --status aborted --since 7d
///   brownout journal show 20261123T204126Z-1a2b3c4d
///   brownout journal query "SELECT status, count(*) FROM runs GROUP BY status"
///   brownout journal report 20261123T2041 --format html -o report.html
///   brownout journal import ci-journals/*.json
///   brownout journal --store postgres://ci@db/brownout import --from ~/.local/share/brownout/journal.sqlite
///
/// Exit codes: 0 done; 1 a drift found (`trend --fail-on-drift`); 2 bad input (a file
/// that is not a journal, an unknown run, SQL refused or failing); 4 the store could not be
/// opened.
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct JournalArgs {
    /// The store: a SQLite file, or a postgres:// URL (default: BROWNOUT_STORE, else
    /// $XDG_DATA_HOME/brownout/journal.sqlite).
    #[arg(long, global = true, value_name = "PATH|URL", value_parser = crate::store::location::parse_arg)]
    pub store: Option<PathBuf>,
    #[command(subcommand)]
    pub cmd: JournalCmd,
}

#[derive(Subcommand, Debug)]
pub enum JournalCmd {
    /// Keep journal files in the store (`.jsonl`: one journal per line, as `export` writes);
    /// a run already there is skipped (idempotent).
    Import {
        /// Journal files (`brownout run --journal FILE`), or `.jsonl` exports.
        #[arg(required_unless_present = "from")]
        files: Vec<PathBuf>,
        /// Also copy every journal of another store (a SQLite file or a postgres:// URL),
        /// e.g. a laptop's history into the team's database.
        #[arg(long, value_name = "PATH|URL", value_parser = crate::store::location::parse_arg)]
        from: Option<PathBuf>,
        /// Print what was imported as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List runs, newest first.
    List {
        /// Only this experiment (its title).
        #[arg(long)]
        experiment: Option<String>,
        /// Only this status (completed, deviated, aborted, failed, interrupted, refused, not_run).
        #[arg(long)]
        status: Option<String>,
        /// Only runs whose experiment carried this label (`KEY=VALUE`).
        #[arg(long, value_name = "KEY=VALUE")]
        label: Option<String>,
        /// Only runs started since: a date (2026-11-01), a time (RFC 3339) or an age (7d, 12h).
        #[arg(long)]
        since: Option<String>,
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: u64,
        /// Print the runs as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one run (its id or a unique prefix): the Markdown report, or the journal.
    Show {
        /// The run's id, or a unique prefix of it (`journal list` shows them).
        run: String,
        /// Print the whole journal as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run one read-only SQL statement over the store (tables: docs/journal.md).
    ///
    /// Writes are refused by SQLite itself: a read-only connection, an authorizer that
    /// denies every write, ATTACH and writing pragmas, and no attached databases.
    ///
    /// Example:
    ///   brownout journal query "SELECT experiment, avg(mttr_ms) FROM runs GROUP BY 1"
    #[command(verbatim_doc_comment)]
    Query {
        /// One SQL statement that reads (SELECT, WITH …, reading pragmas).
        sql: String,
        /// Return at most this many rows (the rest are cut, and it says so).
        #[arg(long, default_value_t = 10_000)]
        max_rows: usize,
        /// Stop the query after this many seconds.
        #[arg(long, default_value_t = 5.0, value_name = "SECONDS")]
        timeout: f64,
        /// Print {columns, rows, truncated} as JSON.
        #[arg(long)]
        json: bool,
    },
    /// PostgreSQL: set up the role `journal query` runs as (brownout_reader: SELECT only on
    /// the store's tables). Creating the role takes an administrator (docs/journal.md).
    SetupReader,
    /// Export the store: every journal as JSON lines, or the runs table as CSV.
    Export {
        /// jsonl: one whole journal per line (`journal import` reads them back as files);
        /// csv: one row per run.
        #[arg(long, value_enum, default_value_t = ExportFormat::Jsonl)]
        format: ExportFormat,
        /// Write here instead of stdout.
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// The same as --format jsonl.
        #[arg(long)]
        json: bool,
    },
    /// A report of a run (id or prefix) or a journal file: Markdown, HTML, JSON or JUnit XML.
    ///
    /// Examples:
    ///   brownout journal report 20261123T2041 --format md
    ///   brownout journal report run.json --format junit -o junit.xml
    #[command(verbatim_doc_comment)]
    Report(report_cmd::ReportArgs),
    /// Compliance evidence: per tag (`compliance: [DORA:Art.25, …]` in experiments), the runs
    /// since a date, their verdicts, and the tags with no run since (gaps).
    ///
    /// Example:
    ///   brownout journal evidence --since 2026-07-01 --format html -o evidence.html
    #[command(verbatim_doc_comment)]
    Evidence {
        /// A date (2026-07-01), an RFC 3339 time or an age (90d).
        #[arg(long)]
        since: String,
        /// md or html.
        #[arg(long, value_enum, default_value_t = crate::report::Format::Md)]
        format: crate::report::Format,
        /// Write here instead of stdout.
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Print the evidence as JSON.
        #[arg(long)]
        json: bool,
    },
    /// An experiment across runs: pass rate, MTTR and key SLIs, and drifts (a metric rising
    /// over the recent passing runs while they still pass).
    ///
    /// Examples:
    ///   brownout journal trend "search stays under 1 % errors" --last 30 --fail-on-drift
    ///   brownout journal trend --gameday "Incident series: payments"
    #[command(verbatim_doc_comment)]
    Trend {
        /// The experiment's title (`journal list` shows it).
        #[arg(required_unless_present = "gameday")]
        experiment: Option<String>,
        /// The GameDays of this title instead (`brownout gameday`): their scores over time.
        #[arg(long, value_name = "TITLE", conflicts_with = "experiment")]
        gameday: Option<String>,
        /// Look at the last N runs.
        #[arg(long, default_value_t = 20)]
        last: u64,
        /// Judge drift over the last K passing runs.
        #[arg(long, default_value_t = 6)]
        window: usize,
        /// A drift is a rise of more than this many percent (later half vs earlier half).
        #[arg(long, default_value_t = 20.0)]
        threshold: f64,
        /// Exit 1 when a drift is found (for CI).
        #[arg(long)]
        fail_on_drift: bool,
        /// Also write the trend as one self-contained HTML page with a chart.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// Print the trend as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    Jsonl,
    Csv,
}

impl JournalArgs {
    /// Run the command; its exit code.
    pub fn run(self) -> i32 {
        let path = self.store.clone().unwrap_or_else(store::default_path);
        // A path or a URL brownout understands, checked before anything is created.
        let path = match store::Location::parse(&path) {
            Ok(_) => path,
            Err(e) => {
                eprintln!("brownout journal: {e}");
                return 2;
            }
        };
        match run(self.cmd, &path) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("brownout journal: {e:#}");
                match e.downcast_ref::<StoreError>() {
                    Some(
                        StoreError::Open { .. }
                        | StoreError::Dir { .. }
                        | StoreError::TooNew { .. }
                        | StoreError::Connect { .. },
                    ) => 4,
                    _ => 2,
                }
            }
        }
    }
}

fn run(cmd: JournalCmd, path: &Path) -> anyhow::Result<i32> {
    match cmd {
        JournalCmd::Import { files, from, json } => import(path, &files, from.as_deref(), json),
        JournalCmd::SetupReader => {
            let s = store::open(Some(path))?;
            s.setup_reader()?;
            println!(
                "role {} can read {} (journal query runs as it)",
                store::pg::query::READER,
                s.shown()
            );
            Ok(0)
        }
        JournalCmd::List {
            experiment,
            status,
            label,
            since,
            limit,
            json,
        } => {
            let label = match label {
                None => None,
                Some(l) => match l.split_once('=') {
                    Some((k, v)) => Some((k.to_string(), v.to_string())),
                    None => anyhow::bail!("--label {l:?}: expected KEY=VALUE, e.g. env=staging"),
                },
            };
            let since_unix_ms = since.as_deref().map(parse_since).transpose()?;
            let s = store::open(Some(path))?;
            let runs = s.list(&ListFilter {
                experiment,
                status,
                label,
                since_unix_ms,
                limit: Some(limit),
            })?;
            if json {
                println!("{}", serde_json::to_string_pretty(&runs)?);
            } else {
                print::runs(&runs);
            }
            Ok(0)
        }
        JournalCmd::Show { run, json } => {
            let s = store::open(Some(path))?;
            let (_, j) = s.journal(&run)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&j)?);
            } else {
                print!("{}", crate::report::markdown::render(&j));
            }
            Ok(0)
        }
        JournalCmd::Query {
            sql,
            max_rows,
            timeout,
            json,
        } => {
            // Create or migrate the store first, so a query sees the current tables.
            let s = store::open(Some(path))?;
            let limits = Limits {
                max_rows,
                timeout: Duration::try_from_secs_f64(timeout)
                    .map_err(|_| anyhow::anyhow!("--timeout {timeout}: expected seconds > 0"))?,
                ..Limits::default()
            };
            let r = s.query(&sql, limits)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else {
                print::table(&r);
            }
            if r.truncated {
                eprintln!("(cut at {max_rows} rows: --max-rows to see more)");
            }
            Ok(0)
        }
        JournalCmd::Export {
            format,
            output,
            json,
        } => {
            let format = if json { ExportFormat::Jsonl } else { format };
            let s = store::open(Some(path))?;
            let mut out: Box<dyn Write> = match &output {
                Some(p) => Box::new(std::io::BufWriter::new(
                    std::fs::File::create(p)
                        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?,
                )),
                None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
            };
            export(&s, format, &mut out)?;
            out.flush()?;
            Ok(0)
        }
        JournalCmd::Report(a) => report_cmd::run(a, path),
        JournalCmd::Evidence {
            since,
            format,
            output,
            json,
        } => {
            let from = parse_since(&since)?;
            let s = store::open(Some(path))?;
            let tags = store::evidence::evidence(&s, from)?;
            let text = if json {
                serde_json::to_string_pretty(&tags)? + "\n"
            } else {
                let md = store::evidence::markdown(&tags, &since);
                match format {
                    crate::report::Format::Md => md,
                    crate::report::Format::Html => {
                        crate::report::html::page("Compliance evidence", &md)
                    }
                    f => anyhow::bail!("--format {f:?}: evidence is md or html"),
                }
            };
            match output {
                Some(f) => std::fs::write(&f, text)
                    .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", f.display()))?,
                None => print!("{text}"),
            }
            Ok(0)
        }
        JournalCmd::Trend {
            experiment,
            gameday,
            last,
            window,
            threshold,
            fail_on_drift,
            html,
            json,
        } => {
            let s = store::open(Some(path))?;
            if let Some(title) = gameday {
                if html.is_some() || fail_on_drift {
                    anyhow::bail!(
                        "--html and --fail-on-drift are for an experiment's trend, not --gameday"
                    );
                }
                return crate::gameday::trend_cmd(&s, &title, last, json);
            }
            let experiment = experiment.unwrap_or_default();
            let rule = store::trend::DriftRule {
                window: window.max(4),
                threshold: threshold / 100.0,
            };
            let t = store::trend::trend(&s, &experiment, last, rule)?;
            if t.runs.is_empty() {
                anyhow::bail!(
                    "no runs of {experiment:?} in the store (see `brownout journal list`)"
                );
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&t)?);
            } else {
                print::trend(&t);
            }
            if let Some(f) = html {
                std::fs::write(&f, crate::report::trend_html::render(&t)?)
                    .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", f.display()))?;
            }
            Ok(i32::from(fail_on_drift && !t.drifts.is_empty()))
        }
    }
}

/// The journals in a file: one JSON document, or one per line in a `.jsonl` file (what
/// `journal export` writes), each with its name for messages.
fn journals_in(f: &Path) -> Vec<(String, anyhow::Result<Value>)> {
    let name = f.display().to_string();
    let text = match crate::input::read_text(f, crate::input::MAX_JOURNAL) {
        Ok(t) => t,
        Err(e) => return vec![(name, Err(anyhow::anyhow!("{}", e.reason())))],
    };
    let parse =
        |t: &str| serde_json::from_str::<Value>(t).map_err(|e| anyhow::anyhow!("not JSON: {e}"));
    if f.extension().is_some_and(|e| e == "jsonl") {
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(k, l)| (format!("{name}:{}", k + 1), parse(l)))
            .collect()
    } else {
        vec![(name, parse(&text))]
    }
}

fn import(path: &Path, files: &[PathBuf], from: Option<&Path>, json: bool) -> anyhow::Result<i32> {
    let mut s = store::open(Some(path))?;
    let mut code = 0;
    let mut out = Vec::new();
    let mut keep = |name: &str, doc: anyhow::Result<Value>| match doc
        .and_then(|v| Ok(s.import(&v)?))
    {
        Ok(o) => {
            if !json {
                let what = if o.inserted {
                    "imported"
                } else {
                    "already stored"
                };
                println!("{name}: {what} {}", o.run_id);
            }
            out.push(serde_json::json!({"file": name, "run_id": o.run_id, "inserted": o.inserted}));
        }
        Err(e) => {
            code = 2;
            eprintln!("{name}: {e}");
            out.push(serde_json::json!({"file": name, "error": e.to_string()}));
        }
    };
    if let Some(from) = from {
        // Store to store, one journal at a time (a large store is never held whole).
        let src = store::open(Some(from))?;
        let shown = src.shown();
        src.each_journal(&mut |id, j| {
            keep(&format!("{shown} {id}"), Ok(j.clone()));
            Ok(())
        })?;
    }
    for (name, doc) in files.iter().flat_map(|f| journals_in(f)) {
        keep(&name, doc);
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    }
    Ok(code)
}

/// Write the whole store: journals as JSON lines, or runs as CSV.
pub fn export(
    s: &store::AnyStore,
    format: ExportFormat,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    match format {
        ExportFormat::Jsonl => {
            s.each_journal(&mut |_, j| {
                serde_json::to_writer(&mut *out, j)
                    .map_err(|e| StoreError::NotAJournal(e.to_string()))?;
                out.write_all(b"\n")
                    .map_err(|e| StoreError::NotAJournal(e.to_string()))
            })?;
        }
        ExportFormat::Csv => {
            let columns = store::schema::columns(store::schema::V1, "runs");
            let rows = s.select(
                &format!(
                    "SELECT {} FROM runs ORDER BY started_unix_ms, run_id",
                    columns.join(", ")
                ),
                &[],
            )?;
            let mut w = csv::Writer::from_writer(out);
            w.write_record(&columns)?;
            for row in &rows {
                w.write_record(row.iter().map(|v| match v.json() {
                    Value::Null => String::new(),
                    Value::String(s) => s,
                    v => v.to_string(),
                }))?;
            }
            w.flush()?;
        }
    }
    Ok(())
}

/// `--since`: a date, an RFC 3339 time or an age (`7d`, `12h`, `30m`) → Unix ms.
pub fn parse_since(s: &str) -> anyhow::Result<i64> {
    let t = s.trim();
    if let Ok(d) = chrono::DateTime::parse_from_rfc3339(t) {
        return Ok(d.timestamp_millis());
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        return Ok(d
            .and_hms_opt(0, 0, 0)
            .map_or(0, |x| x.and_utc().timestamp_millis()));
    }
    let (num, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: i64 = num.parse().map_err(|_| bad_since(s))?;
    let ms = match unit {
        "d" => 86_400_000,
        "h" => 3_600_000,
        "m" => 60_000,
        "s" => 1000,
        _ => return Err(bad_since(s)),
    };
    Ok(chrono::Utc::now().timestamp_millis() - n.saturating_mul(ms))
}

fn bad_since(s: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "--since {s:?}: expected a date (2026-11-01), an RFC 3339 time or an age (7d, 12h, 30m)"
    )
}
