//! What a gate measures and how it compares: the SLIs ([`Sli`]), the unit each carries
//! ([`Kind`]) and the comparators ([`Cmp`]).

use std::fmt;

/// The SLI names a gate accepts (percentiles other than these are written `pNN`).
pub const SLI_NAMES: [&str; 21] = [
    "error_rate",
    "availability",
    "correctness",
    "eta",
    "tcsr",
    "timeouts",
    "amplification",
    "mean",
    "max",
    "p50",
    "p90",
    "p95",
    "p99",
    "p999",
    "task_success",
    "blast_radius",
    "silent_rate",
    "safe_rate",
    "propagated",
    "target_rss",
    "target_cpu",
];

/// What a gate measures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sli {
    /// Calls not `ok` (an error, `isError`, malformed, dropped, unanswered, timed out) / calls.
    ErrorRate,
    /// Calls answered (a result or a JSON-RPC error, in time) / calls.
    Availability,
    /// Correct answers / answers.
    Correctness,
    /// Effective tool availability: availability × correctness.
    Eta,
    /// Tool-call success rate: correct answers / calls.
    Tcsr,
    /// Calls that timed out or went unanswered / calls.
    Timeouts,
    /// Attempts / logical calls.
    Amplification,
    /// Mean latency, milliseconds.
    Mean,
    /// Largest latency, milliseconds.
    Max,
    /// A latency percentile, in parts per million (`p99` = 990 000).
    Percentile(u32),
    /// Tasks that succeeded / tasks.
    TaskSuccess,
    /// Tasks that failed / tasks.
    BlastRadius,
    /// Results a fault changed that the agent then acted on (a later request carried a value
    /// the fault introduced) / results a fault changed: failed silently (docs/silent.md).
    SilentRate,
    /// Results a fault changed that the agent noticed (re-fetched, cancelled) / results a
    /// fault changed: failed safely.
    SafeRate,
    /// How many times an agent acted on a value a fault introduced (a count).
    Propagated,
    /// The target's resident memory, bytes: the largest reading in the window (a stdio
    /// target's process tree, or a remote target's Prometheus metric).
    TargetRss,
    /// The target's CPU use, as a share of one core: the largest reading in the window.
    TargetCpu,
}

/// The unit an SLI's values carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A fraction in [0, 1], written `1%` or `0.01`.
    Ratio,
    /// Milliseconds, written `800ms`, `1.5s`, `1m`.
    Latency,
    /// A plain factor, written `1.2` or `1.2x`.
    Factor,
    /// Bytes, written `512MB`, `1.5GiB`, `800kB` (k, M, G: 1000s; Ki, Mi, Gi: 1024s).
    Bytes,
}

impl Sli {
    pub fn kind(self) -> Kind {
        match self {
            Sli::Mean | Sli::Max | Sli::Percentile(_) => Kind::Latency,
            Sli::Amplification | Sli::Propagated => Kind::Factor,
            Sli::TargetRss => Kind::Bytes,
            _ => Kind::Ratio,
        }
    }

    /// Measured over tasks rather than calls.
    pub fn is_task(self) -> bool {
        matches!(self, Sli::TaskSuccess | Sli::BlastRadius)
    }

    /// Measured over results a fault changed (what the agent did with them): fed by
    /// [`super::GateWatch::observe_taint`], not by calls.
    pub fn is_taint(self) -> bool {
        matches!(self, Sli::SilentRate | Sli::SafeRate | Sli::Propagated)
    }

    /// A reading of the target's health, fed by
    /// [`super::GateWatch::observe_reading`], not by calls: its value is the largest
    /// reading in the window.
    pub fn is_reading(self) -> bool {
        matches!(self, Sli::TargetRss | Sli::TargetCpu)
    }

