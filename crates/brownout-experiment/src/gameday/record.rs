//! The GameDay's own journal: what ran, in which order, how each experiment ended and what
//! it earned, the ladder reached, where it stopped, and the trend against earlier GameDays
//! of the same title. Written as JSON (`--journal`, `--json`, the store's `gamedays` table).

use super::score::Factor;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One GameDay.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Record {
    pub gameday_version: u32,
    /// Its id; every experiment's journal carries it as `gameday_id`.
    pub gameday_id: String,
    pub title: String,
    pub labels: BTreeMap<String, String>,
    /// The GameDay file, as given.
    pub file: String,
    pub brownout_version: String,
    pub started_unix_ms: u64,
    pub ended_unix_ms: u64,
    /// `running`, then `completed` (every experiment completed), `incomplete` (one or more
    /// did not), `refused`, `failed` or `interrupted`; `checked` for a dry run.
    pub status: String,
    pub reason: String,
    pub dry_run: bool,
    pub continue_on_failure: bool,
    pub experiments: Vec<StepRecord>,
    /// 0–100 (docs/gameday.md#score); in a dry run, the simulator's expected score.
    pub score: f64,
    /// A–F.
    pub grade: String,
    pub ladder: Ladder,
    /// The experiment the GameDay stopped escalating at (`null`: it ran them all).
    pub stopped_at: Option<String>,
    /// Earlier GameDays of the same title in the store, oldest first (at most 20).
    pub previous: Vec<Previous>,
}

/// One experiment of the GameDay.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StepRecord {
    pub id: String,
    pub title: String,
    /// The experiment file (`GAMEDAY#ID` for an inline one).
    pub file: String,
    pub weight: f64,
    pub requires: Vec<String>,
    /// The run's status (`completed`, `aborted`, …), `skipped`, `pending` or `running`;
    /// `checked` in a dry run.
    pub status: String,
    pub reason: String,
    /// The run in the store (`brownout journal show RUN`).
    pub run_id: Option<String>,
    pub exit_code: Option<i32>,
    /// How long its run took, wall clock (0 when it did not run).
    pub duration_ms: u64,
    /// The widest share of sessions a completed stage reached (0–1).
    pub widest_share: f64,
    /// 0–1 (docs/gameday.md#score).
    pub value: f64,
    /// Points earned out of `max_points` (the weights' share of 100).
    pub points: f64,
    pub max_points: f64,
    pub factors: Vec<Factor>,
    /// How the points were earned or lost, in one line.
    pub why: String,
    /// A dry run's prediction (the simulator on the workload's own server model).
    pub expected: Option<Expected>,
}

/// The simulator's expectation of one experiment.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Expected {
    /// `holds` (every gate held in every stage), `breaches` or `unknown`.
    pub verdict: String,
    /// The smallest ρ over the simulated stages.
    pub robustness: Option<f64>,
    /// The value it would earn (margin factor only: the simulator predicts no MTTR, MTTD
    /// or silent failures).
    pub value: f64,
    pub note: String,
}

/// How far up the escalation the GameDay got.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ladder {
    /// The last experiment, in order, that completed (`null`: none did).
    pub reached: Option<String>,
    /// Its position, 1-based (0: none).
    pub step: usize,
    /// How many experiments the GameDay has.
    pub of: usize,
    /// The widest share of sessions any completed stage reached (0–1).
    pub widest_share: f64,
}

/// An earlier GameDay of the same title.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Previous {
    pub gameday_id: String,
    pub started_unix_ms: i64,
    pub status: String,
    pub score: f64,
    pub grade: String,
}

impl Record {
    /// The ladder from the experiments' statuses.
    pub fn ladder(&self) -> Ladder {
        let mut l = Ladder {
            of: self.experiments.len(),
            ..Ladder::default()
        };
        for (i, e) in self.experiments.iter().enumerate() {
            if e.status == "completed" {
                l.reached = Some(e.id.clone());
                l.step = i + 1;
            }
            l.widest_share = l.widest_share.max(e.widest_share);
        }
        l
    }
}
