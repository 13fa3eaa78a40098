//! Search dimensions marked in a plan or an experiment file: a number written
//! `{search: [LO, HI]}` (`probability: {search: [0, 0.2]}`, `added_ms: {search: [0, 3000]}`,
//! a stage's `sessions: {search: [1%, 100%]}`), found with their line and column, and the file
//! written back with a value in each mark's place.
//!
//! Written by hand: a mark is a small flow-style form, found in the text so the rest of the
//! file (comments, layout) is written back untouched; no YAML library edits in place.

use std::fmt;

/// One search dimension.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// The key the mark is the value of (`probability`).
    pub key: String,
    pub lo: f64,
    pub hi: f64,
    /// Written as percentages (`1%`): values are percent, written back as such.
    pub percent: bool,
    pub line: usize,
    pub col: usize,
    /// The mark's bytes in the text.
    start: usize,
    end: usize,
}

/// A mark that does not read.
#[derive(Debug, Clone, PartialEq)]
pub struct MarkError {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl fmt::Display for MarkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.message)
    }
}

fn position(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

fn number(s: &str) -> Option<(f64, bool)> {
    let s = s.trim().trim_matches(|c| c == '"' || c == '\'');
    match s.strip_suffix('%') {
        Some(p) => p.trim().parse().ok().map(|v| (v, true)),
        None => s.parse().ok().map(|v| (v, false)),
    }
}

/// Every mark in `text`, in order.
pub fn find(text: &str) -> Result<Vec<Mark>, MarkError> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find("search") {
        let at = from + i;
        from = at + "search".len();
        // `{` (and spaces) before, `:` (and spaces) after: the flow form.
        let Some(open) = text[..at].trim_end().strip_suffix('{').map(str::len) else {
            continue;
        };
        let rest = text[from..].trim_start();
        let Some(rest) = rest.strip_prefix(':') else {
            continue;
        };
        let (line, col) = position(text, open);
        let err = |message: String| MarkError { line, col, message };
        let rest_at = text.len() - rest.len();
        let Some(close) = text[rest_at..].find('}') else {
            return Err(err(
                "a search mark is `{search: [LO, HI]}`, on one line".into()
            ));
        };
        let inner = text[rest_at..rest_at + close].trim();
        let list = inner
            .strip_prefix('[')
            .and_then(|s| s.strip_suffix(']'))
            .ok_or_else(|| err(format!("`{inner}`: a search range is `[LO, HI]`")))?;
        let parts: Vec<&str> = list.split(',').collect();
        let [a, b] = parts.as_slice() else {
            return Err(err(format!(
                "`[{list}]`: a search range has two ends, `[LO, HI]`"
            )));
        };
        let (Some((lo, p1)), Some((hi, p2))) = (number(a), number(b)) else {
            return Err(err(format!(
                "`[{list}]`: the ends are numbers (or percentages: `[1%, 100%]`)"
            )));
        };
        if p1 != p2 {
            return Err(err(format!(
                "`[{list}]`: write both ends as percentages, or neither"
            )));
        }
        if !(lo.is_finite() && hi.is_finite()) || lo >= hi {
            return Err(err(format!("`[{list}]`: LO must be below HI")));
        }
        // The key: the word before the `:` that precedes the mark.
        let head = text[..open].trim_end();
        let key = head
            .strip_suffix(':')
            .map(|h| {
                h.trim_end()
                    .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or("")
                    .to_string()
            })
            .unwrap_or_default();
        if key.is_empty() {
            return Err(err(
                "a search mark is the value of a key: `probability: {search: [0, 0.2]}`".into(),
            ));
        }
        let end = rest_at + close + 1;
        out.push(Mark {
            key,
            lo,
            hi,
            percent: p1,
            line,
            col,
            start: open,
            end,
        });
        from = end;
    }
    Ok(out)
}

/// A value as written back: percent marks in `experiment` files as `"12.5%"` (a stage's
/// share), in plans as a fraction (`sessions: 0.125`).
pub fn written(m: &Mark, v: f64, experiment: bool) -> String {
    let round = |x: f64| {
        let s = format!("{x:.6}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        if s.is_empty() || s == "-" {
            "0".to_string()
        } else {
            s.to_string()
        }
    };
    match (m.percent, experiment) {
        (true, true) => format!("\"{}%\"", round(v)),
        (true, false) => round(v / 100.0),
        (false, _) => round(v),
    }
}

/// `text` with each mark replaced by its value.
pub fn substitute(text: &str, marks: &[Mark], values: &[f64], experiment: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (m, v) in marks.iter().zip(values) {
        out.push_str(&text[at..m.start]);
        out.push_str(&written(m, *v, experiment));
        at = m.end;
    }
    out.push_str(&text[at..]);
    out
}

/// Errors of a file loaded to be run, not searched: a mark left in it says what it is.
pub fn explain(mut e: brownout_core::plan::PlanErrors) -> brownout_core::plan::PlanErrors {
    for err in &mut e.errors {
        if err.message.contains("{\"search\":[") {
            err.message.push_str(
                " — a `{search: [LO, HI]}` mark is for `brownout search`, which writes the file back with a number (-o)",
            );
        }
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_found_with_their_key_range_and_place() {
        let text = "faults:\n  - {kind: error, probability: {search: [0, 0.2]}}\n  - kind: latency\n    added_ms: { search : [ 0 , 3000 ] }\n";
        let m = find(text).expect("marks");
        assert_eq!(m.len(), 2);
        assert_eq!(
            (m[0].key.as_str(), m[0].lo, m[0].hi),
            ("probability", 0.0, 0.2)
        );
        assert_eq!((m[0].line, m[0].col), (2, 32));
        assert_eq!(
            (m[1].key.as_str(), m[1].hi, m[1].line),
            ("added_ms", 3000.0, 4)
        );
        let back = substitute(text, &m, &[0.05, 1500.0], false);
        assert!(back.contains("probability: 0.05}\n"), "{back}");
        assert!(back.contains("added_ms: 1500\n"), "{back}");
    }

    #[test]
    fn percentages_are_written_back_as_the_file_wants_them() {
        let text = "method:\n  - {stage: s, duration: 5s, sessions: {search: [1%, 100%]}}\n";
        let m = find(text).expect("marks");
        assert!(m[0].percent);
        let exp = substitute(text, &m, &[37.5], true);
        assert!(exp.contains("sessions: \"37.5%\"}"), "{exp}");
        let plan = substitute(text, &m, &[37.5], false);
        assert!(plan.contains("sessions: 0.375}"), "{plan}");
    }

    #[test]
    fn bad_marks_are_located_and_explained() {
        for (text, says) in [
            ("p: {search: [0.2, 0.1]}", "LO must be below HI"),
            ("p: {search: [0, x]}", "numbers"),
            ("p: {search: [0, 1, 2]}", "two ends"),
            ("p: {search: [1%, 5]}", "percentages"),
            ("p: {search: 0.2}", "[LO, HI]"),
            ("- {search: [0, 1]}", "value of a key"),
        ] {
            let e = find(text).expect_err(text);
            assert!(e.message.contains(says), "{text}: {e}");
            assert_eq!(e.line, 1, "{text}");
        }
        // `search` elsewhere is not a mark.
        assert!(find("title: search for the boundary\n")
            .expect("none")
            .is_empty());
    }
}
