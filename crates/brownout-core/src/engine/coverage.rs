//! Fault coverage: after the server's `tools/list`, which faults can never hit a call.
//!
//! A fault whose `tools` globs match none of the tools the server advertises (a typo such as
//! `fetch_log` for `fetch_logs`) passes `plan check` and would silently do nothing. When a
//! `tools/list` answer passes, the engine compares every enabled fault's globs with the
//! advertised names and queues one [`CoverageWarning`] per such fault (once per fault and
//! plan: a reloaded plan is checked again at the next `tools/list`). The driver takes them
//! with [`Engine::take_coverage_warnings`], prints them and logs them as `coverage` events.
//! `registry` faults are left out: their tools may be ones the server does not have.

use super::Engine;
use crate::time::Time;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeSet;

/// Most advertised names kept for a check, and most warnings queued at once.
const MAX_NAMES: usize = 10_000;
const MAX_QUEUED: usize = 1_000;

/// What the engine remembers between checks.
#[derive(Debug, Default)]
pub struct Coverage {
    /// The plan generation the warned set belongs to (a new plan starts afresh).
    generation: u64,
    warned: BTreeSet<String>,
    queued: Vec<CoverageWarning>,
}

/// A fault that matches no advertised tool: the `coverage` record of the event log.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CoverageWarning {
    /// Always `"coverage"`.
    #[serde(rename = "type")]
    pub kind_of_record: &'static str,
    pub t_ms: f64,
    pub session: String,
    pub fault: String,
    pub kind: &'static str,
    /// The fault's `tools` patterns.
    pub tools: Vec<String>,
    /// How many tools the server advertised.
    pub advertised: usize,
    /// An advertised name close to a pattern, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub did_you_mean: Option<String>,
}

impl std::fmt::Display for CoverageWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "fault `{}` ({}) matches none of the {} tools the server advertises (tools: [{}])",
            self.fault,
            self.kind,
            self.advertised,
            self.tools.join(", ")
        )?;
        match &self.did_you_mean {
            Some(name) => write!(f, "; did you mean `{name}`?"),
            None => write!(f, "; it will never fire"),
        }
    }
}

impl Engine {
    /// Check the plan's faults against a `tools/list` answer the server sent.
    pub(super) fn check_coverage(&mut self, session: &str, response: &[u8], now: Time) {
        let Some(names) = advertised(response) else {
            return;
        };
        let cov = &mut self.coverage;
        if cov.generation != self.generation {
            cov.generation = self.generation;
            cov.warned.clear();
        }
        for f in &self.plan.faults {
            let Some(globs) = &f.select.tools else {
                continue;
            };
            if !f.enabled
                || f.effect.selects_unlisted_tools()
                || cov.warned.contains(&f.id)
                || names.iter().any(|n| globs.is_match(n))
            {
                continue;
            }
            cov.warned.insert(f.id.clone());
            if cov.queued.len() >= MAX_QUEUED {
                continue;
            }
            cov.queued.push(CoverageWarning {
                kind_of_record: "coverage",
                t_ms: now.as_millis_f64(),
                session: session.to_string(),
                fault: f.id.clone(),
                kind: f.effect.kind(),
                tools: globs.patterns.clone(),
                advertised: names.len(),
                did_you_mean: closest(&globs.patterns, &names),
            });
        }
    }

    /// Coverage warnings since the last call (see the module documentation).
    pub fn take_coverage_warnings(&mut self) -> Vec<CoverageWarning> {
        std::mem::take(&mut self.coverage.queued)
    }
}

/// The tool names of a `tools/list` answer; `None` when it is not one.
fn advertised(response: &[u8]) -> Option<Vec<String>> {
    let v: Value = serde_json::from_slice(response).ok()?;
    let tools = v.pointer("/result/tools")?.as_array()?;
    Some(
        tools
            .iter()
            .filter_map(|t| t.get("name").and_then(Value::as_str))
            .take(MAX_NAMES)
            .map(String::from)
            .collect(),
    )
}

/// The advertised name nearest to one of the patterns, if it is near (a typo).
fn closest(patterns: &[String], names: &[String]) -> Option<String> {
    patterns
        .iter()
        .flat_map(|p| names.iter().map(move |n| (crate::plan::distance(p, n), n)))
        .filter(|(d, n)| *d <= 2.max(n.chars().count() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EngineConfig, Plan, Side};

    const LIST: &[u8] = br#"{"jsonrpc":"2.0","id":"l","result":{"tools":[{"name":"echo"},{"name":"fetch_logs"},{"name":"get_incident"}]}}"#;

    fn engine(plan: &str) -> Engine {
        let plan = Plan::from_str_named(plan, "plan.yaml").expect("plan");
        Engine::new(plan, EngineConfig::default())
    }

    fn list(e: &mut Engine, id: &str) {
        let req = format!(r#"{{"jsonrpc":"2.0","id":"{id}","method":"tools/list"}}"#);
        e.on_message(Side::Client, "s", req.as_bytes(), Time::ZERO);
        let resp = String::from_utf8_lossy(LIST).replace(r#""id":"l""#, &format!(r#""id":"{id}""#));
        e.on_message(Side::Server, "s", resp.as_bytes(), Time::from_millis(5));
    }

    #[test]
    fn a_fault_that_matches_no_advertised_tool_is_reported_once() {
        let mut e = engine(
            "faults:\n  - {id: typo, kind: latency, tools: [fetch_log], added_ms: 5}\n  - {id: glob, kind: error, tools: ['fetch_*']}\n  - {id: all, kind: error}\n  - {id: fake, kind: registry, action: phantom, tools: [nope]}\n  - {id: far, kind: drop, tools: [zzzzzzzzzz]}\n",
        );
        assert!(
            e.take_coverage_warnings().is_empty(),
            "nothing before tools/list"
        );
        list(&mut e, "1");
        let w = e.take_coverage_warnings();
        let ids: Vec<&str> = w.iter().map(|w| w.fault.as_str()).collect();
        assert_eq!(ids, ["typo", "far"], "{w:?}");
        assert_eq!(w[0].did_you_mean.as_deref(), Some("fetch_logs"));
        assert_eq!(w[0].advertised, 3);
        assert!(
            w[0].to_string().contains("did you mean `fetch_logs`?"),
            "{}",
            w[0]
        );
        assert_eq!(w[1].did_you_mean, None);
        let json = serde_json::to_value(&w[0]).expect("json");
        assert_eq!(json["type"], "coverage");
        assert_eq!(json["tools"][0], "fetch_log");
        list(&mut e, "2");
        assert!(e.take_coverage_warnings().is_empty(), "once per fault");
    }

    #[test]
    fn a_new_plan_is_checked_again() {
        let mut e =
            engine("faults:\n  - {id: typo, kind: latency, tools: [fetch_log], added_ms: 5}\n");
        list(&mut e, "1");
        assert_eq!(e.take_coverage_warnings().len(), 1);
        let plan = Plan::from_str_named(
            "faults:\n  - {id: typo, kind: error, tools: [fetch_log]}\n",
            "plan.yaml",
        )
        .expect("plan");
        e.set_plan(plan);
        list(&mut e, "2");
        let w = e.take_coverage_warnings();
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].kind, "error");
    }

    #[test]
    fn edit_distance_counts_edits() {
        use crate::plan::distance;
        assert_eq!(distance("fetch_log", "fetch_logs"), 1);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
        let long = "x".repeat(10_000);
        assert_eq!(
            distance(&long, ""),
            128,
            "bounded: the first 128 characters"
        );
    }
}
