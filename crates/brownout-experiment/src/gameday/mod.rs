//! `brownout gameday FILE`: a planned, escalating series of experiments run as one
//! campaign, scored 0–100 and graded A–F from the runs' journals (docs/gameday.md).
//!
//! - [`spec`]: the GameDay file (keys, schema, loading with `FILE:LINE:COL` errors);
//! - [`campaign`]: running the experiments in order through `brownout run`'s runner;
//! - [`score`]: the score and grade, from the journals; [`dry`]: the simulator's
//!   expectation for `--dry-run`;
//! - [`record`]: the GameDay's own journal; [`report`]: md, html, json and junit reports;
//! - [`store`]: GameDays' records in the journal store and their trend.

/// A line on stdout that never panics: a reader gone away (`| head`) must not stop a
/// GameDay between experiments.
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($t)*);
    }};
}

pub mod campaign;
pub mod dry;
pub mod record;
pub mod report;
pub mod score;
pub mod spec;
pub mod store;

use brownout_store::keep::ReportTarget;
use clap::Args;
use std::path::PathBuf;

/// Run a GameDay: an ordered, escalating series of experiments, scored and graded.
///
/// Each experiment is a normal run (guardrails, live SLO gates, rollbacks always, its
/// journal in the store tied to the GameDay's id); the blast-radius ladder against history
/// applies across them. By default the GameDay stops escalating at the first experiment
/// that does not complete (the rest are `skipped`, with the reason); an experiment with
/// `requires` runs only if those completed. The score (0–100) and grade (A–F) are computed
/// from the journals as docs/gameday.md defines them.
///
/// Exit codes: 0 every experiment completed; 1 one or more did not (aborted, deviated,
/// skipped); 2 bad input; 3 refused by a guardrail; 4 failed (brownout could not run one);
/// 130 interrupted (faults removed, rollbacks run, the GameDay's journal says where it
/// stopped).
///
/// Examples:
///   brownout gameday examples/gameday/incident-series.yaml
///   brownout gameday gd.yaml --dry-run
///   brownout gameday gd.yaml --report html:gameday.html --report junit:gameday.xml
///   brownout gameday --schema
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct GamedayArgs {
    /// The GameDay file (YAML, JSON or TOML; see docs/gameday.md).
    #[arg(required_unless_present = "schema")]
    pub file: Option<PathBuf>,
    /// The guardrail policy (an operator's file) instead of the built-in one.
    #[arg(long)]
    pub policy: Option<PathBuf>,
    /// The journal store (default: as `brownout journal`).
    #[arg(long, value_name = "PATH")]
    pub store: Option<PathBuf>,
    /// Write a report when the GameDay ends: md, html, json or junit, to FILE (repeatable).
    #[arg(long, value_name = "FORMAT:FILE")]
    pub report: Vec<ReportTarget>,
    /// Write the GameDay's own journal (JSON) here.
    #[arg(long, value_name = "FILE")]
    pub journal: Option<PathBuf>,
    /// Also keep each experiment's journal file here, as ID.json (they are always in the
    /// store).
    #[arg(long, value_name = "DIR")]
    pub journal_dir: Option<PathBuf>,
    /// Print the GameDay's journal as JSON on stdout instead of the summaries.
    #[arg(long)]
    pub json: bool,
    /// Check the guardrails of every experiment, print the simulator's predictions and the
    /// expected score; send nothing to any target.
    #[arg(long)]
    pub dry_run: bool,
    /// Run every experiment even after one did not complete (`requires` still holds).
    #[arg(long)]
    pub continue_on_failure: bool,
    /// Print the GameDay file's JSON Schema.
    #[arg(long, conflicts_with = "file")]
    pub schema: bool,
    /// Rewrite the GameDay's journal to this file after each experiment (for a watcher).
    #[arg(long, value_name = "FILE", hide = true)]
    pub status: Option<PathBuf>,
    /// Use this GameDay id (a watcher's choice).
    #[arg(long, value_name = "ID", hide = true, alias = "run-id")]
    pub gameday_id: Option<String>,
    /// Stop the GameDay when stdin ends, as SIGINT does.
    #[arg(long, hide = true)]
    pub stop_on_stdin_eof: bool,
}

