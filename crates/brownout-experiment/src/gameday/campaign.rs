//! Running a GameDay: each experiment in order through the same runner as `brownout run`
//! (guardrails, gates, rollbacks, its journal kept in the store with the GameDay's id), its
//! `requires` honoured, escalation stopped at the first experiment that does not complete
//! (unless `continue_on_failure`), a signal between experiments or during one ending the
//! GameDay where it is; then the score and the GameDay's own journal.

use super::record::{Record, StepRecord};
use super::score;
use super::spec::LoadedGameDay;
use crate::experiment::runner::{self, RunArgs};
use crate::experiment::stop::Watched;
use brownout_store::keep::KeepArgs;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// How a GameDay runs.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub policy: Option<PathBuf>,
    pub store: Option<PathBuf>,
    /// Where each experiment's journal file goes (default: a scratch directory, removed).
    pub journal_dir: Option<PathBuf>,
    /// Nothing on stdout from the experiments (the caller prints the GameDay as JSON).
    pub quiet: bool,
    pub dry_run: bool,
    pub continue_on_failure: bool,
    /// Rewrite the GameDay's record here after each experiment (a watcher reads it).
    pub status: Option<PathBuf>,
    /// Use this GameDay id (a watcher's choice).
    pub gameday_id: Option<String>,
    pub stop_on_stdin_eof: bool,
}

/// SIGINT/SIGTERM (and stdin's end, for a watcher) seen since the GameDay started.
static STOPS: AtomicU32 = AtomicU32::new(0);

/// Count signals for the whole GameDay: between experiments nobody else listens, and a
/// signal must still stop the escalation (during one, the run sees it too). With
/// `stdin_eof`, the end of stdin (a watcher gone) is raised as SIGINT.
fn watch_signals(stdin_eof: bool) {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build();
        let Ok(rt) = rt else {
            return;
        };
        // Registered here, before this returns: no window where a signal kills the process.
        let handlers = rt.block_on(async {
            use tokio::signal::unix::{signal, SignalKind};
            Some((
                signal(SignalKind::interrupt()).ok()?,
                signal(SignalKind::terminate()).ok()?,
            ))
        });
        let Some((mut int, mut term)) = handlers else {
            return;
        };
        std::thread::spawn(move || {
            rt.block_on(async move {
                loop {
                    tokio::select! {
                        _ = int.recv() => {}
                        _ = term.recv() => {}
                    }
                    STOPS.fetch_add(1, Ordering::SeqCst);
                }
            });
        });
        if stdin_eof {
            std::thread::spawn(|| {
                use std::io::Read;
                let mut buf = [0u8; 256];
                let mut stdin = std::io::stdin();
                while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
                // As a signal: the running experiment stops too (its runner listens for
                // SIGINT), and the thread above counts it.
                eprintln!("brownout gameday: stdin closed: stopping the GameDay");
                let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGINT);
            });
        }
    });
}

fn stopped() -> bool {
    STOPS.load(Ordering::SeqCst) > 0
}

