//! The run summary: calls, outcomes, injections per fault, error rate, latency percentiles,
//! and per method and per tool figures.
//!
//! Built from the same [`Event`]s the event log holds, with a bounded histogram
//! (`hdrhistogram`, 3 significant digits) so a long run does not grow memory. The per-method
//! and per-tool lines come from the live SLIs ([`Report::with_slis`]); the list of faults
//! from the running plan ([`Report::with_faults`]), so a fault that never fired is listed.

use crate::event::{Event, Outcome};
use crate::sli::Slis;
use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
pub struct Summary {
    calls: u64,
    outcomes: BTreeMap<&'static str, u64>,
    injections: BTreeMap<String, (String, u64)>,
    mutated: u64,
    latency_us: Histogram<u64>,
    silent: Silent,
    /// The same, per tool whose result was changed (at most [`crate::sli::MAX_SERIES`]
    /// tools; beyond, under `_other`).
    silent_tools: BTreeMap<String, Silent>,
}

/// What became of the results faults changed (docs/silent.md): each is `propagated` (the
/// agent acted on a value the fault introduced), `noticed` (it re-fetched or cancelled),
/// `unobserved` (neither within the window) or still pending.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Silent {
    /// Results a fault changed that reached the client.
    pub altered: u64,
    pub propagated: u64,
    pub noticed: u64,
    pub unobserved: u64,
    /// Still within their window.
    pub pending: u64,
    /// Propagated / altered: the share that failed silently.
    pub silent_rate: f64,
    /// Noticed / altered: the share that failed safely.
    pub safe_rate: f64,
}

impl Silent {
    /// The counts since `earlier` (a stage's share of a run), rates recomputed.
    pub fn since(&self, earlier: &Silent) -> Silent {
        Silent {
            altered: self.altered.saturating_sub(earlier.altered),
            propagated: self.propagated.saturating_sub(earlier.propagated),
            noticed: self.noticed.saturating_sub(earlier.noticed),
            unobserved: self.unobserved.saturating_sub(earlier.unobserved),
            ..Silent::default()
        }
        .rates()
    }

    /// With `pending` and the rates computed from the counts.
    pub fn rates(mut self) -> Silent {
        let r = |n: u64| {
            if self.altered == 0 {
                0.0
            } else {
                n as f64 / self.altered as f64
            }
        };
        self.pending = self
            .altered
            .saturating_sub(self.propagated + self.noticed + self.unobserved);
        self.silent_rate = r(self.propagated);
        self.safe_rate = r(self.noticed);
        self
    }

    /// The headline, in the words of the people who asked for it.
    pub fn headline(&self) -> String {
        format!(
            "of the {} results a fault changed, {:.1}% failed safely (noticed), {:.1}% silently (acted on); {} unobserved, {} pending",
            self.altered,
            self.safe_rate * 100.0,
            self.silent_rate * 100.0,
            self.unobserved,
            self.pending
        )
    }
}

impl Default for Summary {
    fn default() -> Self {
        Summary {
            calls: 0,
            outcomes: BTreeMap::new(),
            injections: BTreeMap::new(),
            mutated: 0,
            silent: Silent::default(),
            silent_tools: BTreeMap::new(),
            // 1 µs .. 1 hour, 3 significant digits: a fixed few hundred KiB at most.
            latency_us: Histogram::new_with_bounds(1, 3_600_000_000, 3)
                .unwrap_or_else(|_| Histogram::new(3).unwrap_or_else(|_| unreachable!())),
        }
    }
}

/// A printable, serializable snapshot of a [`Summary`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Every request answered or given up on: tool calls and protocol requests
    /// (`initialize`, `tools/list`, …) alike.
    pub calls: u64,
    /// Of `calls`, the `tools/call` requests.
    pub tool_calls: u64,
    /// Requests per method (`initialize`, `tools/list`, `tools/call`, …).
    pub methods: BTreeMap<String, u64>,
    /// `tools/call` figures per tool.
    pub tools: BTreeMap<String, ToolLine>,
    pub outcomes: BTreeMap<String, u64>,
    /// Calls that did not end `ok`, over all calls.
    pub error_rate: f64,
    /// Calls whose payload a fault changed (possible silent failures).
    pub mutated: u64,
    /// fault id → (kind, injections).
    pub injections: BTreeMap<String, Injections>,
    pub latency_ms: Percentiles,
    /// Results faults changed and what the agent did with them.
    pub silent: Silent,
    /// The same per tool whose result was changed (tools with none are left out).
    pub silent_tools: BTreeMap<String, Silent>,
}

