//! `brownout search`: the barely-violating experiment. Dimensions marked `{search: [LO, HI]}`
//! in a plan (with `--workload` and `--gate`) or in an experiment file are searched on the
//! simulator for where robustness ρ crosses 0 — per-seed bisection with common random
//! numbers ([`brownout_sim::search`]), along the one dimension, or along rays across two
//! (with adaptive seeds under `--precision`), or a surrogate-guided search across three to
//! five — and the file is written back with the barely-violating values (docs/search.md).
//!
//! - [`marks`](crate::marks): the marks in the file; [`output`]: the report, the chart, the file
//!   written back; [`wide`]: adaptive seeds and three to five dimensions; [`output_wide`]:
//!   their report.

pub mod live;
pub mod output;
pub mod output_wide;
pub mod paths;
pub mod wide;

use crate::experiment::load::load_text;
use crate::marks::{self, Mark};
use brownout_core::plan::source::Format;
use brownout_core::slo::Gate;
use brownout_core::Plan;
use brownout_sim::search::{crossing, Budget, Crossing};
use brownout_sim::sim::fork::Forks;
use brownout_sim::{simulate, SimOptions, Workload};
use clap::Args;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The most seeds `--seeds` and `--max-seeds` take (each seed's state is held).
pub const MAX_SEEDS: u64 = 10_000;

/// Exit code: the budget ran out before any seed gave a result.
pub const EXIT_NO_RESULT: i32 = 4;

/// Search the simulator for the faults that take an SLO just past its boundary.
///
/// Mark one to five numbers of a plan or an experiment file as search dimensions, e.g.
/// `probability: {search: [0, 0.2]}`, `added_ms: {search: [0, 3000]}` or a stage's
/// `sessions: {search: [1%, 100%]}`; brownout finds where robustness ρ (the gates' smallest
/// normalised margin) crosses 0, per seed, with an interval over seeds, and writes the file
/// back with the barely-violating values — ready for `brownout run` or `brownout sim`.
/// With `--precision`, seeds are added until the median boundary is known that well. Three
/// to five marks: a Gaussian-process search for the barely-violating point nearest the
/// weakest corner, with a map of the boundary (`--method ga`: a genetic search instead).
///
/// Examples:
///   brownout search --plan examples/search/cascade-search.yaml --workload examples/sim/cascade.yaml \
///       --gate 'error_rate < 1% over 10s'
///   brownout search examples/search/green-search.yaml -o barely.yaml --chart rho.svg
///   brownout search examples/search/green-search.yaml --live --live-runs 6   # then confirm live
///   brownout search --plan examples/search/cascade-search.yaml --workload examples/sim/cascade.yaml \
///       --gate 'error_rate < 1% over 10s' --precision 0.01            # adaptive seeds
///   brownout search --plan examples/search/cascade-4d.yaml --workload examples/sim/cascade.yaml \
///       --gate 'error_rate < 1% over 10s'                               # four dimensions
///
/// Exit codes: 0 a boundary found; 2 bad input; 3 no crossing in the range (it holds
/// everywhere, or breaks already at the lowest values); 4 the budget (--time, --max-evals)
/// ran out before any seed gave a result.
#[derive(Args, Debug, Clone)]
#[command(verbatim_doc_comment)]
pub struct SearchArgs {
    /// An experiment file with marks (its load's workload, faults and gates are used).
    pub experiment: Option<PathBuf>,
    /// A plan with marks (with --workload and --gate), instead of an experiment.
    #[arg(long, conflicts_with = "experiment")]
    pub plan: Option<PathBuf>,
    /// The workload to simulate (with --plan).
    #[arg(long)]
    pub workload: Option<PathBuf>,
    /// An SLO gate (repeatable; with --plan): ρ is over these gates.
    #[arg(long = "gate", value_parser = crate::sim_args::parse_gate)]
    pub gates: Vec<Gate>,
    /// Seeds to search (each a run with its own draws, the same at every point; 1 to 10000).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=MAX_SEEDS))]
    pub seeds: u64,
    /// The first seed (seeds are SEED, SEED+1, …).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Precision, as a fraction of each range (default 1/32: the bracket each seed ends in;
    /// above 0, at most 1).
    #[arg(long, default_value_t = 1.0 / 32.0, value_parser = wide::parse_tol)]
    pub tol: f64,
    /// Two dimensions: rays across the plane (at least 2).
    #[arg(long, default_value_t = 5)]
    pub rays: u32,
    /// Run this many tasks per simulation instead of the workload's `tasks`.
    #[arg(long)]
    pub tasks: Option<u64>,
    /// Stop after this many simulations (default 500; three to five dimensions: 2400).
    #[arg(long)]
    pub max_evals: Option<u64>,
    /// Stop after this much wall time, e.g. `30s` (a search cut by time is not
    /// reproducible; it says so).
    #[arg(long, alias = "time-budget", value_parser = brownout_core::duration::parse_flag)]
    pub time: Option<Duration>,
    /// Write the file back here with the barely-violating values.
    #[arg(short = 'o', long)]
    pub out: Option<PathBuf>,
    /// Draw ρ over the searched space (SVG) here.
    #[arg(long)]
    pub chart: Option<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    /// Then confirm the simulator's boundary live: full guarded `brownout run`s of the
    /// experiment (one dimension), climbing from below the boundary.
    #[arg(long, requires = "experiment")]
    pub live: bool,
    /// Live runs at most.
    #[arg(long, default_value_t = 8, requires = "live")]
    pub live_runs: u32,
    /// Where the live runs start, as a share of the way from the range's low end to the
    /// simulator's boundary.
    #[arg(long, default_value_t = 0.6, requires = "live")]
    pub live_start: f64,
    /// The guardrail policy of the live runs (`brownout run --policy`).
    #[arg(long, requires = "live")]
    pub policy: Option<PathBuf>,
    /// The journal store the live runs are kept in (`brownout run --store`).
    #[arg(long, requires = "live")]
    pub store: Option<PathBuf>,
    #[command(flatten)]
    pub wide: wide::WideArgs,
}

/// The command line's defaults (`brownout search` with no flags), so a search built in code
/// (`brownout mcp`, tests) starts where the command line does and names only what differs.
impl Default for SearchArgs {
    fn default() -> SearchArgs {
        #[derive(clap::Parser)]
        struct Defaults {
            #[command(flatten)]
            args: SearchArgs,
        }
        <Defaults as clap::Parser>::parse_from(["search"]).args
    }
}

impl SearchArgs {
    /// The simulation budget for a search of `dims` dimensions.
    pub fn max_evals(&self, dims: usize) -> u64 {
        self.max_evals.unwrap_or(if dims >= 3 { 2400 } else { 500 })
    }
}

/// What is searched: the marked text and what to simulate it with.
pub struct Problem {
    pub text: String,
    pub file: String,
    pub dir: PathBuf,
    /// An experiment file (else a plan).
    pub experiment: bool,
    pub marks: Vec<Mark>,
    workload: Option<Workload>,
    gates: Vec<Gate>,
    tasks: Option<u64>,
    /// `--time`: the instant every simulation of the search stops at (counted from loading).
    pub deadline: Option<Instant>,
}

impl Problem {
    /// Load and check the inputs; every mark at its ends must give a valid file.
    pub fn load(a: &SearchArgs) -> Result<Problem, String> {
        let (path, experiment) = match (&a.experiment, &a.plan) {
            (Some(e), None) => (e.clone(), true),
            (None, Some(p)) => (p.clone(), false),
            _ => {
                return Err("give an experiment file, or --plan with --workload and --gate".into())
            }
        };
        let file = path.display().to_string();
        let text = brownout_relay::input::read_document(&path).map_err(|e| e.to_string())?;
        let marks = marks::find(&text).map_err(|e| format!("{file}:{e}"))?;
        match marks.len() {
            0 => return Err(format!("{file}: no search mark; mark a number as `{{search: [LO, HI]}}`, e.g. `probability: {{search: [0, 0.2]}}`")),
            1..=5 => {}
            n => return Err(format!("{file}: {n} search marks; a search takes one to five dimensions at once")),
        }
        let workload = match (experiment, &a.workload) {
            (true, _) => None,
            (false, Some(w)) => {
                Some(crate::sim_args::load_workload(w).map_err(|e| format!("{e:#}"))?)
            }
            (false, None) => return Err("--plan needs --workload (and at least one --gate)".into()),
        };
        // The simulator models no fleet: a stage's `relays` share is not simulated (F28).
        if let Some(m) = marks.iter().find(|m| m.key == "relays") {
            return Err(format!("{file}:{}:{}: a mark on `relays`: the search simulates every session's calls with the faults, not a share of a fleet's relays; mark `sessions` instead", m.line, m.col));
        }
        if !experiment && a.gates.is_empty() {
            return Err("--plan needs at least one --gate: ρ is measured against gates".into());
        }
        let p = Problem {
            text,
            file,
            dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
            experiment,
            marks,
            workload,
            gates: a.gates.clone(),
            tasks: a.tasks,
            deadline: None,
        };
        for end in [p.lows(), p.highs()] {
            p.prepare(&end)?;
        }
        if experiment {
            let x = load_text(&p.written(&p.lows()), &p.file, &p.dir).map_err(|e| e.to_string())?;
            if x.spec.method.iter().any(|s| s.relays.is_some()) {
                eprintln!("brownout search: warning: {} sets `relays` on a stage; the simulator puts the faults on every relay's sessions, so the boundary found is lower than a live run's on that share of the fleet", p.file);
            }
        }
        Ok(Problem {
            deadline: a.time.map(|t| Instant::now() + t),
            ..p
        })
    }

    pub fn lows(&self) -> Vec<f64> {
        self.marks.iter().map(|m| m.lo).collect()
    }

    pub fn highs(&self) -> Vec<f64> {
        self.marks.iter().map(|m| m.hi).collect()
    }

    /// The file with `values` in the marks' places.
    pub fn written(&self, values: &[f64]) -> String {
        marks::substitute(&self.text, &self.marks, values, self.experiment)
    }

    /// The plan, workload, gates and (an experiment's) live sessions at `values`.
    fn prepare(&self, values: &[f64]) -> Result<(Plan, Workload, Vec<Gate>, Option<u64>), String> {
        let text = self.written(values);
        if self.experiment {
            let x = load_text(&text, &self.file, &self.dir).map_err(|e| e.to_string())?;
            let share = x
                .spec
                .method
                .last()
                .and_then(|s| s.sessions.fraction())
                .unwrap_or(1.0);
            let (_, plan) = x.stage_plan(share).map_err(|e| e.to_string())?;
            let sessions = u64::from(x.spec.load.sessions.unwrap_or(16));
            Ok((plan, x.workload.clone(), x.gates.clone(), Some(sessions)))
        } else {
            let plan = Plan::from_str_format(&text, &self.file, Format::from_path(&self.file))
                .map_err(|e| e.to_string())?;
            let w = self.workload.clone().ok_or("no workload")?;
            Ok((plan, w, self.gates.clone(), None))
        }
    }

    /// ρ at `values` for `seed` (the plan's draws and the simulation's both from it); NaN
    /// when the search's deadline stopped the simulation before its end (no answer).
    pub fn rho(&self, values: &[f64], seed: u64, full: bool) -> f64 {
        self.rho_until(values, seed, full, self.deadline)
    }

    /// The seeds' runs shared up to where the faults can first act ([`Forks`], keeping
    /// `keep` seeds'), for a search's simulations that stop at their first breach; `None`
    /// for an experiment file (its marks may be in the load, which the runs then share not).
    pub fn forks(&self, keep: usize) -> Option<Forks<'_>> {
        let w = self.workload.as_ref()?;
        let opts = SimOptions {
            tasks: self.tasks,
            seed: None,
            keep_series: false,
            gates: self.gates.clone(),
            stop_at_breach: true,
            sessions: None,
            budget: brownout_sim::sim::budget::Budget {
                deadline: self.deadline,
                ..Default::default()
            },
        };
        Some(Forks::new(w, opts, keep))
    }

    /// [`Problem::rho`] of a simulation that may stop at its first breach, through `forks`
    /// when there are: the same answer, the shared part simulated once.
    pub fn rho_in(&self, forks: Option<&Forks>, values: &[f64], seed: u64) -> f64 {
        let Some(forks) = forks else {
            return self.rho(values, seed, false);
        };
        let Ok((plan, ..)) = self.prepare(values) else {
            return f64::NAN;
        };
        let r = forks.simulate(plan, seed);
        if r.stopped_by.is_some() {
            return f64::NAN;
        }
        r.robustness.unwrap_or(1.0)
    }

    /// [`Problem::rho`] with its own deadline (`None`: run to the end).
    pub fn rho_until(
        &self,
        values: &[f64],
        seed: u64,
        full: bool,
        deadline: Option<Instant>,
    ) -> f64 {
        let Ok((mut plan, w, gates, sessions)) = self.prepare(values) else {
            return f64::NAN;
        };
        plan.seed = seed;
        let opts = SimOptions {
            tasks: self.tasks,
            seed: Some(seed),
            keep_series: false,
            gates,
            stop_at_breach: !full,
            sessions,
            budget: brownout_sim::sim::budget::Budget {
                deadline,
                ..Default::default()
            },
        };
        let r = simulate(&w, plan, &opts);
        if r.stopped_by.is_some() {
            return f64::NAN;
        }
        r.robustness.unwrap_or(1.0)
    }
}