/// Run the GameDay; its record and exit code (0 every experiment completed, 1 one or more
/// did not, 3 refused, 4 failed, 130 interrupted; a dry run: 0, or 3 when refused).
pub fn run(g: &LoadedGameDay, o: &Options) -> anyhow::Result<(Record, i32)> {
    watch_signals(o.stop_on_stdin_eof);
    let started = crate::experiment::clock::unix_ms();
    let mut rec = Record {
        gameday_version: 1,
        gameday_id: o.gameday_id.clone().unwrap_or_else(|| {
            format!(
                "gd-{}",
                brownout_store::store::ingest::fresh_run_id(started)
            )
        }),
        title: g.spec.title.clone(),
        labels: g.spec.labels.clone(),
        file: g.file.clone(),
        brownout_version: env!("CARGO_PKG_VERSION").into(),
        started_unix_ms: started,
        status: "running".into(),
        dry_run: o.dry_run,
        continue_on_failure: o.continue_on_failure,
        ..Record::default()
    };
    let total_weight: f64 = g.spec.experiments.iter().map(|s| s.weight()).sum();
    rec.experiments = g
        .spec
        .experiments
        .iter()
        .zip(&g.experiments)
        .map(|(s, x)| StepRecord {
            id: s.id.clone(),
            title: x.spec.title.clone(),
            file: x.file.clone(),
            weight: s.weight(),
            requires: s.requires.clone(),
            status: "pending".into(),
            max_points: 100.0 * s.weight() / total_weight,
            ..StepRecord::default()
        })
        .collect();
    let scratch = tempfile::Builder::new()
        .prefix("brownout-gameday-")
        .tempdir()?;
    let mut stop_reason: Option<String> = None;
    let mut interrupted = false;
    // A dry run: experiments the simulator expects to breach (a real run stops there).
    let mut expected_breach: Vec<String> = Vec::new();
    let n = g.experiments.len();
    for (i, (s, x)) in g.spec.experiments.iter().zip(&g.experiments).enumerate() {
        if !interrupted && stopped() {
            interrupted = true;
            stop_reason = Some(format!("interrupted before `{}`", s.id));
            rec.stopped_at.get_or_insert_with(|| s.id.clone());
        }
        let unmet: Vec<String> = s
            .requires
            .iter()
            .filter_map(|r| {
                let e = rec.experiments.iter().find(|e| &e.id == r)?;
                let ok = e.status == "completed" || (o.dry_run && e.status == "checked");
                (!ok).then(|| format!("`{r}` ({})", e.status))
            })
            .collect();
        let skip = match (&stop_reason, unmet.is_empty()) {
            (Some(why), _) => Some(format!("skipped: {why}")),
            (None, false) => Some(format!(
                "skipped: requires {}, which did not complete",
                unmet.join(", ")
            )),
            (None, true) => None,
        };
        if let Some(why) = skip {
            let e = &mut rec.experiments[i];
            e.status = "skipped".into();
            e.why = "skipped: earns nothing".into();
            e.reason = why;
            write_status(&rec, o);
            continue;
        }
        if !o.quiet {
            say!(
                "== GameDay {}/{n}: {} — {}",
                i + 1,
                s.id,
                brownout_core::human::clean_n(&x.spec.title, 120)
            );
        }
        rec.experiments[i].status = "running".into();
        write_status(&rec, o);
        let args = RunArgs {
            file: PathBuf::from(&x.file),
            policy: o.policy.clone(),
            journal: Some(
                o.journal_dir
                    .as_deref()
                    .unwrap_or(scratch.path())
                    .join(format!("{}.json", s.id)),
            ),
            json: o.quiet,
            seed: None,
            dry_run: o.dry_run,
            ladder_skip_approved_by: None,
            wait_for_target: std::time::Duration::ZERO,
            keep: KeepArgs {
                store: o.store.clone(),
                no_store: false,
                report: Vec::new(),
            },
            watch: Watched {
                status: None,
                run_id: None,
                stop_on_stdin_eof: false,
            },
            gameday: Some(rec.gameday_id.clone()),
            quiet: o.quiet,
            otlp: None,
        };
        let outcome = match runner::run_loaded(x.clone(), &args)? {
            Some(out) => out,
            None => anyhow::bail!("the policy could not be read (see above)"),
        };
        let j = &outcome.journal;
        let e = &mut rec.experiments[i];
        e.run_id = j["run_id"].as_str().map(String::from);
        e.exit_code = Some(outcome.code);
        e.duration_ms = j["ended_unix_ms"]
            .as_u64()
            .zip(j["started_unix_ms"].as_u64())
            .map_or(0, |(b, a)| b.saturating_sub(a));
        e.reason = j["reason"].as_str().unwrap_or("").to_string();
        e.widest_share = widest_completed_share(j);
        let status = j["status"].as_str().unwrap_or("failed").to_string();
        if o.dry_run {
            e.status = if status == "completed" {
                "checked".into()
            } else {
                status.clone()
            };
            let exp = super::dry::expect(x);
            let after_breach = (!o.continue_on_failure && !expected_breach.is_empty())
                || s.requires.iter().any(|r| expected_breach.contains(r));
            if after_breach {
                e.value = 0.0;
                e.why = format!(
                    "expected: skipped after the expected breach of `{}`",
                    expected_breach.join("`, `")
                );
            } else {
                e.value = exp.value;
                e.why = format!("expected: {} ({})", exp.verdict, exp.note);
            }
            if exp.verdict == "breaches" {
                expected_breach.push(s.id.clone());
            }
            e.expected = Some(exp);
            if e.status == "refused" && !o.continue_on_failure {
                stop_reason = Some(format!("`{}` was refused", s.id));
                rec.stopped_at = Some(s.id.clone());
            }
        } else {
            let c = score::contribution(j);
            e.value = c.value;
            e.factors = c.factors;
            e.why = c.why;
            e.status = status.clone();
            if status == "interrupted" {
                interrupted = true;
                stop_reason = Some(format!("interrupted during `{}`", s.id));
                rec.stopped_at = Some(s.id.clone());
            } else if status != "completed" && !o.continue_on_failure {
                stop_reason = Some(format!(
                    "the GameDay stopped escalating at `{}` ({status})",
                    s.id
                ));
                rec.stopped_at = Some(s.id.clone());
            }
        }
        write_status(&rec, o);
    }
    finish(&mut rec, o, interrupted);
    Ok((rec.clone(), exit_code(&rec, interrupted)))
}

