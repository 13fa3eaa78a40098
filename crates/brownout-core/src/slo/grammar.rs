//! The gate grammar: `SLI[{scope}] CMP VALUE over WINDOW [min N calls] [for DURATION]`,
//! parsed into a [`Gate`] whose `Display` is the canonical text (`docs/gates.md`).

use super::measure::{Cmp, Kind, Sli};
use crate::select::Globs;
use std::fmt;

/// Minimum samples when a gate names none: below it a gate cannot trip. 20 samples make a
/// 5 % error rate one failed call, not a coin toss on the first two calls of a run.
pub const DEFAULT_MIN_SAMPLES: u32 = 20;

/// The largest count window (`over N calls`): it keeps N calls.
pub const MAX_COUNT_WINDOW: u32 = 100_000;

/// The longest time window or `for` span: a day.
pub const MAX_SPAN_MS: f64 = 86_400_000.0;

/// The window a gate looks at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Window {
    /// The last `ms` milliseconds of run time (sliding, in 1 % slots: see `window.rs`).
    Time { ms: f64 },
    /// The last `n` calls (or tasks) in the gate's scope.
    Count { n: u32 },
}

/// Which calls a gate counts: methods and tools matching these globs (`None`: any).
#[derive(Debug, Clone, Default)]
pub struct Scope {
    pub method: Option<String>,
    pub tool: Option<String>,
    pub(crate) method_glob: Option<Globs>,
    pub(crate) tool_glob: Option<Globs>,
}

impl Scope {
    pub fn matches(&self, method: &str, tool: Option<&str>) -> bool {
        if let Some(g) = &self.method_glob {
            if !g.is_match(method) {
                return false;
            }
        }
        match (&self.tool_glob, tool) {
            (None, _) => true,
            (Some(g), Some(t)) => g.is_match(t),
            (Some(_), None) => false,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.method.is_none() && self.tool.is_none()
    }
}

/// A number as written and its value in the SLI's unit.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Written {
    pub(crate) value: f64,
    pub(crate) text: String,
}

/// A parsed SLO gate: `Gate::parse("error_rate < 1% over 10s")`.
#[derive(Debug, Clone)]
pub struct Gate {
    pub sli: Sli,
    pub scope: Scope,
    pub cmp: Cmp,
    pub(crate) limit: Written,
    pub window: Window,
    pub(crate) window_text: String,
    pub(crate) min: Option<u32>,
    pub(crate) sustain: Option<Written>,
}

impl PartialEq for Gate {
    fn eq(&self, other: &Gate) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Gate {
    /// The limit in the SLI's unit: a fraction for ratios, milliseconds for latencies.
    pub fn limit(&self) -> f64 {
        self.limit.value
    }

    /// The samples the window must hold before the gate may trip.
    pub fn min_samples(&self) -> u32 {
        match (self.min, self.window) {
            (Some(m), _) => m,
            // One reading of the target's health is a measurement, not a coin toss.
            (None, _) if self.sli.is_reading() => 1,
            (None, Window::Count { n }) => DEFAULT_MIN_SAMPLES.min(n),
            (None, Window::Time { .. }) => DEFAULT_MIN_SAMPLES,
        }
    }

    /// A value of this gate's SLI as people read it: `0.42%`, `812.5ms`, `1.25`; `—` for
    /// none. Four decimals at most.
    pub fn show(&self, v: Option<f64>) -> String {
        let r = |x: f64| (x * 10_000.0).round() / 10_000.0;
        match v {
            None => "—".into(),
            Some(v) => match self.sli.kind() {
                Kind::Ratio => format!("{}%", r(v * 100.0)),
                Kind::Latency => format!("{}ms", r(v)),
                Kind::Factor => format!("{}", r(v)),
                Kind::Bytes => format!("{}MB", r(v / 1e6)),
            },
        }
    }

    /// How long the condition must fail before the gate breaches (0: at once).
    pub fn sustain_ms(&self) -> f64 {
        self.sustain.as_ref().map_or(0.0, |s| s.value)
    }
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.sli)?;
        if !self.scope.is_empty() {
            let mut parts = Vec::new();
            if let Some(m) = &self.scope.method {
                parts.push(format!("method={}", quote(m)));
            }
            if let Some(t) = &self.scope.tool {
                parts.push(format!("tool={}", quote(t)));
            }
            write!(f, "{{{}}}", parts.join(", "))?;
        }
        write!(
            f,
            " {} {} over {}",
            self.cmp.as_str(),
            self.limit.text,
            self.window_text
        )?;
        let noun = self.sli.noun();
        if let Some(m) = self.min {
            write!(f, " min {m} {noun}")?;
        }
        if let Some(s) = &self.sustain {
            write!(f, " for {}", s.text)?;
        }
        Ok(())
    }
}

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// A gate that does not parse: where, what, and the likely fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("column {column}: {message}{}", .suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default())]
pub struct GateError {
    /// 1-based, in characters.
    pub column: usize,
    pub message: String,
    pub suggestion: Option<String>,
}

impl GateError {
    pub(crate) fn new(column: usize, message: impl Into<String>) -> GateError {
        GateError {
            column,
            message: message.into(),
            suggestion: None,
        }
    }

    pub(crate) fn suggest(mut self, s: Option<&str>) -> GateError {
        self.suggestion = s.map(str::to_string);
        self
    }
}
