//! The gate grammar: `SLI[{scope}] CMP VALUE over WINDOW [min N calls] [for DURATION]`,
//! parsed into a [`Gate`] whose `Display` is the canonical text (`docs/gates.md`).

use super::lex::{lex, Spanned, Tok};
use crate::plan::suggest;
use crate::select::Globs;
use std::fmt;

/// The SLI names a gate accepts (percentiles other than these are written `pNN`).
pub const SLI_NAMES: [&str; 16] = [
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
];

/// Minimum samples when a gate names none: below it a gate cannot trip. 20 samples make a
/// 5 % error rate one failed call, not a coin toss on the first two calls of a run.
pub const DEFAULT_MIN_SAMPLES: u32 = 20;

/// The largest count window (`over N calls`): it keeps N calls.
pub const MAX_COUNT_WINDOW: u32 = 100_000;

/// The longest time window or `for` span: a day.
pub const MAX_SPAN_MS: f64 = 86_400_000.0;

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
}

impl Sli {
    pub fn kind(self) -> Kind {
        match self {
            Sli::Mean | Sli::Max | Sli::Percentile(_) => Kind::Latency,
            Sli::Amplification => Kind::Factor,
            _ => Kind::Ratio,
        }
    }

    /// Measured over tasks rather than calls.
    pub fn is_task(self) -> bool {
        matches!(self, Sli::TaskSuccess | Sli::BlastRadius)
    }

    /// Needs the window's latency histogram.
    pub fn needs_histogram(self) -> bool {
        matches!(self, Sli::Percentile(_))
    }