/// Run `brownout gameday`; its exit code.
pub fn run(a: GamedayArgs) -> anyhow::Result<i32> {
    if a.schema {
        say!("{}", serde_json::to_string_pretty(&spec::schema())?);
        return Ok(0);
    }
    let Some(file) = &a.file else {
        anyhow::bail!("give the GameDay file (or --schema)");
    };
    let g = match spec::load_file(file) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("{e}");
            return Ok(2);
        }
    };
    if let Some(p) = &a.policy {
        let text = match std::fs::read_to_string(p) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{}: cannot read the policy: {e}", p.display());
                return Ok(2);
            }
        };
        if let Err(e) = crate::experiment::Policy::from_str_named(&text, &p.display().to_string()) {
            eprintln!("{e}");
            return Ok(2);
        }
    }
    if let Some(d) = &a.journal_dir {
        if let Err(e) = std::fs::create_dir_all(d) {
            eprintln!("{}: cannot create the journal directory: {e}", d.display());
            return Ok(2);
        }
    }
    let o = campaign::Options {
        policy: a.policy.clone(),
        store: a.store.clone(),
        journal_dir: a.journal_dir.clone(),
        quiet: a.json,
        dry_run: a.dry_run,
        continue_on_failure: a.continue_on_failure,
        status: a.status.clone(),
        gameday_id: a.gameday_id.clone(),
        stop_on_stdin_eof: a.stop_on_stdin_eof,
    };
    let (rec, code) = campaign::run(&g, &o)?;
    let json = serde_json::to_string_pretty(&rec)?;
    if let Some(p) = &a.journal {
        std::fs::write(p, format!("{json}\n")).map_err(|e| {
            anyhow::anyhow!("cannot write the GameDay journal {}: {e}", p.display())
        })?;
    }
    for t in &a.report {
        let text = report::render(&rec, t.format)?;
        if let Err(e) = std::fs::write(&t.file, text) {
            eprintln!(
                "brownout gameday: cannot write the report {}: {e}",
                t.file.display()
            );
        }
    }
    if a.json {
        say!("{json}");
    } else {
        print_summary(&rec);
    }
    Ok(code)
}

/// The GameDay in a few lines.
fn print_summary(r: &record::Record) {
    let clean = |s: &str| brownout_core::human::clean_n(s, 200);
    say!();
    say!("GameDay: {}", clean(&r.title));
    for (i, e) in r.experiments.iter().enumerate() {
        say!(
            "  {}. {:<16} {:<11} {:>5.1}/{:<5.1} {}",
            i + 1,
            clean(&e.id),
            e.status,
            e.points,
            e.max_points,
            clean(&e.why)
        );
        if e.status == "skipped" {
            say!("     {}", clean(&e.reason));
        }
    }
    let what = if r.dry_run { "expected score" } else { "score" };
    say!(
        "{what}: {:.1}/100, grade {} — {} ({})",
        r.score,
        r.grade,
        r.status,
        clean(&r.reason)
    );
    match &r.ladder.reached {
        _ if r.dry_run => {}
        Some(id) => say!(
            "ladder: reached step {} of {} ({}), widest completed stage {:.0}% of the sessions",
            r.ladder.step,
            r.ladder.of,
            clean(id),
            r.ladder.widest_share * 100.0
        ),
        None => say!("ladder: no experiment completed"),
    }
    if let Some(p) = r.previous.last() {
        say!(
            "trend: previous GameDay of this title {:.1} ({}), this one {:+.1}",
            p.score,
            p.grade,
            r.score - p.score
        );
    }
    if r.dry_run {
        say!("dry run: nothing was sent to any target");
    } else {
        say!(
            "store: GameDay {} (brownout journal trend --gameday {:?})",
            r.gameday_id,
            r.title
        );
    }
}

/// `brownout journal trend --gameday TITLE`: the GameDays of a title, oldest first.
pub fn trend_cmd(
    s: &brownout_store::store::AnyStore,
    title: &str,
    last: u64,
    json: bool,
) -> anyhow::Result<i32> {
    let t = crate::gameday::store::trend(s, title, last)?;
    if t.gamedays.is_empty() {
        anyhow::bail!("no GameDay titled {title:?} in the store (run `brownout gameday FILE`)");
    }
    if json {
        say!("{}", serde_json::to_string_pretty(&t)?);
        return Ok(0);
    }
    say!("GameDay: {}", brownout_core::human::clean_n(title, 200));
    for g in &t.gamedays {
        say!(
            "  {}  {}  {:<11} {:>5.1}  {}",
            brownout_store::report::view::utc(g.started_unix_ms),
            g.gameday_id,
            g.status,
            g.score,
            g.grade
        );
    }
    if let Some(m) = t.mean_score {
        print!("mean score {m:.1} over {} GameDay(s)", t.gamedays.len());
    }
    match t.last_change {
        Some(c) => say!("; the last {c:+.1} against the one before"),
        None => say!(),
    }
    Ok(0)
}