/// A segment of the searched space: from `from` to `to` (values per mark).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Segment {
    pub from: Vec<f64>,
    pub to: Vec<f64>,
}

impl Segment {
    pub fn at(&self, t: f64) -> Vec<f64> {
        self.from
            .iter()
            .zip(&self.to)
            .map(|(a, b)| a + (b - a) * t)
            .collect()
    }
}

/// The segments searched: the range for one mark; rays from the low corner for two.
pub fn segments(p: &Problem, rays: u32) -> Vec<Segment> {
    let (lo, hi) = (p.lows(), p.highs());
    if lo.len() == 1 {
        return vec![Segment { from: lo, to: hi }];
    }
    let n = rays.max(2);
    (0..n)
        .map(|k| {
            let th = std::f64::consts::FRAC_PI_2 * f64::from(k) / f64::from(n - 1);
            let (c, s) = (th.cos().max(0.0), th.sin().max(0.0));
            let m = c.max(s);
            let u = [c / m, s / m];
            Segment {
                from: lo.clone(),
                to: lo
                    .iter()
                    .zip(&hi)
                    .zip(u)
                    .map(|((a, b), u)| a + (b - a) * u)
                    .collect(),
            }
        })
        .collect()
}

/// The barely-violating point.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Barely {
    pub values: Vec<f64>,
    /// The share of the seeds whose gates breach there.
    pub breaching: f64,
    /// The median margin at the first breach among those seeds (−ε ≤ it < 0).
    pub margin_at_breach: Option<f64>,
    /// ρ of the whole run on `rho_seed`, the median breaching seed (far below 0 when a
    /// breach escalates).
    pub rho: f64,
    pub rho_seed: u64,
    /// Its confirming runs were made: false when the `--time` budget ran out before they
    /// finished (then `breaching` is the search's own estimate or NaN, and the margin and
    /// ρ are unknown: NaN/`None`).
    pub checked: bool,
}

