//! TOML → a position-carrying tree, via the spanned parser of `toml`, with the nesting
//! capped.

use super::{too_deep, Entry, Node, NodeValue, Pos, SyntaxError, MAX_DEPTH};
use toml::de::{DeTable, DeValue};
use toml::Spanned;

struct Lines<'a> {
    text: &'a str,
}

impl Lines<'_> {
    fn pos(&self, offset: usize) -> Pos {
        let before = &self.text[..offset.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        Pos { line, column }
    }
}

/// `depth` counts the collections around `v`; past [`MAX_DEPTH`] the conversion stops.
fn convert(lines: &Lines<'_>, v: &Spanned<DeValue<'_>>, depth: usize) -> Result<Node, SyntaxError> {
    let pos = lines.pos(v.span().start);
    let nested = matches!(v.get_ref(), DeValue::Array(_) | DeValue::Table(_));
    if nested && depth >= MAX_DEPTH {
        return Err(too_deep(pos));
    }
    let value = match v.get_ref() {
        DeValue::String(s) => NodeValue::Str(s.to_string()),
        DeValue::Integer(i) => {
            let digits = i.as_str().replace('_', "");
            let digits = digits
                .trim_start_matches("0x")
                .trim_start_matches("0o")
                .trim_start_matches("0b");
            match i64::from_str_radix(digits, i.radix()) {
                Ok(n) => NodeValue::Int(n),
                Err(_) => NodeValue::Str(i.as_str().to_string()),
            }
        }
        DeValue::Float(f) => match f.as_str().replace('_', "").parse::<f64>() {
            Ok(x) => NodeValue::Float(x),
            Err(_) => NodeValue::Str(f.as_str().to_string()),
        },
        DeValue::Boolean(b) => NodeValue::Bool(*b),
        DeValue::Datetime(d) => NodeValue::Str(d.to_string()),
        DeValue::Array(items) => NodeValue::Seq(
            items
                .iter()
                .map(|i| convert(lines, i, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        DeValue::Table(t) => NodeValue::Map(table(lines, t, depth + 1)?),
    };
    Ok(Node { value, pos })
}

fn table(lines: &Lines<'_>, t: &DeTable<'_>, depth: usize) -> Result<Vec<Entry>, SyntaxError> {
    t.iter()
        .map(|(k, v)| {
            Ok(Entry {
                key: k.get_ref().to_string(),
                key_pos: lines.pos(k.span().start),
                value: convert(lines, v, depth)?,
            })
        })
        .collect()
}

/// The line with the most `.`, `[` and `{`: where a too deep key or value most likely is.
fn busiest_line(text: &str) -> Pos {
    let line = text
        .lines()
        .enumerate()
        .max_by_key(|(i, l)| (l.matches(['.', '[', '{']).count(), std::cmp::Reverse(*i)))
        .map_or(1, |(i, _)| i + 1);
    Pos { line, column: 1 }
}

pub fn parse(text: &str) -> Result<Node, SyntaxError> {
    let lines = Lines { text };
    match DeTable::parse(text) {
        Ok(root) => Ok(Node {
            value: NodeValue::Map(table(&lines, root.get_ref(), 1)?),
            pos: Pos { line: 1, column: 1 },
        }),
        Err(e) => {
            let pos = e
                .span()
                .map_or(Pos { line: 1, column: 1 }, |s| lines.pos(s.start));
            // toml's own cap (80 levels) sits above ours: say it the same way. It gives no
            // position for a long dotted key, so point at the most nested-looking line.
            if e.message().contains("recurs") {
                return Err(too_deep(
                    e.span().map_or_else(|| busiest_line(text), |_| pos),
                ));
            }
            Err(SyntaxError {
                pos,
                message: e.message().to_string(),
            })
        }
    }
}
