//! The gate parser: tokens in, a [`Gate`] out, or a [`GateError`] with the column and a
//! suggestion.

use super::grammar::{Gate, GateError, Scope, Window, Written, MAX_COUNT_WINDOW, MAX_SPAN_MS};
use super::lex::{Spanned, Tok};
use super::measure::{Cmp, Kind, Sli, SLI_NAMES};
use crate::plan::suggest;
use crate::select::Globs;

/// Parse a gate (see [`Gate::parse`]).
pub(crate) fn parse(text: &str) -> Result<Gate, GateError> {
    Parser {
        toks: super::lex::lex(text)?,
        pos: 0,
        end_col: text.chars().count() + 1,
    }
    .gate()
}

impl Gate {
    /// Parse a gate; the error carries the column and, where it can, a suggestion. (Here,
    /// beside the parser: the gate's shape in grammar.rs does not depend on how it is read.)
    pub fn parse(text: &str) -> Result<Gate, GateError> {
        parse(text)
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
            if sli.is_reading() {
                return Err(GateError::new(
                    self.col(),
                    format!("`{sli}` reads the whole target, which has no method or tool to scope"),
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
                Some(f) => to_ms(v, &num, f),
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
            (Kind::Bytes, u) => match byte_factor(u) {
                Some(f) => v * f,
                None => {
                    return Err(GateError::new(
                        t.col,
                        format!("`{sli}` is memory: give the limit a unit (B, kB, MB, GB, KiB, MiB, GiB), not `{text}`"),
                    )
                    .suggest(Some(&format!("{num}MB"))))
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
        let ms = to_ms(v, &num, f);
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
        let noun = sli.noun();
        let over = self.peek().cloned();
        match over.as_ref().map(|t| &t.tok) {
            Some(Tok::Word(w)) if w == "over" => self.pos += 1,
            // A reading of the target's health: its latest, unless a window is given.
            _ if sli.is_reading() => {
                return Ok((Window::Time { ms: READING_WINDOW_MS }, "1s".into()))
            }
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
        let noun = sli.noun();
        match self.peek().cloned() {
            Some(Spanned { tok: Tok::Word(w), .. }) if w == noun => {
                self.pos += 1;
                Ok(())
            }
            Some(Spanned { tok: Tok::Word(w), col }) if w == "calls" || w == "tasks" || w == "results" => Err(GateError::new(
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

/// `v` (written `num`) of a unit worth `f` milliseconds, in milliseconds. Seconds are read
/// from the decimal text shifted by three places, so `8.024s` is exactly 8024 ms rather than
/// `8.024 × 1000` = 8023.999…; other units multiply.
fn to_ms(v: f64, num: &str, f: f64) -> f64 {
    if f == 1000.0 {
        if let Ok(ms) = format!("{num}e3").parse::<f64>() {
            return ms;
        }
    }
    v * f
}

/// The window of a target-health gate that names none (`1s`): about one reading.
pub(crate) const READING_WINDOW_MS: f64 = 1000.0;

/// Bytes per unit of memory.
fn byte_factor(unit: &str) -> Option<f64> {
    Some(match unit {
        "B" | "b" => 1.0,
        "kB" | "KB" | "k" | "K" => 1e3,
        "MB" | "M" => 1e6,
        "GB" | "G" => 1e9,
        "KiB" | "Ki" => 1024.0,
        "MiB" | "Mi" => 1024.0 * 1024.0,
        "GiB" | "Gi" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    })
}

/// Milliseconds per unit of a span.
fn span_factor(unit: &str) -> Option<f64> {
    crate::duration::millis_per(unit)
}
