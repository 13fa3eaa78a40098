//! `recommend`: which part of the tool-call plane deserves chaos next, from the evidence in
//! the store —
//!
//! - the tools with the weakest effective availability (probe samples: answered and right
//!   over all, per tool);
//! - experiments whose time to recover drifts up over passing runs (`journal trend`'s flag);
//! - experiments only ever green at a low blast radius: three greens in a row do not prove
//!   resilience — widen the radius or change the fault;
//! - fault kinds no stored run has tried.
//!
//! Tool and experiment names come from stored runs (an agent or a target wrote them): the
//! `why` sentences quote them escaped and cut, never spliced in bare.

use super::read::Out;
use super::Ctx;
use crate::target::untrusted::{quote, text, NAME_CAP, TEXT_CAP};
use brownout_core::faults::KINDS;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Probe samples a tool needs before its ETA is judged.
const MIN_SAMPLES: i64 = 5;
/// Greens in a row that, at a low radius, call for a wider one.
const GREENS: usize = 3;

pub fn recommend(ctx: &Ctx, args: &Value) -> Out {
    let s = brownout_store::store::open(ctx.cfg.store.as_deref()).map_err(|e| e.to_string())?;
    let limit = args["limit"].as_u64().unwrap_or(10).clamp(1, 50) as usize;
    use brownout_store::store::Backend;
    let rows = |sql: &str, args: &[brownout_store::store::val::Val]| {
        s.select(sql, args).map_err(|e| e.to_string())
    };
    let runs: i64 = rows("SELECT count(*) FROM runs WHERE dry_run = 0", &[])?
        .first()
        .and_then(|r| r.first())
        .and_then(|v| v.int())
        .unwrap_or(0);
    let mut recs: Vec<(f64, Value)> = Vec::new();

    // 1. The weakest ETA per tool.
    let etas: Vec<(String, i64, i64)> = rows(
        "SELECT tool, sum(ok), count(*) FROM probe_samples GROUP BY tool HAVING count(*) >= ?1",
        &[MIN_SAMPLES.into()],
    )?
    .iter()
    .filter_map(|r| {
        Some((
            r.first()?.text()?.to_string(),
            r.get(1)?.int()?,
            r.get(2)?.int()?,
        ))
    })
    .collect();
    for (tool, ok, n) in etas {
        let eta = ok as f64 / n as f64;
        if eta < 0.999 {
            recs.push((
                2.0 - eta,
                json!({"kind": "weakest_eta", "subject": text(&tool, NAME_CAP),
                    "why": format!("probes of the tool {} were answered correctly {:.1} % of the time ({ok}/{n} samples): test what the agent does when it fails", quote(&tool, 80), eta * 100.0),
                    "evidence": {"eta": eta, "samples": n}}),
            ));
        }
    }

    // 2 and 3: per experiment, drift and greens at a low radius.
    let names = super::read::experiments(&s)?;
    let top = ctx
        .cfg
        .policy
        .ladder
        .iter()
        .filter_map(brownout_experiment::experiment::spec::Share::fraction)
        .fold(0.0, f64::max);
    for name in &names {
        if let Ok(t) = brownout_store::store::trend::trend(&s, name, 20, Default::default()) {
            let t = serde_json::to_value(&t).unwrap_or_default();
            for d in t["drifts"].as_array().into_iter().flatten() {
                recs.push((
                    1.5,
                    json!({"kind": "drift", "subject": text(name, TEXT_CAP),
                        "why": format!("{} drifts up over the passing runs of {}: recovery is getting slower; run it again and look at what changed", quote(d["metric"].as_str().unwrap_or("a metric"), 40), quote(name, 120)),
                        "evidence": d}),
                ));
            }
        }
        let hist: Vec<(String, Option<f64>)> = rows(
            "SELECT r.status, (SELECT max(share) FROM stages g WHERE g.run_id = r.run_id AND g.completed = 1)
             FROM runs r WHERE r.experiment = ?1 AND r.dry_run = 0 ORDER BY r.started_unix_ms DESC LIMIT 20",
            &[name.as_str().into()],
        )?
        .iter()
        .map(|r| {
            let at = |k: usize| r.get(k).cloned().unwrap_or(brownout_store::store::val::Val::Null);
            (at(0).string(), at(1).real())
        })
        .collect();
        let greens = hist.iter().take_while(|(s, _)| s == "completed").count();
        let widest = hist.iter().filter_map(|(_, w)| *w).fold(0.0, f64::max);
        let ever_red = hist.iter().any(|(s, _)| s == "aborted" || s == "deviated");
        if greens >= GREENS && !ever_red && brownout_core::approx::lt(widest, top) {
            recs.push((
                1.2,
                json!({"kind": "green_at_low_radius", "subject": text(name, TEXT_CAP),
                    "why": format!("{} has been green {greens} times in a row, never wider than {:.0} % of sessions: three greens in a row do not prove resilience — widen the radius or change the fault", quote(name, 120), widest * 100.0),
                    "evidence": {"greens_in_a_row": greens, "widest_share": widest}}),
            ));
        }
    }

    // 4. Fault kinds never tried; 5. runs whose faults changed results the agent then acted
    // on, or with no gate that could see it.
    let mut tried: BTreeSet<String> = BTreeSet::new();
    let mut silent: Vec<(f64, Value)> = Vec::new();
    use brownout_store::store::Store;
    s.each_journal(&mut |_, v| {
        for f in v["plan"]["faults"].as_array().into_iter().flatten() {
            if let Some(k) = f["kind"].as_str().or(f["type"].as_str()) {
                tried.insert(k.to_string());
            }
        }
        silent.extend(silent_finding(v));
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    // The worst acted-on share first, one per experiment.
    silent.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut seen = BTreeSet::new();
    for (score, v) in silent {
        if seen.insert(v["subject"].to_string()) {
            recs.push((score, v));
        }
    }
    let mut never: BTreeMap<&str, &str> = BTreeMap::new();
    for k in KINDS.iter().filter(|k| !tried.contains(k.name)) {
        never.insert(k.name, k.summary);
    }
    for (k, summary) in &never {
        recs.push((
            0.5,
            json!({"kind": "never_tried", "subject": k,
                "why": format!("no stored run has tried `{k}` ({summary})"),
                "evidence": {"tried": tried.iter().collect::<Vec<_>>()}}),
        ));
    }
    recs.sort_by(|a, b| b.0.total_cmp(&a.0));
    let list: Vec<Value> = recs.into_iter().take(limit).map(|(_, v)| v).collect();
    Ok(json!({"recommendations": list, "runs_considered": runs}))
}

/// A stored run whose faults changed results (docs/silent.md): acted on (failed silently)
/// above 0, or with no gate on `silent_rate`/`safe_rate`/`propagated` to see it.
fn silent_finding(j: &Value) -> Option<(f64, Value)> {
    let s = &j["silent"];
    let altered = s["altered"].as_u64().filter(|n| *n > 0)?;
    let rate = s["silent_rate"].as_f64().unwrap_or(0.0);
    let watched = j["gates"].as_array().into_iter().flatten().any(|g| {
        let text = g["gate"].as_str().unwrap_or_default();
        ["silent_rate", "safe_rate", "propagated"]
            .iter()
            .any(|sli| text.starts_with(sli))
    });
    if rate == 0.0 && watched {
        return None;
    }
    let title = quote(
        j["experiment"]["title"].as_str().unwrap_or("untitled"),
        NAME_CAP,
    );
    let why = if watched {
        format!(
            "in run {} of {title}, the agent acted on {:.0} % of the {altered} results the faults changed: it fails silently — make it cross-check (re-read, a second source) before it acts",
            quote(j["run_id"].as_str().unwrap_or_default(), NAME_CAP),
            rate * 100.0
        )
    } else {
        format!(
            "{title} changed {altered} results but no gate watched what the agent did with them ({:.0} % acted on): add `silent_rate < 1% over 30s`",
            rate * 100.0
        )
    };
    Some((
        0.8 + rate,
        json!({"kind": "silent_failures", "subject": text(j["experiment"]["title"].as_str().unwrap_or_default(), TEXT_CAP),
            "why": why, "evidence": {"silent": s, "gate_on_it": watched}}),
    ))
}
