//! What `brownout run` is given and what it gives back: shared by the runner and the code
//! that writes its journal (run_record.rs), below both.

use std::path::PathBuf;

/// `brownout run`'s arguments.
#[derive(Debug, Clone, Default)]
pub struct RunArgs {
    pub file: PathBuf,
    pub policy: Option<PathBuf>,
    pub journal: Option<PathBuf>,
    pub json: bool,
    pub seed: Option<u64>,
    pub dry_run: bool,
    /// The store and the reports (`--store`, `--no-store`, `--report`).
    pub keep: brownout_store::keep::KeepArgs,
    /// For a program that watches the run (the MCP server): where to keep its live state,
    /// the run id to use, and whether stdin's end stops the run as a signal would.
    pub watch: super::stop::Watched,
    /// A person approved going above the ladder the store's history allows (who).
    pub ladder_skip_approved_by: Option<String>,
    /// How long to wait for another run holding the target to end (zero: refuse at once).
    pub wait_for_target: std::time::Duration,
    /// Part of a GameDay (`brownout gameday`): its id, kept in the journal.
    pub gameday: Option<String>,
    /// Nothing on stdout (a GameDay with `--json` prints its own record alone).
    pub quiet: bool,
    /// `--otlp`: the run's phases as spans (`super::otel`).
    pub otlp: Option<brownout_relay::otlp::Otlp>,
}

/// How a run ended: its exit code and its journal (as written).
#[derive(Debug, Clone)]
pub struct Outcome {
    pub code: i32,
    pub journal: serde_json::Value,
}