/// The calls of one tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolLine {
    pub calls: u64,
    pub outcomes: BTreeMap<String, u64>,
    /// Calls that did not end `ok`, over the tool's calls.
    pub error_rate: f64,
    /// Mean latency of the answered calls, in milliseconds; `None` when no call was
    /// answered (all malformed, dropped or unanswered): there is no latency to average.
    pub mean_latency_ms: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Injections {
    pub kind: String,
    pub count: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}

impl Summary {
    pub fn record(&mut self, e: &Event) {
        match e {
            Event::Fault(f) => self.record_fault(&f.fault, f.kind),
            Event::Call(c) => {
                self.record_call(c.outcome, (c.latency_ms * 1000.0).round() as u64, c.mutated)
            }
            Event::Taint(t) => self.record_taint(&t.from_tool, t.class, t.after_notice),
        }
    }

    pub fn record_fault(&mut self, fault: &str, kind: &str) {
        if let Some(e) = self.injections.get_mut(fault) {
            if e.0 == kind {
                e.1 += 1;
                return;
            }
            // A reload changed the fault's kind: what the old kind did stays apart, under
            // `id (was kind)`, and the id counts afresh under its new kind.
            let old = std::mem::replace(e, (kind.to_string(), 1));
            let key = format!("{fault} (was {})", old.0);
            self.injections.entry(key).or_insert((old.0, 0)).1 += old.1;
            return;
        }
        self.injections
            .insert(fault.to_string(), (kind.to_string(), 1));
    }

    /// A taint event's class for a result of `tool` (`after_notice`: a noticed result acted
    /// on after all).
    pub fn record_taint(&mut self, tool: &str, class: &str, after_notice: bool) {
        Self::count_taint(&mut self.silent, class, after_notice);
        let known = self.silent_tools.contains_key(tool);
        let tool = if known || self.silent_tools.len() < crate::sli::MAX_SERIES {
            tool
        } else {
            "_other"
        };
        let per_tool = self.silent_tools.entry(tool.to_string()).or_default();
        Self::count_taint(per_tool, class, after_notice);
    }

    /// The silent-failure counts so far, per tool whose result a fault changed.
    pub fn silent_tools(&self) -> BTreeMap<String, Silent> {
        self.silent_tools
            .iter()
            .map(|(t, s)| (t.clone(), s.rates()))
            .collect()
    }

    fn count_taint(s: &mut Silent, class: &str, after_notice: bool) {
        match class {
            "altered" => s.altered += 1,
            "propagated" => {
                s.propagated += 1;
                if after_notice {
                    s.noticed = s.noticed.saturating_sub(1);
                }
            }
            "noticed" => s.noticed += 1,
            "unobserved" => s.unobserved += 1,
            _ => {}
        }
    }

    /// The silent-failure counts so far.
    pub fn silent(&self) -> Silent {
        self.silent.rates()
    }

    pub fn record_call(&mut self, outcome: Outcome, latency_us: u64, mutated: bool) {
        self.calls += 1;
        *self.outcomes.entry(outcome.as_str()).or_default() += 1;
        if mutated {
            self.mutated += 1;
        }
        if !matches!(outcome, Outcome::Dropped | Outcome::Unanswered) {
            let _ = self
                .latency_us
                .record(latency_us.clamp(1, self.latency_us.high()));
        }
    }