/// What the confirming runs found: the share breaching, the median breaching seed with its
/// margin at the breach, that seed's ρ over the whole run, and the seed.
pub type Confirmed = (f64, Option<(f64, u64)>, f64, u64);

/// The confirming runs at `values` within the search's deadline: the share of `seeds`
/// breaching, the median breaching seed with its margin at the breach, and that seed's ρ
/// over the whole run. `None` when the deadline stopped one of them (or had passed).
pub fn confirm(p: &Problem, values: &[f64], seeds: &[u64]) -> Option<Confirmed> {
    if p.deadline.is_some_and(|d| Instant::now() >= d) {
        return None;
    }
    let mut broke = Vec::new();
    for &s in seeds {
        let m = p.rho(values, s, false);
        if m.is_nan() {
            return None;
        }
        if m < 0.0 {
            broke.push((m, s));
        }
    }
    broke.sort_by(|x, y| x.0.total_cmp(&y.0));
    let share = broke.len() as f64 / seeds.len().max(1) as f64;
    let median = broke.get(broke.len() / 2).copied();
    let seed = median.map_or(seeds.first().copied().unwrap_or(0), |m| m.1);
    let rho = p.rho(values, seed, true);
    (!rho.is_nan()).then_some((share, median, rho, seed))
}

/// The search's result.
pub struct Found {
    pub segments: Vec<(Segment, Crossing)>,
    /// With `--precision`: each segment's adaptive search (rounds, seeds, precision reached).
    pub adaptive: Vec<brownout_sim::search::adaptive::Outcome>,
    /// Three to five dimensions: the surrogate's (or the genetic) search.
    pub multi: Option<wide::Multi>,
    pub barely: Option<Barely>,
    pub elapsed: Duration,
}