    fn from_word(w: &str) -> Option<Result<Sli, String>> {
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
            Cmp::Eq => (value - limit).abs() <= 1e-9 * limit.abs().max(1.0),
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
    method_glob: Option<Globs>,
    tool_glob: Option<Globs>,
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
struct Written {
    value: f64,
    text: String,
}

/// A parsed SLO gate: `Gate::parse("error_rate < 1% over 10s")`.
#[derive(Debug, Clone)]
pub struct Gate {
    pub sli: Sli,
    pub scope: Scope,
    pub cmp: Cmp,
    limit: Written,
    pub window: Window,
    window_text: String,
    min: Option<u32>,
    sustain: Option<Written>,
}

impl PartialEq for Gate {
    fn eq(&self, other: &Gate) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Gate {
    /// Parse a gate; the error carries the column and, where it can, a suggestion.
    pub fn parse(text: &str) -> Result<Gate, GateError> {
        Parser {
            toks: lex(text)?,
            pos: 0,
            end_col: text.chars().count() + 1,
        }
        .gate()
    }

    /// The limit in the SLI's unit: a fraction for ratios, milliseconds for latencies.
    pub fn limit(&self) -> f64 {
        self.limit.value
    }

    /// The samples the window must hold before the gate may trip.
    pub fn min_samples(&self) -> u32 {
        match (self.min, self.window) {
            (Some(m), _) => m,
            (None, Window::Count { n }) => DEFAULT_MIN_SAMPLES.min(n),
            (None, Window::Time { .. }) => DEFAULT_MIN_SAMPLES,
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
        let noun = if self.sli.is_task() { "tasks" } else { "calls" };
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

    fn suggest(mut self, s: Option<&str>) -> GateError {
        self.suggestion = s.map(str::to_string);
        self
    }
}

struct Parser {
    toks: Vec<Spanned>,
    pos: usize,
    end_col: usize,
}

const EXAMPLE: &str = "for example `error_rate < 1% over 10s`";

impl Parser {
    fn peek(&self) -> Option<&Spanned> {
        self.toks.get(self.pos)
    }

    fn col(&self) -> usize {
        self.peek().map_or(self.end_col, |t| t.col)
    }

    fn next(&mut self, what: &str) -> Result<Spanned, GateError> {
        match self.toks.get(self.pos) {
            Some(t) => {
                self.pos += 1;
                Ok(t.clone())
            }
            None => Err(GateError::new(
                self.end_col,
                format!("the gate ends where {what} should follow ({EXAMPLE})"),
            )),
        }
    }

    fn gate(mut self) -> Result<Gate, GateError> {
        let first = self.next("an SLI")?;
        let sli = match &first.tok {
            Tok::Word(w) => match Sli::from_word(w) {
                Some(Ok(s)) => s,
                Some(Err(msg)) => return Err(GateError::new(first.col, msg)),
                None => {
                    return Err(GateError::new(
                        first.col,
                        format!("unknown SLI `{w}`: one of {}, or pNN", SLI_NAMES.join(", ")),
                    )
                    .suggest(suggest(w, SLI_NAMES)))
                }
            },
            t => {
                return Err(GateError::new(
                    first.col,
                    format!(
                        "a gate starts with an SLI, not {} ({EXAMPLE})",
                        t.describe()
                    ),
                ))
            }
        };
        let scope = if self.peek().is_some_and(|t| t.tok == Tok::Sym("{")) {
            if sli.is_task() {
                return Err(GateError::new(
                    self.col(),
                    format!("`{sli}` counts tasks, which have no method or tool to scope"),
                ));
            }
            self.scope()?
        } else {
            Scope::default()
        };
        let cmp = self.cmp()?;
        let limit = self.limit(sli)?;
        let (window, window_text) = self.window(sli)?;
        let mut gate = Gate {
            sli,
            scope,
            cmp,
            limit,
            window,
            window_text,
            min: None,
            sustain: None,
        };
        while let Some(t) = self.peek().cloned() {
            self.pos += 1;
            match &t.tok {
                Tok::Word(w) if w == "min" && gate.min.is_none() => {
                    gate.min = Some(self.min(sli, window)?);
                }
                Tok::Word(w) if w == "for" && gate.sustain.is_none() => {
                    gate.sustain = Some(self.span("a duration after `for`")?);
                }
                Tok::Word(w) if w == "min" || w == "for" => {
                    return Err(GateError::new(t.col, format!("`{w}` is given twice")));
                }
                Tok::Word(w) => {
                    return Err(GateError::new(
                        t.col,
                        format!(
                        "unexpected `{w}`: after the window come `min N calls` and `for DURATION`"
                    ),
                    )
                    .suggest(suggest(w, ["min", "for"])))
                }
                other => {
                    return Err(GateError::new(
                        t.col,
                        format!(
                            "unexpected {}: after the window come `min N calls` and `for DURATION`",
                            other.describe()
                        ),
                    ))
                }
            }
        }
        Ok(gate)
    }

    fn scope(&mut self) -> Result<Scope, GateError> {
        self.pos += 1; // `{`
        let mut scope = Scope::default();
        loop {
            let key = self.next("`tool=\"NAME\"` or `method=\"NAME\"`")?;
            let name = match &key.tok {
                Tok::Word(w) if w == "tool" || w == "method" => w.clone(),
                Tok::Word(w) => {
                    return Err(GateError::new(
                        key.col,
                        format!("unknown scope `{w}`: `tool` or `method`"),
                    )
                    .suggest(suggest(w, ["tool", "method"])))
                }
                Tok::Sym("}") if scope.is_empty() => {
                    return Err(GateError::new(
                        key.col,
                        "an empty scope: drop `{}` or name a `tool` or `method`",
                    ));
                }
                t => {
                    return Err(GateError::new(
                        key.col,
                        format!("expected `tool` or `method`, found {}", t.describe()),
                    ))
                }
            };
            let eq = self.next("`=`")?;
            if eq.tok != Tok::Sym("=") && eq.tok != Tok::Sym("==") {
                return Err(GateError::new(
                    eq.col,
                    format!("expected `=`, found {}", eq.tok.describe()),
                ));
            }
            let val = self.next("a quoted name")?;
            let Tok::Str(v) = &val.tok else {
                return Err(GateError::new(
                    val.col,
                    format!(
                        "expected a quoted name such as \"get_incident\", found {}",
                        val.tok.describe()
                    ),
                ));
            };
            let glob = Globs::new(std::slice::from_ref(v))
                .map_err(|(_, msg)| GateError::new(val.col, msg))?;
            let slot = if name == "tool" {
                (&mut scope.tool, &mut scope.tool_glob)
            } else {
                (&mut scope.method, &mut scope.method_glob)
            };
            if slot.0.is_some() {
                return Err(GateError::new(key.col, format!("`{name}` is given twice")));
            }
            *slot.0 = Some(v.clone());
            *slot.1 = Some(glob);
            let sep = self.next("`,` or `}`")?;
            match sep.tok {
                Tok::Sym(",") => continue,
                Tok::Sym("}") => return Ok(scope),
                t => {
                    return Err(GateError::new(
                        sep.col,
                        format!("expected `,` or `}}`, found {}", t.describe()),
                    ))
                }
            }
        }
    }

    fn cmp(&mut self) -> Result<Cmp, GateError> {
        let t = self.next("a comparator (`<`, `<=`, `>`, `>=`, `==`)")?;
        Ok(match t.tok {
            Tok::Sym("<") => Cmp::Lt,
            Tok::Sym("<=") => Cmp::Le,
            Tok::Sym(">") => Cmp::Gt,
            Tok::Sym(">=") => Cmp::Ge,
            Tok::Sym("==") => Cmp::Eq,
            Tok::Sym("=") => {
                return Err(GateError::new(t.col, "`=` is not a comparator").suggest(Some("==")))
            }
            other => {
                return Err(GateError::new(
                    t.col,
                    format!(
                        "expected a comparator (`<`, `<=`, `>`, `>=`, `==`), found {}",
                        other.describe()
                    ),
                ))
            }
        })
    }

    fn number(&mut self, what: &str) -> Result<(Spanned, f64, String, String), GateError> {
        let t = self.next(what)?;
        let Tok::Qty { num, unit } = &t.tok else {
            return Err(GateError::new(
                t.col,
                format!("expected {what}, found {}", t.tok.describe()),
            ));
        };
        let v: f64 = num
            .parse()
            .map_err(|_| GateError::new(t.col, format!("`{num}` is not a number")))?;
        let (num, unit) = (num.clone(), unit.clone());
        Ok((t, v, num, unit))
    }

    fn limit(&mut self, sli: Sli) -> Result<Written, GateError> {
        let (t, v, num, unit) = self.number("a limit")?;
        let text = format!("{num}{unit}");
        let value = match (sli.kind(), unit.as_str()) {
            (Kind::Ratio, "%") if v <= 100.0 => v / 100.0,
            (Kind::Ratio, "") if v <= 1.0 => v,
            (Kind::Ratio, "%") => {
                return Err(GateError::new(
                    t.col,
                    format!("`{text}` is more than 100 %"),
                ))
            }
            (Kind::Ratio, "") => {
                return Err(GateError::new(
                    t.col,
                    format!(
                        "`{sli}` is a fraction between 0 and 1: write a percentage or a fraction"
                    ),
                )
                .suggest(Some(&format!("{num}%"))))
            }
            (Kind::Ratio, _) => {
                return Err(GateError::new(
                    t.col,
                    format!("`{sli}` is a ratio: write `1%` or `0.01`, not `{text}`"),
                ))
            }
            (Kind::Latency, u) => match span_factor(u) {
                Some(f) => v * f,
                None if u.is_empty() => {
                    return Err(GateError::new(
                        t.col,
                        format!("`{sli}` is a latency: give the limit a unit (ms, s, m)"),
                    )
                    .suggest(Some(&format!("{num}ms"))))
                }
                None => {
                    return Err(GateError::new(
                        t.col,
                        format!("`{unit}` is not a unit of time: ms, s, m or h"),
                    )
                    .suggest(suggest(u, ["ms", "s", "m", "h"])))
                }
            },
            (Kind::Factor, "" | "x") => v,
            (Kind::Factor, _) => {
                return Err(GateError::new(
                    t.col,
                    format!(
                        "`{sli}` is attempts per call: a plain number such as `1.5`, not `{text}`"
                    ),
                ))
            }
        };
        Ok(Written { value, text })
    }

    fn span(&mut self, what: &str) -> Result<Written, GateError> {
        let (t, v, num, unit) = self.number(what)?;
        let Some(f) = span_factor(&unit) else {
            return Err(GateError::new(
                t.col,
                format!("expected {what} such as `10s`, found `{num}{unit}`"),
            )
            .suggest(if unit.is_empty() {
                None
            } else {
                suggest(&unit, ["ms", "s", "m", "h"])
            }));
        };
        let ms = v * f;
        if ms <= 0.0 || ms > MAX_SPAN_MS {
            return Err(GateError::new(
                t.col,
                format!("`{num}{unit}` is not between 1ms and a day"),
            ));
        }
        Ok(Written {
            value: ms,
            text: format!("{num}{unit}"),
        })
    }

    fn window(&mut self, sli: Sli) -> Result<(Window, String), GateError> {
        let noun = if sli.is_task() { "tasks" } else { "calls" };
        let over = self.peek().cloned();
        match over.as_ref().map(|t| &t.tok) {
            Some(Tok::Word(w)) if w == "over" => self.pos += 1,
            Some(Tok::Word(w)) => {
                return Err(GateError::new(
                    self.col(),
                    format!("unexpected `{w}`: a gate needs a window, `over 10s` or `over 200 {noun}`"),
                )
                .suggest(suggest(w, ["over"])))
            }
            _ => {
                return Err(GateError::new(
                    self.col(),
                    format!("a gate needs a window: add `over 10s` (time) or `over 200 {noun}` (count); gates are never cumulative"),
                ))
            }
        }
        let (t, v, num, unit) = self.number("a window such as `10s` or `200 calls`")?;
        if !unit.is_empty() {
            self.pos -= 1;
            let w = self.span("a window")?;
            return Ok((Window::Time { ms: w.value }, w.text));
        }
        let n = self.count(&t, v, &num)?;
        if n > MAX_COUNT_WINDOW {
            return Err(GateError::new(
                t.col,
                format!("a count window keeps at most {MAX_COUNT_WINDOW} {noun}"),
            ));
        }
        self.noun(sli, true)?;
        Ok((Window::Count { n }, format!("{n} {noun}")))
    }

    fn count(&self, t: &Spanned, v: f64, num: &str) -> Result<u32, GateError> {
        if v.fract() != 0.0 || v < 1.0 || v > f64::from(u32::MAX) {
            return Err(GateError::new(
                t.col,
                format!("`{num}` is not a whole number of calls"),
            ));
        }
        Ok(v as u32)
    }

    /// `calls` or `tasks` after a count; required after a window count, optional after `min`.
    fn noun(&mut self, sli: Sli, required: bool) -> Result<(), GateError> {
        let noun = if sli.is_task() { "tasks" } else { "calls" };
        match self.peek().cloned() {
            Some(Spanned { tok: Tok::Word(w), .. }) if w == noun => {
                self.pos += 1;
                Ok(())
            }
            Some(Spanned { tok: Tok::Word(w), col }) if w == "calls" || w == "tasks" => Err(GateError::new(
                col,
                format!("`{sli}` counts {noun}, not {w}"),
            )
            .suggest(Some(noun))),
            Some(Spanned { tok: Tok::Word(w), col }) if required && w != "min" && w != "for" => {
                Err(GateError::new(col, format!("expected `{noun}` after the count, found `{w}`"))
                    .suggest(Some(noun)))
            }
            _ if required => Err(GateError::new(
                self.col(),
                format!("a count window names what it counts: `over 200 {noun}`, or a span such as `over 10s`"),
            )),
            _ => Ok(()),
        }
    }

    fn min(&mut self, sli: Sli, window: Window) -> Result<u32, GateError> {
        let (t, v, num, unit) = self.number("a sample count after `min`")?;
        if !unit.is_empty() {
            return Err(GateError::new(
                t.col,
                format!("`min` takes a count such as `min 50 calls`, not `{num}{unit}`"),
            ));
        }
        let n = self.count(&t, v, &num)?;
        if let Window::Count { n: size } = window {
            if n > size {
                return Err(GateError::new(
                    t.col,
                    format!(
                        "`min {n}` is more than the window's {size}: the gate could never trip"
                    ),
                ));
            }
        }
        self.noun(sli, false)?;
        Ok(n)
    }
}

/// Milliseconds per unit of a span.
fn span_factor(unit: &str) -> Option<f64> {
    Some(match unit {
        "ms" => 1.0,
        "s" => 1000.0,
        "m" => 60_000.0,
        "h" => 3_600_000.0,
        _ => return None,
    })
}
