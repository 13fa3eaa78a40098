//! A run's journal at its two ends: the journal a run starts with, the plan a dry run prints,
//! and writing, printing and storing the journal when the run ends ([`finish`]).

use super::clock::unix_ms;
use super::journal::{Journal, Status, TargetRecord};
use super::load::Loaded;
use super::run_args::{Outcome, RunArgs};

pub(super) fn new_journal(x: &Loaded, dry_run: bool) -> Journal {
    let started_unix_ms = unix_ms();
    Journal {
        journal_version: 1,
        run_id: brownout_store::store::ingest::fresh_run_id(started_unix_ms),
        brownout_version: env!("CARGO_PKG_VERSION").into(),
        file: x.file.clone(),
        experiment: serde_json::to_value(&x.spec).unwrap_or_default(),
        plan: x.plan_doc.clone(),
        seed: x.plan.seed,
        started_unix_ms,
        ended_unix_ms: 0,
        status: Status::Failed,
        reason: String::new(),
        dry_run,
        refusal: None,
        target: TargetRecord {
            kind: match (&x.spec.target.command, &x.spec.target.admin) {
                _ if x.spec.target.servers.is_some() => "servers",
                _ if x.spec.target.fleet.is_some() => "fleet",
                (Some(_), _) => "command",
                (None, Some(_)) => "remote",
                (None, None) => "url",
            }
            .into(),
            url: x.spec.target.url.clone(),
        },
        steady_state_before: None,
        steady_state_after: None,
        baseline: None,
        stages: Vec::new(),
        breach: None,
        rollbacks: Vec::new(),
        recovery: None,
        gates: Vec::new(),
        series: Vec::new(),
        detection: None,
        robustness: None,
        calibration: None,
        silent: None,
        baselines: Vec::new(),
        tool_calls: None,
        servers: None,
        gameday_id: None,
        ladder_skip: None,
        fleet: None,
    }
}

pub(super) fn print_plan(x: &Loaded) {
    let s = &x.spec;
    println!("experiment: {}", s.title);
    println!("target: {}", super::spec::describe_target(&s.target));
    if let Some(b) = &s.baseline {
        println!("baseline: {} of load without faults", b.0);
    }
    for st in &s.method {
        println!(
            "stage {}: {} with the faults on {} of the sessions{}",
            st.stage,
            st.duration.0,
            st.sessions.0,
            relays_line(x, st.relays.as_ref())
        );
    }
    println!(
        "faults: {}",
        x.plan
            .faults
            .iter()
            .map(|f| format!("{} ({})", f.id, f.effect.kind()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("gates: {}", x.gates_text());
    println!(
        "rollbacks: {} command(s) after the faults are removed",
        s.rollbacks.len()
    );
    println!("dry run: nothing was sent to the target");
}

/// Which relays a stage's faults go to, for `--dry-run`: the seeded choice the run makes
/// (`fleet_choice::chosen`, over the admin addresses as the run reads them), or, for a
/// DNS fleet, the share of whatever the name resolves to when the stage starts.
fn relays_line(x: &Loaded, share: Option<&super::spec::Share>) -> String {
    use super::fleet_spec::{redact, FleetSpec};
    let Some(fleet) = &x.spec.target.fleet else {
        return String::new();
    };
    let fraction = share.and_then(|s| s.fraction()).unwrap_or(1.0);
    let said = share.map_or("100%", |s| s.0.trim());
    match fleet {
        FleetSpec::List(list) => {
            let admins: Vec<&str> = list.iter().map(|r| r.admin.trim_end_matches('/')).collect();
            let picked = super::fleet_choice::chosen(x.plan.seed, fraction, &admins);
            let names: Vec<String> = picked.iter().map(|a| redact(a)).collect();
            format!(
                ", on {said} of the relays: {} of {} ({}, chosen by seed {})",
                picked.len(),
                admins.len(),
                names.join(", "),
                x.plan.seed
            )
        }
        FleetSpec::Dns(d) => format!(
            ", on {said} of the relays `{}` resolves to when the stage starts (chosen by seed {})",
            d.dns, x.plan.seed
        ),
    }
}

pub(super) fn finish(mut j: Journal, status: Status, a: &RunArgs) -> anyhow::Result<Outcome> {
    j.status = status;
    j.ended_unix_ms = unix_ms();
    if let Some(otlp) = &a.otlp {
        super::otel::export(otlp, &j);
    }
    let text = serde_json::to_string_pretty(&j)?;
    // The store keeps runs; a file is written only when asked for (--journal).
    if let Some(path) = &a.journal {
        std::fs::write(path, &text)
            .map_err(|e| anyhow::anyhow!("cannot write the journal {}: {e}", path.display()))?;
    } else if a.keep.no_store && !j.dry_run {
        eprintln!("brownout run: warning: --no-store without --journal: the journal is kept nowhere (it is printed with --json)");
    }
    if a.json && !a.quiet {
        println!("{text}");
    } else if !a.quiet {
        super::summary::print(&j, a.journal.as_deref());
    }
    let journal = serde_json::to_value(&j)?;
    a.keep.after_run(&journal, j.dry_run, a.json || a.quiet);
    Ok(Outcome {
        code: status.exit_code(),
        journal,
    })
}