/// Run the search.
pub fn search(p: &Problem, a: &SearchArgs, progress: &(dyn Fn(&str) + Sync)) -> Found {
    let started = Instant::now();
    let deadline = p.deadline;
    if p.marks.len() >= 3 {
        let (multi, barely) = wide::multi(p, a, deadline, progress);
        return Found {
            segments: Vec::new(),
            adaptive: Vec::new(),
            multi: Some(multi),
            barely,
            elapsed: started.elapsed(),
        };
    }
    let seeds: Vec<u64> = (0..a.seeds.clamp(1, MAX_SEEDS))
        .map(|k| a.seed.saturating_add(k))
        .collect();
    let threads = a.wide.threads();
    let max_evals = a.max_evals(p.marks.len());
    let mut evals = 0u64;
    let mut out = Vec::new();
    let mut adaptive = Vec::new();
    let segs = segments(p, a.rays);
    let n = segs.len() as u64;
    for (k, seg) in segs.into_iter().enumerate() {
        // Each segment gets its share of what is left of the budget.
        let budget = Budget {
            max_evals: max_evals.saturating_sub(evals) / (n - k as u64).max(1),
            deadline,
        };
        let point = |v: &[f64]| {
            v.iter()
                .map(|x| brownout_core::human::sig(*x, 4))
                .collect::<Vec<_>>()
                .join(", ")
        };
        progress(&format!(
            "segment {}: ({}) → ({})",
            k + 1,
            point(&seg.from),
            point(&seg.to)
        ));
        let c = if a.wide.precision.is_some() {
            let (c, o) = wide::adaptive_segment(p, a, &seg, budget.max_evals, deadline, progress);
            adaptive.push(o);
            c
        } else {
            let forks = p.forks(4 * threads);
            let obj = |t: f64, seed: u64, full: bool| match full {
                true => p.rho(&seg.at(t), seed, true),
                false => p.rho_in(forks.as_ref(), &seg.at(t), seed),
            };
            crossing(&obj, &seeds, a.tol, budget, threads, progress)
        };
        evals += c.evals;
        out.push((seg, c));
    }
    // The cheapest barely-violating point: the smallest (normalised) fault strength.
    let (lo, hi) = (p.lows(), p.highs());
    let strength = |v: &[f64]| -> f64 {
        v.iter()
            .zip(lo.iter().zip(&hi))
            .map(|(x, (a, b))| (x - a) / (b - a))
            .sum()
    };
    let barely = out
        .iter()
        .filter_map(|(seg, c)| c.barely.map(|t| (seg, t)))
        .min_by(|x, y| strength(&x.0.at(x.1)).total_cmp(&strength(&y.0.at(y.1))))
        .map(|(seg, t)| barely_at(p, seg, t, &seeds, a.tol));
    Found {
        segments: out,
        adaptive,
        multi: None,
        barely,
        elapsed: started.elapsed(),
    }
}