    pub fn report(&self) -> Report {
        let q = |p: f64| {
            if self.latency_us.is_empty() {
                0.0
            } else {
                self.latency_us.value_at_quantile(p) as f64 / 1000.0
            }
        };
        let ok = self.outcomes.get("ok").copied().unwrap_or(0);
        Report {
            calls: self.calls,
            tool_calls: 0,
            methods: BTreeMap::new(),
            tools: BTreeMap::new(),
            outcomes: self
                .outcomes
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
            error_rate: if self.calls == 0 {
                0.0
            } else {
                (self.calls - ok) as f64 / self.calls as f64
            },
            mutated: self.mutated,
            injections: self
                .injections
                .iter()
                .map(|(k, (kind, n))| {
                    (
                        k.clone(),
                        Injections {
                            kind: kind.clone(),
                            count: *n,
                        },
                    )
                })
                .collect(),
            latency_ms: Percentiles {
                p50: q(0.5),
                p95: q(0.95),
                p99: q(0.99),
                max: if self.latency_us.is_empty() {
                    0.0
                } else {
                    self.latency_us.max() as f64 / 1000.0
                },
            },
            silent: self.silent.rates(),
            silent_tools: self.silent_tools(),
        }
    }
}

impl Report {
    /// Add the per-method and per-tool figures of the live SLIs.
    pub fn with_slis(mut self, slis: &Slis) -> Report {
        for (method, tool, s) in slis.series() {
            *self.methods.entry(method.to_string()).or_default() += s.calls;
            if method != "tools/call" {
                continue;
            }
            self.tool_calls += s.calls;
            let ok = s.outcomes.get("ok").copied().unwrap_or(0);
            self.tools.insert(
                tool.to_string(),
                ToolLine {
                    calls: s.calls,
                    outcomes: s
                        .outcomes
                        .iter()
                        .map(|(k, v)| (k.to_string(), *v))
                        .collect(),
                    error_rate: if s.calls == 0 {
                        0.0
                    } else {
                        (s.calls - ok) as f64 / s.calls as f64
                    },
                    mean_latency_ms: (s.responded > 0)
                        .then(|| s.latency_sum_ms / s.responded as f64),
                },
            );
        }
        self
    }

    /// List every fault of the running plan, `(id, kind)`, with the kind it has now; a
    /// fault that never fired is listed with 0 injections.
    pub fn with_faults<'a>(
        mut self,
        faults: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Report {
        for (id, kind) in faults {
            let e = self.injections.entry(id.to_string()).or_insert(Injections {
                kind: kind.to_string(),
                count: 0,
            });
            if e.kind != kind {
                // The running plan changed the fault's kind since it last fired: the
                // injections were the old kind's.
                let old = std::mem::replace(
                    e,
                    Injections {
                        kind: kind.to_string(),
                        count: 0,
                    },
                );
                if old.count > 0 {
                    let key = format!("{id} (was {})", old.kind);
                    self.injections.entry(key).or_insert(old);
                }
            }
        }
        self
    }

