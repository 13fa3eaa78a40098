//! Tolerances: the small language probes and steady-state checks use to say what a measured
//! value may be — `>= 99%`, `< 500ms`, `200..299`, `== "ok"`, `!= 0`, `~ /^deg/`, and a
//! JSON path in front of any of them, `$.status == "degraded"`.
//!
//! It shares the gate grammar's comparators ([`Cmp`]) and units (`%` is a fraction, `ms`,
//! `s`, `m`, `h` are milliseconds, a bare number is itself), so `< 500ms` means the same
//! in a gate and in a probe. The grammar is in `docs/probes.md`.

use super::measure::Cmp;
use regex::Regex;
use serde_json::Value;
use std::fmt;

/// A parsed tolerance: `Tolerance::parse("< 500ms")`.
#[derive(Debug, Clone)]
pub struct Tolerance {
    text: String,
    path: Option<JsonPath>,
    test: Test,
}

#[derive(Debug, Clone)]
enum Test {
    Compare(Op, Literal),
    /// Inclusive on both ends.
    Range(Quantity, Quantity),
    Regex(Regex),
    /// A bare JSON path: the value must exist (and not be `null`).
    Exists,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Cmp(Cmp),
    Ne,
}

#[derive(Debug, Clone, PartialEq)]
enum Literal {
    Number(Quantity),
    Str(String),
    Bool(bool),
    Null,
}

/// A number in the unit its text names: `1%` is 0.01, `1.5s` is 1500 (ms), `200` is 200.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quantity {
    pub value: f64,
    pub unit: Unit,
}

/// The unit a quantity was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A plain number (also `1.5x`).
    Plain,
    /// A percentage, held as a fraction.
    Ratio,
    /// A duration, held in milliseconds.
    Millis,
}

/// A tolerance that does not parse: the column (1-based, in characters) and what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("column {column}: {message}")]
pub struct ToleranceError {
    pub column: usize,
    pub message: String,
}

fn err(column: usize, message: impl Into<String>) -> ToleranceError {
    ToleranceError {
        column,
        message: message.into(),
    }
}

impl Tolerance {
    /// Parse a tolerance; errors name the column and the fix.
    pub fn parse(text: &str) -> Result<Tolerance, ToleranceError> {
        let mut s = Scanner::new(text);
        s.skip_ws();
        let path = if s.peek() == Some('$') {
            Some(s.path()?)
        } else {
            None
        };
        s.skip_ws();
        let test = if s.at_end() {
            match path {
                Some(_) => Test::Exists,
                None => return Err(err(1, "empty tolerance: write e.g. `< 500ms`, `>= 99%`, `200..299`, `~ /re/` or `$.status == \"ok\"`")),
            }
        } else {
            s.test()?
        };
        s.skip_ws();
        if !s.at_end() {
            return Err(err(
                s.col(),
                format!("unexpected `{}` after the tolerance", s.rest()),
            ));
        }
        Ok(Tolerance {
            text: text.trim().to_string(),
            path,
            test,
        })
    }

    /// Whether the tolerance starts with a JSON path (it then judges documents).
    pub fn has_path(&self) -> bool {
        self.path.is_some()
    }

    /// Does a measured number (in the tolerance's unit: a fraction for `%`, milliseconds
    /// for durations) pass? A tolerance on strings or with a path never passes a number.
    pub fn check_number(&self, x: f64) -> bool {
        if self.path.is_some() {
            return false;
        }
        self.test.number(x)
    }

    /// Does a JSON document pass? With a path, the value it selects is judged (a path that
    /// selects nothing fails, except under `!=`); without one, the document itself.
    pub fn check_json(&self, doc: &Value) -> bool {
        let v = match &self.path {
            Some(p) => p.select(doc),
            None => Some(doc),
        };
        match v {
            Some(v) => self.test.json(v),
            None => matches!(self.test, Test::Compare(Op::Ne, _)),
        }
    }

