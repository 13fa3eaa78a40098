//! The command lines of `brownout run` and `brownout experiment`.

use clap::{Args, Subcommand};
use std::path::PathBuf;

/// Run an experiment: guardrails, steady state, baseline, stages under live SLO gates,
/// rollback (always), recovery, journal.
///
/// The faults reach a growing share of sessions stage by stage; a stage is promoted only
/// after its whole duration with every gate holding. A gate breach removes the faults
/// within one evaluation tick (≤ 100 ms), then the rollbacks run, then recovery is
/// measured. SIGINT/SIGTERM remove the faults and run every rollback, each to its own
/// timeout (further signals are recorded, not obeyed). See docs/experiments.md.
///
/// Exit codes: 0 completed; 1 deviated or aborted (the system failed the hypothesis);
/// 2 bad input; 3 refused by a guardrail (nothing was sent to the target), or another run is
/// going against the same target (one run per target: a lock the kernel releases when a
/// runner dies); 4 failed or not run (brownout could not run it, or the steady state did
/// not hold before any fault); 130 interrupted.
///
/// Examples:
///   brownout run examples/experiments/green.yaml
///   brownout run examples/experiments/incident-4.yaml --journal run.json --seed 7
///   brownout run exp.yaml --policy /etc/brownout/policy.yaml --dry-run
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct RunCmd {
    /// The experiment file (YAML, JSON or TOML; see docs/experiments.md).
    pub experiment: PathBuf,
    /// The guardrail policy (an operator's file) instead of the built-in one.
    #[arg(long)]
    pub policy: Option<PathBuf>,
    /// Also write the journal to this file (the store keeps every run either way; without
    /// this flag no file is written).
    #[arg(long)]
    pub journal: Option<PathBuf>,
    /// Print the journal as JSON on stdout instead of the summary; no progress lines.
    #[arg(long)]
    pub json: bool,
    /// The fault plan's seed (which sessions the stages reach, which calls fail).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Check everything, print what would happen, send nothing to the target.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub keep: brownout_store::keep::KeepArgs,
    /// Rewrite the run's live state (phase, gates, injections) to this JSON file about once
    /// a second, for a program that watches the run (as `brownout mcp` does).
    #[arg(long, value_name = "FILE")]
    pub status: Option<PathBuf>,
    /// Use this run id (a watcher's choice; default: a new one).
    #[arg(long, value_name = "ID", hide = true)]
    pub run_id: Option<String>,
    /// Stop the run when stdin ends, as SIGINT does (faults removed, rollbacks run): a
    /// watcher that dies takes its runs' faults with it.
    #[arg(long)]
    pub stop_on_stdin_eof: bool,
    /// A person (named here) approves running above the rung the store's history allows
    /// (the policy's `ladder_from_history`); recorded in the journal. `brownout mcp` passes
    /// the approver of its approval flow.
    #[arg(long, value_name = "WHO")]
    pub ladder_skip_approved_by: Option<String>,
    /// When another run holds the target, wait up to this many seconds for it to end instead
    /// of refusing at once (`brownout mcp` passes 30: a run it stopped may still be running
    /// its rollbacks).
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub wait_for_target: u64,
    #[command(flatten)]
    pub otlp: crate::otlp_args::OtlpArgs,
}

/// Validate experiment files, print their JSON Schema.
#[derive(Subcommand, Debug)]
pub enum ExperimentCmd {
    /// Check experiment files: every error with FILE:LINE:COL, the key and a hint.
    /// Exit 0 when all are valid, 1 otherwise (as `plan check`).
    Check {
        /// The experiment files (YAML, JSON or TOML).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print the results as JSON.
        #[arg(long)]
        json: bool,
        /// Apply this policy's guardrails too, as `brownout run --policy` does: a file the
        /// run would refuse fails its check (the ladder's history, kept in the store, is
        /// checked by `run` only).
        #[arg(long, value_name = "FILE")]
        policy: Option<PathBuf>,
    },
    /// Print the experiment file's JSON Schema.
    Schema,
    /// Print the journal's JSON Schema (docs/journal.schema.json).
    JournalSchema,
}

impl RunCmd {
    pub fn run(self) -> anyhow::Result<i32> {
        let otlp = self.otlp.start("run")?;
        let code = super::runner::run(super::RunArgs {
            file: self.experiment,
            policy: self.policy,
            journal: self.journal,
            json: self.json,
            seed: self.seed,
            dry_run: self.dry_run,
            keep: self.keep,
            watch: super::stop::Watched {
                status: self.status,
                run_id: self.run_id,
                stop_on_stdin_eof: self.stop_on_stdin_eof,
            },
            gameday: None,
            quiet: false,
            ladder_skip_approved_by: self.ladder_skip_approved_by,
            wait_for_target: std::time::Duration::from_secs(self.wait_for_target.min(3600)),
            otlp: otlp.clone(),
        });
        if let Some(otlp) = otlp {
            otlp.close();
        }
        code
    }
}

impl ExperimentCmd {
    pub fn run(self) -> i32 {
        match self {
            ExperimentCmd::Check {
                files,
                json,
                policy,
            } => super::cmd::check_with(&files, json, policy.as_deref()),
            ExperimentCmd::Schema => {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&super::cmd::schema()).unwrap_or_default()
                );
                0
            }
            ExperimentCmd::JournalSchema => {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&super::journal::schema()).unwrap_or_default()
                );
                0
            }
        }
    }
}