/// Points, score, grade, ladder, status and reason; the record kept in the store.
fn finish(rec: &mut Record, o: &Options, interrupted: bool) {
    for e in &mut rec.experiments {
        e.points = (e.max_points * e.value * 10.0).round() / 10.0;
    }
    let parts: Vec<(f64, f64)> = rec
        .experiments
        .iter()
        .map(|e| (e.weight, e.value))
        .collect();
    rec.score = score::score(&parts);
    rec.grade = score::grade(rec.score).into();
    rec.ladder = rec.ladder();
    let count = |st: &str| rec.experiments.iter().filter(|e| e.status == st).count();
    let not_done: Vec<String> = rec
        .experiments
        .iter()
        .filter(|e| e.status != "completed" && e.status != "checked")
        .map(|e| format!("{} {}", e.id, e.status))
        .collect();
    let any = |sts: &[&str]| {
        rec.experiments
            .iter()
            .any(|e| sts.contains(&e.status.as_str()))
    };
    rec.status = if interrupted {
        "interrupted"
    } else if any(&["failed", "not_run"]) {
        "failed"
    } else if any(&["refused"]) {
        "refused"
    } else if o.dry_run {
        "checked"
    } else if not_done.is_empty() {
        "completed"
    } else {
        "incomplete"
    }
    .into();
    rec.reason = if not_done.is_empty() {
        format!(
            "{} of {} experiments {}",
            rec.experiments.len(),
            rec.experiments.len(),
            if o.dry_run { "checked" } else { "completed" }
        )
    } else {
        format!(
            "{} of {} completed; {}",
            count("completed"),
            rec.experiments.len(),
            not_done.join(", ")
        )
    };
    if let Some(at) = &rec.stopped_at {
        rec.reason.push_str(&format!("; stopped at `{at}`"));
    }
    rec.ended_unix_ms = crate::experiment::clock::unix_ms();
    if !o.dry_run {
        match brownout_store::store::open(o.store.as_deref()) {
            Ok(mut s) => {
                rec.previous = crate::gameday::store::previous(&s, &rec.title, &rec.gameday_id)
                    .unwrap_or_default();
                if let Err(e) = crate::gameday::store::keep(&mut s, rec) {
                    eprintln!(
                        "brownout gameday: warning: the GameDay was not kept in the store: {e}"
                    );
                }
            }
            Err(e) => {
                eprintln!("brownout gameday: warning: the store could not be opened: {e}")
            }
        }
    }
    write_status(rec, o);
}

/// 130 interrupted > 4 failed > 3 refused > 1 incomplete > 0.
fn exit_code(rec: &Record, interrupted: bool) -> i32 {
    match rec.status.as_str() {
        _ if interrupted => 130,
        "failed" => 4,
        "refused" => 3,
        "incomplete" => 1,
        _ => 0,
    }
}

fn widest_completed_share(j: &Value) -> f64 {
    j["stages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["completed"] == Value::Bool(true))
        .filter_map(|s| s["share"].as_f64())
        .fold(0.0, f64::max)
}

/// The record, atomically, where a watcher reads it.
fn write_status(rec: &Record, o: &Options) {
    let Some(p) = &o.status else {
        return;
    };
    let Ok(text) = serde_json::to_string_pretty(rec) else {
        return;
    };
    let tmp = p.with_extension("tmp");
    if std::fs::write(&tmp, text).is_ok() {
        let _ = std::fs::rename(&tmp, p);
    }
}
