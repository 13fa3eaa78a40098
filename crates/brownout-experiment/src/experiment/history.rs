//! The blast-radius ladder against history (`ladder_from_history` in the policy): an
//! experiment may go at most one rung above the widest stage it has passed (run its whole
//! duration with every gate holding) in the runs the store keeps — runs of the same title
//! *against the same target*: rungs climbed against a fixture say nothing of another server. What the operator's policy
//! says holds for `brownout run` and for runs started any other way.

use super::policy::{Policy, Refusal};
use super::spec::Share;
use brownout_store::store::{ListFilter, Store};
use serde_json::Value;
use std::path::Path;

/// What names a target for the ladder: its command line (`command: […]`), its MCP URL
/// (`url: …`, with or without an admin API), or its servers (`servers: {NAME: …}`, each by
/// name and command or URL); `None` for a target that names none.
pub fn target_identity(target: &Value) -> Option<String> {
    if let Some(Value::Object(servers)) = target.get("servers") {
        // Keys in name order (a BTreeMap when written): the same servers, the same identity.
        let each: Vec<String> = servers
            .iter()
            .filter_map(|(name, s)| Some(format!("{name}={}", target_identity(s)?)))
            .collect();
        return Some(format!("servers {}", each.join(" ")));
    }
    match (target.get("command"), target.get("url")) {
        (Some(c), _) if !c.is_null() => Some(format!("command {c}")),
        (_, Some(Value::String(u))) => Some(format!("url {}", u.trim_end_matches('/'))),
        _ => None,
    }
}

/// Run blocking work (SQLite reads) so it does not hold an async worker: moved off it
/// with `block_in_place` on a multi-threaded runtime (`brownout mcp`), run as is elsewhere.
pub fn off_async<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// The widest share a completed stage of `title` reached against `target` (the experiment's
/// `target` as JSON) in the store, and the run it was in. Reads the store off the async
/// workers ([`off_async`]).
pub fn widest_passed(
    store: Option<&Path>,
    title: &str,
    target: &Value,
) -> Result<Option<(f64, String)>, String> {
    off_async(|| widest_passed_now(store, title, target))
}

fn widest_passed_now(
    store: Option<&Path>,
    title: &str,
    target: &Value,
) -> Result<Option<(f64, String)>, String> {
    let Some(want) = target_identity(target) else {
        return Ok(None);
    };
    let s = brownout_store::store::open(store)
        .map_err(|e| format!("the store could not be opened: {e}"))?;
    let filter = ListFilter {
        experiment: Some(title.to_string()),
        limit: Some(1000),
        ..ListFilter::default()
    };
    let mut best: Option<(f64, String)> = None;
    for run in s.list(&filter).map_err(|e| e.to_string())? {
        let Ok((_, j)) = s.journal(&run.run_id) else {
            continue;
        };
        if target_identity(&j["experiment"]["target"]).as_ref() != Some(&want) {
            continue;
        }
        for st in j["stages"].as_array().into_iter().flatten() {
            if st["completed"] != Value::Bool(true) {
                continue;
            }
            if let Some(share) = st["share"].as_f64() {
                if best.as_ref().is_none_or(|b| share > b.0) {
                    best = Some((share, run.run_id.clone()));
                }
            }
        }
    }
    Ok(best)
}

/// The policy's `ladder_from_history`, for a run that keeps its journal with `keep`: the
/// store must be readable (a guardrail that cannot check refuses).
pub fn enforce(
    x: &super::load::Loaded,
    p: &Policy,
    keep: &brownout_store::keep::KeepArgs,
) -> Result<(), Refusal> {
    if !p.ladder_from_history {
        return Ok(());
    }
    let refuse = |detail: String| Refusal {
        rule: "ladder_from_history".into(),
        detail,
    };
    if keep.no_store {
        return Err(refuse(
            "the policy enforces the ladder against the store's history, and --no-store leaves none".into(),
        ));
    }
    let target = serde_json::to_value(&x.spec.target).unwrap_or_default();
    let passed = widest_passed(keep.store.as_deref(), &x.spec.title, &target).map_err(refuse)?;
    let shares: Vec<f64> = x
        .spec
        .method
        .iter()
        .filter_map(|s| s.sessions.fraction())
        .collect();
    check(&shares, passed.as_ref(), p)
}