/// From `t` up (at most ten steps of `tol`), the first point where most seeds breach. Its
/// runs come after the search (a point found is worth confirming) but within the `--time`
/// budget: once it is spent, the point is given as the bisection left it, unchecked.
fn barely_at(p: &Problem, seg: &Segment, mut t: f64, seeds: &[u64], tol: f64) -> Barely {
    let unchecked = |t: f64| Barely {
        values: seg.at(t),
        breaching: f64::NAN,
        margin_at_breach: None,
        rho: f64::NAN,
        rho_seed: seeds.first().copied().unwrap_or(0),
        checked: false,
    };
    let Some(mut found) = confirm(p, &seg.at(t), seeds) else {
        return unchecked(t);
    };
    for _ in 0..10 {
        if found.0 >= 0.5 || t >= 1.0 {
            break;
        }
        let next = (t + tol).min(1.0);
        match confirm(p, &seg.at(next), seeds) {
            Some(f) => (t, found) = (next, f),
            // Out of time: the last point confirmed stands (its share said so).
            None => break,
        }
    }
    let (share, median, rho, seed) = found;
    Barely {
        values: seg.at(t),
        breaching: share,
        margin_at_breach: median.map(|m| m.0),
        rho,
        rho_seed: seed,
        checked: true,
    }
}

/// `brownout search`: the exit code.
pub fn run(a: SearchArgs) -> anyhow::Result<i32> {
    let p = match Problem::load(&a) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("brownout search: {e}");
            return Ok(2);
        }
    };
    let chatty = std::io::stderr().is_terminal();
    let progress = |line: &str| {
        if chatty {
            eprintln!("brownout search: {line}");
        }
    };
    let found = search(&p, &a, &progress);
    let code = output::report(&p, &a, &found)?;
    if !a.live {
        return Ok(code);
    }
    if p.marks.len() != 1 {
        eprintln!(
            "brownout search: --live confirms one dimension; this file has {}",
            p.marks.len()
        );
        return Ok(2);
    }
    let Some(sim) = found.segments[0]
        .1
        .boundary
        .map(|t| found.segments[0].0.at(t)[0])
    else {
        eprintln!("brownout search: no simulated boundary to confirm live");
        return Ok(3);
    };
    let l = live::confirm(&p, &a, sim, &progress);
    output::live(&p, &a, &found, &l)
}

#[cfg(test)]
mod barely_tests;