    /// Does a text (a command's output, a body that is not JSON) pass? Regexes search it,
    /// equality compares it whole (trimmed), numbers parse it first.
    pub fn check_text(&self, text: &str) -> bool {
        if self.path.is_some() {
            return serde_json::from_str::<Value>(text).is_ok_and(|doc| self.check_json(&doc));
        }
        match &self.test {
            Test::Regex(re) => re.is_match(text),
            Test::Compare(op, Literal::Str(s)) => {
                (text.trim() == s.as_str()) == (*op == Op::Cmp(Cmp::Eq))
            }
            _ => text
                .trim()
                .parse::<f64>()
                .is_ok_and(|x| self.test.number(x)),
        }
    }
}

impl Test {
    fn number(&self, x: f64) -> bool {
        match self {
            Test::Compare(Op::Cmp(c), Literal::Number(q)) => c.holds(x, q.value),
            Test::Compare(Op::Ne, Literal::Number(q)) => !Cmp::Eq.holds(x, q.value),
            Test::Compare(Op::Ne, _) => true,
            Test::Range(lo, hi) => x >= lo.value && x <= hi.value,
            Test::Regex(re) => re.is_match(&x.to_string()),
            Test::Compare(..) | Test::Exists => false,
        }
    }

    fn json(&self, v: &Value) -> bool {
        match (self, v) {
            (Test::Exists, v) => !v.is_null(),
            (Test::Regex(re), Value::String(s)) => re.is_match(s),
            (Test::Regex(re), v) => re.is_match(&v.to_string()),
            (Test::Compare(op, lit), v) => {
                let eq = match (lit, v) {
                    (Literal::Str(a), Value::String(b)) => a == b,
                    (Literal::Bool(a), Value::Bool(b)) => a == b,
                    (Literal::Null, Value::Null) => true,
                    (Literal::Number(_), Value::Number(n)) => {
                        return n.as_f64().is_some_and(|x| self.number(x))
                    }
                    _ => false,
                };
                match op {
                    Op::Cmp(Cmp::Eq) => eq,
                    Op::Ne => !eq,
                    Op::Cmp(_) => false,
                }
            }
            (Test::Range(..), Value::Number(n)) => n.as_f64().is_some_and(|x| self.number(x)),
            (Test::Range(..), _) => false,
        }
    }
}

impl fmt::Display for Tolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl PartialEq for Tolerance {
    fn eq(&self, other: &Tolerance) -> bool {
        self.text == other.text
    }
}

impl std::str::FromStr for Tolerance {
    type Err = ToleranceError;
    fn from_str(s: &str) -> Result<Tolerance, ToleranceError> {
        Tolerance::parse(s)
    }
}

impl serde::Serialize for Tolerance {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> serde::Deserialize<'de> for Tolerance {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Tolerance, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(d)?;
        Tolerance::parse(&text)
            .map_err(|e| serde::de::Error::custom(format!("tolerance `{text}`: {e}")))
    }
}

impl schemars::JsonSchema for Tolerance {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Tolerance".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "minLength": 1,
            "description": "A tolerance: CMP VALUE (`>= 99%`, `< 500ms`, `== 200`, `!= \"down\"`), a range `LO..HI` (inclusive), a regex `~ /RE/`, or a JSON path before any of them (`$.status == \"degraded\"`). See docs/probes.md.",
            "examples": [">= 99%", "< 500ms", "200..299", "~ /^ok/", "$.status == \"degraded\""],
        })
    }
}

/// A JSON path: `$`, then `.key`, `["key"]` or `[N]` steps.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath(Vec<Step>);

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

impl JsonPath {
    /// Parse a whole path (`$.content[0].text`).
    pub fn parse(text: &str) -> Result<JsonPath, ToleranceError> {
        let mut s = Scanner::new(text);
        let p = s.path()?;
        if !s.at_end() {
            return Err(err(
                s.col(),
                format!("unexpected `{}` in the path", s.rest()),
            ));
        }
        Ok(p)
    }

    /// The value the path selects, if any.
    pub fn select<'a>(&self, doc: &'a Value) -> Option<&'a Value> {
        self.0.iter().try_fold(doc, |v, step| match step {
            Step::Key(k) => v.get(k.as_str()),
            Step::Index(i) => v.get(*i),
        })
    }
}