/// [`enforce`], except that a `ladder_from_history` refusal a person approved skipping
/// (`approved_by`) lets the run go, recorded for the journal. Any other refusal stands.
pub fn enforce_or_skip(
    x: &super::load::Loaded,
    p: &Policy,
    keep: &brownout_store::keep::KeepArgs,
    approved_by: Option<&str>,
) -> Result<Option<super::journal::LadderSkip>, Refusal> {
    match (enforce(x, p, keep), approved_by) {
        (Ok(()), _) => Ok(None),
        (Err(r), Some(who)) if r.rule == "ladder_from_history" && !who.trim().is_empty() => {
            Ok(Some(super::journal::LadderSkip {
                approved_by: who.to_string(),
                refused: r.detail,
            }))
        }
        (Err(r), _) => Err(r),
    }
}

/// Whether `shares` stay within one rung above `passed` (the bottom rung without history).
pub fn check(shares: &[f64], passed: Option<&(f64, String)>, p: &Policy) -> Result<(), Refusal> {
    let ladder: Vec<f64> = p.ladder.iter().filter_map(Share::fraction).collect();
    let pct = |s: f64| format!("{}%", (s * 1000.0).round() / 10.0);
    let allowed_idx = match passed {
        None => 0,
        Some((w, _)) => {
            let at = ladder
                .iter()
                .rposition(|r| brownout_core::approx::le(*r, *w))
                .map_or(0, |i| i + 1);
            at.min(ladder.len().saturating_sub(1))
        }
    };
    let Some(&allowed) = ladder.get(allowed_idx) else {
        return Ok(());
    };
    let widest = shares.iter().copied().fold(0.0, f64::max);
    if brownout_core::approx::le(widest, allowed) {
        return Ok(());
    }
    let why = match passed {
        None => format!(
            "no stage of this experiment has passed in the store yet: its first runs stay at the bottom rung, {} (this one reaches {})",
            pct(allowed),
            pct(widest)
        ),
        Some((w, run)) => format!(
            "the widest stage this experiment has passed is {} (run {run}): the next may reach {}, not {}",
            pct(*w),
            pct(allowed),
            pct(widest)
        ),
    };
    Err(Refusal {
        rule: "ladder_from_history".into(),
        detail: why,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_is_named_by_its_command_or_its_url() {
        let fixture = serde_json::json!({"command": ["brownout", "fixture"]});
        let other = serde_json::json!({"command": ["python", "server.py"]});
        let url = serde_json::json!({"url": "http://127.0.0.1:9/mcp/"});
        let remote =
            serde_json::json!({"url": "http://127.0.0.1:9/mcp", "admin": "http://127.0.0.1:8"});
        assert_ne!(target_identity(&fixture), target_identity(&other));
        let two = |ops: &str| serde_json::json!({"servers": {"incidents": {"url": "http://a/mcp"}, "ops": {"command": [ops]}}});
        assert_eq!(target_identity(&two("x")), target_identity(&two("x")));
        assert_ne!(target_identity(&two("x")), target_identity(&two("y")));
        assert_ne!(target_identity(&two("x")), None);
        assert_eq!(target_identity(&url), target_identity(&remote));
        assert_eq!(target_identity(&serde_json::json!({})), None);
    }

    #[test]
    fn one_rung_above_the_widest_passed_and_the_bottom_without_history() {
        let p = Policy::default(); // 10 % → 25 % → 50 % → 100 %
        assert!(check(&[0.1], None, &p).is_ok());
        let r = check(&[0.1, 0.25], None, &p).expect_err("no history: bottom rung only");
        assert_eq!(r.rule, "ladder_from_history");
        assert!(
            r.detail.contains("10%") && r.detail.contains("25%"),
            "{}",
            r.detail
        );
        let passed = (0.1, "run-a".to_string());
        assert!(check(&[0.1, 0.25], Some(&passed), &p).is_ok());
        let r = check(&[0.1, 0.25, 0.5], Some(&passed), &p).expect_err("a skipped rung");
        assert!(
            r.detail.contains("run-a") && r.detail.contains("50%"),
            "{}",
            r.detail
        );
        let top = (1.0, "run-b".to_string());
        assert!(check(&[1.0], Some(&top), &p).is_ok());
    }
}
