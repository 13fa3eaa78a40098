//! The run summary: calls, outcomes, injections per fault, error rate, latency percentiles.
//!
//! Built from the same [`Event`]s the event log holds, with a bounded histogram
//! (`hdrhistogram`, 3 significant digits) so a long run does not grow memory.

use crate::event::{Event, Outcome};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
pub struct Summary {
    calls: u64,
    outcomes: BTreeMap<&'static str, u64>,
    injections: BTreeMap<String, (String, u64)>,
    mutated: u64,
    latency_us: Histogram<u64>,
}

impl Default for Summary {
    fn default() -> Self {
        Summary {
            calls: 0,
            outcomes: BTreeMap::new(),
            injections: BTreeMap::new(),
            mutated: 0,
            // 1 µs .. 1 hour, 3 significant digits: a fixed few hundred KiB at most.
            latency_us: Histogram::new_with_bounds(1, 3_600_000_000, 3)
                .unwrap_or_else(|_| Histogram::new(3).unwrap_or_else(|_| unreachable!())),
        }
    }
}

/// A printable, serializable snapshot of a [`Summary`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub calls: u64,
    pub outcomes: BTreeMap<String, u64>,
    /// Calls that did not end `ok`, over all calls.
    pub error_rate: f64,
    /// Calls whose payload a fault changed (possible silent failures).
    pub mutated: u64,
    /// fault id → (kind, injections).
    pub injections: BTreeMap<String, Injections>,
    pub latency_ms: Percentiles,
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
        }
    }

    pub fn record_fault(&mut self, fault: &str, kind: &str) {
        match self.injections.get_mut(fault) {
            Some(e) => e.1 += 1,
            None => {
                self.injections
                    .insert(fault.to_string(), (kind.to_string(), 1));
            }
        }
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
        }
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "calls: {}   error rate: {:.2}%   mutated payloads: {}",
            self.calls,
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