    fn calls_line(&self) -> String {
        let other: Vec<String> = self
            .methods
            .iter()
            .filter(|(m, _)| m.as_str() != "tools/call")
            .map(|(m, n)| format!("{m} {n}"))
            .collect();
        if self.methods.is_empty() {
            return format!("calls: {}", self.calls);
        }
        let protocol = self.calls.saturating_sub(self.tool_calls);
        if other.is_empty() {
            format!("calls: {} ({} tool calls)", self.calls, self.tool_calls)
        } else {
            format!(
                "calls: {} ({} tool calls + {protocol} protocol requests: {})",
                self.calls,
                self.tool_calls,
                other.join(", ")
            )
        }
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{}   error rate: {:.2}%   mutated payloads: {}",
            self.calls_line(),
            self.error_rate * 100.0,
            self.mutated
        )?;
        let outcomes: Vec<String> = self
            .outcomes
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        writeln!(
            f,
            "outcomes: {}",
            if outcomes.is_empty() {
                "-".into()
            } else {
                outcomes.join(", ")
            }
        )?;
        writeln!(
            f,
            "latency ms: p50 {:.2}  p95 {:.2}  p99 {:.2}  max {:.2}",
            self.latency_ms.p50, self.latency_ms.p95, self.latency_ms.p99, self.latency_ms.max
        )?;
        if !self.tools.is_empty() {
            writeln!(f, "tools:")?;
            for (name, t) in &self.tools {
                let mean = t
                    .mean_latency_ms
                    .map_or_else(|| "— (none answered)".to_string(), |m| format!("{m:.2} ms"));
                writeln!(
                    f,
                    "  {name:<28} calls {:<6} not ok {:>6.2}%   mean {mean}",
                    t.calls,
                    t.error_rate * 100.0,
                )?;
            }
        }
        if self.silent.altered > 0 {
            writeln!(f, "silent failures: {}", self.silent.headline())?;
        }
        if self.injections.is_empty() {
            writeln!(f, "injections: none")?;
        } else {
            writeln!(f, "injections:")?;
            for (id, i) in &self.injections {
                writeln!(f, "  {id:<28} {:<16} {}", i.kind, i.count)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_separates_protocol_requests_and_lists_every_fault() {
        let mut sum = Summary::default();
        let mut slis = Slis::default();
        for (method, tool, outcome) in [
            ("initialize", None, Outcome::Ok),
            ("tools/list", None, Outcome::Ok),
            ("tools/call", Some("echo"), Outcome::Ok),
            ("tools/call", Some("echo"), Outcome::Error),
            ("tools/call", Some("fetch_logs"), Outcome::Ok),
        ] {
            sum.record_call(outcome, 2000, false);
            slis.record(method, tool, outcome, 2.0, true, false);
        }
        sum.record_fault("boom", "error");
        sum.record_fault("shift", "latency");
        // A reload made `shift` an error; it fired again.
        sum.record_fault("shift", "error");
        let r = sum.report().with_slis(&slis).with_faults([
            ("boom", "error"),
            ("idle", "latency"),
            ("shift", "error"),
        ]);
        assert_eq!((r.calls, r.tool_calls), (5, 3));
        assert_eq!(r.methods.get("initialize"), Some(&1));
        assert_eq!(r.tools["echo"].calls, 2);
        assert!((r.tools["echo"].error_rate - 0.5).abs() < 1e-9);
        assert_eq!(
            r.injections["idle"].count, 0,
            "a fault that never fired is listed"
        );
        assert_eq!(r.injections["shift"].kind, "error");
        assert_eq!(r.injections["shift"].count, 1, "the new kind counts afresh");
        assert_eq!(r.injections["shift (was latency)"].count, 1);
        let text = r.to_string();
        assert!(
            text.contains(
                "calls: 5 (3 tool calls + 2 protocol requests: initialize 1, tools/list 1)"
            ),
            "{text}"
        );
        assert!(text.contains("tools:\n  echo"), "{text}");
        assert!(text.contains("idle") && text.contains(" 0\n"), "{text}");
    }

    #[test]
    fn a_reload_that_changes_a_kind_shows_the_new_kind() {
        let mut sum = Summary::default();
        sum.record_fault("f", "latency");
        let r = sum.report().with_faults([("f", "timeout")]);
        assert_eq!(r.injections["f"].kind, "timeout");
        assert_eq!(r.injections["f"].count, 0, "the timeout never fired");
        assert_eq!(r.injections["f (was latency)"].kind, "latency");
        assert_eq!(r.injections["f (was latency)"].count, 1);
    }

    /// A tool whose calls were never answered has no mean latency, not a mean of 0 ms.
    #[test]
    fn a_tool_never_answered_has_no_mean_latency() {
        let mut sum = Summary::default();
        let mut slis = Slis::default();
        for (tool, outcome) in [("garbled", Outcome::Malformed), ("fine", Outcome::Ok)] {
            sum.record_call(outcome, 3000, false);
            slis.record("tools/call", Some(tool), outcome, 3.0, true, false);
        }
        let r = sum.report().with_slis(&slis);
        assert_eq!(r.tools["garbled"].mean_latency_ms, None);
        assert_eq!(r.tools["fine"].mean_latency_ms, Some(3.0));
        let text = r.to_string();
        assert!(text.contains("mean — (none answered)"), "{text}");
        assert!(text.contains("mean 3.00 ms"), "{text}");
    }
}