    /// What its windows count, as a gate writes it (`over 100 calls`).
    pub fn noun(self) -> &'static str {
        if self.is_reading() {
            "readings"
        } else if self.is_task() {
            "tasks"
        } else if self.is_taint() {
            "results"
        } else {
            "calls"
        }
    }

    /// Needs the window's latency histogram.
    pub fn needs_histogram(self) -> bool {
        matches!(self, Sli::Percentile(_))
    }

    pub(crate) fn from_word(w: &str) -> Option<Result<Sli, String>> {
        Some(Ok(match w {
            "error_rate" => Sli::ErrorRate,
            "availability" => Sli::Availability,
            "correctness" => Sli::Correctness,
            "eta" => Sli::Eta,
            "tcsr" => Sli::Tcsr,
            "timeouts" => Sli::Timeouts,
            "amplification" => Sli::Amplification,
            "mean" => Sli::Mean,
            "max" => Sli::Max,
            "task_success" => Sli::TaskSuccess,
            "blast_radius" => Sli::BlastRadius,
            "silent_rate" => Sli::SilentRate,
            "safe_rate" => Sli::SafeRate,
            "propagated" => Sli::Propagated,
            "target_rss" => Sli::TargetRss,
            "target_cpu" => Sli::TargetCpu,
            _ => return percentile(w),
        }))
    }
}

/// `p50` → 500 000 ppm; `p999` → 999 000; `p99.95` → 999 500; `p100` → 1 000 000.
fn percentile(w: &str) -> Option<Result<Sli, String>> {
    let digits = w.strip_prefix('p')?;
    if digits.is_empty() || !digits.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let (int, frac) = match digits.split_once('.') {
        Some((i, f)) => (i.to_string(), f.to_string()),
        None if digits.len() > 2 && digits != "100" => {
            if !digits.starts_with("99") {
                return Some(Err(format!(
                    "`{w}` is not a percentile: write p50, p99, p999 (99.9th) or p99.95"
                )));
            }
            ("99".to_string(), digits[2..].to_string())
        }
        None => (digits.to_string(), String::new()),
    };
    if !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if frac.len() > 4 {
        return Some(Err(format!("`{w}`: a percentile takes at most 4 decimals")));
    }
    let int: u32 = int.parse().ok()?;
    let frac_ppm: u32 = format!("{frac:0<4}").parse().ok()?;
    let ppm = int.checked_mul(10_000)?.checked_add(frac_ppm)?;
    if ppm == 0 || ppm > 1_000_000 {
        return Some(Err(format!(
            "`{w}` is not a percentile between p0 and p100"
        )));
    }
    Some(Ok(Sli::Percentile(ppm)))
}

impl fmt::Display for Sli {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Sli::ErrorRate => "error_rate",
            Sli::Availability => "availability",
            Sli::Correctness => "correctness",
            Sli::Eta => "eta",
            Sli::Tcsr => "tcsr",
            Sli::Timeouts => "timeouts",
            Sli::Amplification => "amplification",
            Sli::Mean => "mean",
            Sli::Max => "max",
            Sli::TaskSuccess => "task_success",
            Sli::BlastRadius => "blast_radius",
            Sli::SilentRate => "silent_rate",
            Sli::SafeRate => "safe_rate",
            Sli::Propagated => "propagated",
            Sli::TargetRss => "target_rss",
            Sli::TargetCpu => "target_cpu",
            Sli::Percentile(ppm) => {
                let (int, frac) = (ppm / 10_000, ppm % 10_000);
                if frac == 0 {
                    return write!(f, "p{int}");
                }
                let frac = format!("{frac:04}");
                let frac = frac.trim_end_matches('0');
                return if int == 99 {
                    write!(f, "p99{frac}")
                } else {
                    write!(f, "p{int}.{frac}")
                };
            }
        };
        f.write_str(name)
    }
}

/// A comparator: the gate holds while `value CMP limit` is true.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
}

impl Cmp {
    pub fn holds(self, value: f64, limit: f64) -> bool {
        match self {
            Cmp::Lt => value < limit,
            Cmp::Le => value <= limit,
            Cmp::Gt => value > limit,
            Cmp::Ge => value >= limit,
            Cmp::Eq => crate::approx::eq(value, limit),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
            Cmp::Eq => "==",
        }
    }
}