struct Scanner {
    chars: Vec<char>,
    i: usize,
}

impl Scanner {
    fn new(text: &str) -> Scanner {
        Scanner {
            chars: text.chars().collect(),
            i: 0,
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.i).copied()
    }

    fn col(&self) -> usize {
        self.i + 1
    }

    fn at_end(&self) -> bool {
        self.i >= self.chars.len()
    }

    fn rest(&self) -> String {
        self.chars[self.i.min(self.chars.len())..].iter().collect()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.i += 1;
        }
    }

    fn eat(&mut self, s: &str) -> bool {
        let n = s.chars().count();
        if s.chars()
            .enumerate()
            .all(|(k, c)| self.chars.get(self.i + k) == Some(&c))
        {
            self.i += n;
            true
        } else {
            false
        }
    }

    fn path(&mut self) -> Result<JsonPath, ToleranceError> {
        if !self.eat("$") {
            return Err(err(self.col(), "a JSON path starts with `$`"));
        }
        let mut steps = Vec::new();
        loop {
            if self.eat(".") {
                let start = self.i;
                while self
                    .peek()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-')
                {
                    self.i += 1;
                }
                if start == self.i {
                    return Err(err(
                        self.col(),
                        "expected a key after `.` (write `[\"odd key\"]` for other keys)",
                    ));
                }
                steps.push(Step::Key(self.chars[start..self.i].iter().collect()));
            } else if self.eat("[") {
                let col = self.col();
                if self.peek() == Some('"') {
                    steps.push(Step::Key(self.string()?));
                } else {
                    let start = self.i;
                    while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                        self.i += 1;
                    }
                    let n: String = self.chars[start..self.i].iter().collect();
                    let n = n.parse::<usize>().map_err(|_| {
                        err(col, "expected an index (`[0]`) or a quoted key (`[\"k\"]`)")
                    })?;
                    steps.push(Step::Index(n));
                }
                if !self.eat("]") {
                    return Err(err(self.col(), "expected `]`"));
                }
            } else {
                return Ok(JsonPath(steps));
            }
        }
    }

    fn string(&mut self) -> Result<String, ToleranceError> {
        let col = self.col();
        self.i += 1;
        let mut out = String::new();
        loop {
            match self.peek() {
                None => return Err(err(col, "this string has no closing `\"`")),
                Some('"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some('\\') => {
                    match self.chars.get(self.i + 1) {
                        Some(c @ ('"' | '\\')) => out.push(*c),
                        _ => {
                            return Err(err(
                                self.col(),
                                "only `\\\"` and `\\\\` are escapes inside a string",
                            ))
                        }
                    }
                    self.i += 2;
                }
                Some(c) => {
                    out.push(c);
                    self.i += 1;
                }
            }
        }
    }

    fn test(&mut self) -> Result<Test, ToleranceError> {
        if self.eat("~") {
            self.skip_ws();
            return self.regex();
        }
        let op = if self.eat("<=") {
            Some(Op::Cmp(Cmp::Le))
        } else if self.eat(">=") {
            Some(Op::Cmp(Cmp::Ge))
        } else if self.eat("==") {
            Some(Op::Cmp(Cmp::Eq))
        } else if self.eat("!=") {
            Some(Op::Ne)
        } else if self.eat("<") {
            Some(Op::Cmp(Cmp::Lt))
        } else if self.eat(">") {
            Some(Op::Cmp(Cmp::Gt))
        } else if self.peek() == Some('=') {
            return Err(err(self.col(), "`=` is not a comparator: write `==`"));
        } else {
            None
        };
        self.skip_ws();
        let col = self.col();
        let lit = self.literal()?;
        match (op, lit) {
            (Some(op @ Op::Cmp(Cmp::Lt | Cmp::Le | Cmp::Gt | Cmp::Ge)), lit) => match lit {
                Literal::Number(_) => Ok(Test::Compare(op, lit)),
                _ => Err(err(col, format!("`{}` compares numbers", cmp_text(op)))),
            },
            (Some(op), lit) => Ok(Test::Compare(op, lit)),
            (None, Literal::Number(lo)) => {
                self.skip_ws();
                if self.eat("..") {
                    self.eat("=");
                    self.skip_ws();
                    let col = self.col();
                    let Literal::Number(hi) = self.literal()? else {
                        return Err(err(col, "a range ends with a number: `200..299`"));
                    };
                    if hi.unit != lo.unit {
                        return Err(err(col, "both ends of a range take the same unit"));
                    }
                    if hi.value < lo.value {
                        return Err(err(col, "a range's end is below its start"));
                    }
                    Ok(Test::Range(lo, hi))
                } else {
                    Ok(Test::Compare(Op::Cmp(Cmp::Eq), Literal::Number(lo)))
                }
            }
            (None, lit) => Ok(Test::Compare(Op::Cmp(Cmp::Eq), lit)),
        }
    }

    fn regex(&mut self) -> Result<Test, ToleranceError> {
        let col = self.col();
        if !self.eat("/") {
            return Err(err(col, "a regex is written between slashes: `~ /^ok/`"));
        }
        let mut re = String::new();
        loop {
            match self.peek() {
                None => return Err(err(col, "this regex has no closing `/`")),
                Some('\\') if self.chars.get(self.i + 1) == Some(&'/') => {
                    re.push('/');
                    self.i += 2;
                }
                Some('/') => {
                    self.i += 1;
                    break;
                }
                Some(c) => {
                    re.push(c);
                    self.i += 1;
                }
            }
        }
        Regex::new(&re)
            .map(Test::Regex)
            .map_err(|e| err(col, format!("not a regex: {e}")))
    }

    fn literal(&mut self) -> Result<Literal, ToleranceError> {
        let col = self.col();
        match self.peek() {
            Some('"') => return self.string().map(Literal::Str),
            None => return Err(err(col, "expected a value after the comparator")),
            _ => {}
        }
        for (word, lit) in [
            ("true", Literal::Bool(true)),
            ("false", Literal::Bool(false)),
            ("null", Literal::Null),
        ] {
            if self.eat(word) {
                return Ok(lit);
            }
        }
        let start = self.i;
        if self.peek() == Some('-') {
            self.i += 1;
        }
        while self.peek().is_some_and(|c| c.is_ascii_digit())
            || (self.peek() == Some('.')
                && self.chars.get(self.i + 1).is_some_and(char::is_ascii_digit))
        {
            self.i += 1;
        }
        let num: String = self.chars[start..self.i].iter().collect();
        let value: f64 = num.parse().map_err(|_| {
            err(
                col,
                format!(
                    "expected a number (`500ms`, `99%`, `200`), a quoted string, true, false or null, found `{}`",
                    self.rest()
                ),
            )
        })?;
        let ustart = self.i;
        if self.peek() == Some('%') {
            self.i += 1;
        } else {
            while self.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
                self.i += 1;
            }
        }
        let unit: String = self.chars[ustart..self.i].iter().collect();
        let q = match unit.as_str() {
            "" | "x" => Quantity {
                value,
                unit: Unit::Plain,
            },
            "%" => Quantity {
                value: value / 100.0,
                unit: Unit::Ratio,
            },
            u => match millis_per(u) {
                // `8.024s` is 8024 ms, not 8023.999…: round to the nanosecond.
                Some(f) => Quantity {
                    value: (value * f * 1e6).round() / 1e6,
                    unit: Unit::Millis,
                },
                None => {
                    return Err(err(
                        ustart + 1,
                        format!("`{u}` is not a unit: %, ms, s, m or h"),
                    ))
                }
            },
        };
        Ok(Literal::Number(q))
    }
}

/// Milliseconds per unit of time, as the gate grammar reads them.
fn millis_per(unit: &str) -> Option<f64> {
    crate::duration::millis_per(unit)
}

fn cmp_text(op: Op) -> &'static str {
    match op {
        Op::Cmp(c) => c.as_str(),
        Op::Ne => "!=",
    }
}

#[cfg(test)]
#[path = "tolerance_tests.rs"]
mod tests;
