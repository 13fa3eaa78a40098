//! TOML → a position-carrying tree, via the spanned parser of `toml`, with the nesting
//! capped.

use super::{too_deep, Entry, Node, NodeValue, Pos, SyntaxError, MAX_DEPTH};
use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// Byte offsets → line and column, in time linear in the text: the start of every line (and
/// whether it is ASCII) is found once, a line is a binary search, and a column is a byte
/// difference on an ASCII line, or counted in characters from the last position asked on
/// that line (positions are asked mostly in document order).
struct Lines<'a> {
    text: &'a str,
    /// The byte offset where each line starts, and whether the line is ASCII.
    starts: Vec<(usize, bool)>,
    /// The last non-ASCII position: (byte offset, its column).
    last: std::cell::Cell<(usize, usize)>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Lines<'a> {
        let mut starts = Vec::new();
        let mut at = 0;
        for line in text.split_inclusive('\n') {
            starts.push((at, line.is_ascii()));
            at += line.len();
        }
        if starts.is_empty() || text.ends_with('\n') {
            starts.push((at, true));
        }
        Lines {
            text,
            starts,
            last: std::cell::Cell::new((usize::MAX, 0)),
        }
    }

    fn pos(&self, offset: usize) -> Pos {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        // The last line starting at or before `offset`.
        let line = self.starts.partition_point(|&(s, _)| s <= offset).max(1);
        let (start, ascii) = self.starts[line - 1];
        let column = if ascii {
            offset - start + 1
        } else {
            let (from, col) = match self.last.get() {
                (o, c) if o != usize::MAX && o >= start && o <= offset => (o, c),
                _ => (start, 1),
            };
            let c = col + self.text[from..offset].chars().count();
            self.last.set((offset, c));
            c
        };
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
    let lines = Lines::new(text);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_by_line_start_and_columns_in_characters() {
        let text = "a = 1\nb = \"é\" # ü\nc = 3";
        let l = Lines::new(text);
        assert_eq!(l.pos(0), Pos { line: 1, column: 1 });
        assert_eq!(l.pos(6), Pos { line: 2, column: 1 });
        // After `é` (2 bytes) the column counts characters.
        let hash = text.find('#').expect("#");
        assert_eq!(l.pos(hash), Pos { line: 2, column: 9 });
        assert_eq!(l.pos(hash - 2), Pos { line: 2, column: 7 });
        assert_eq!(l.pos(text.len()), Pos { line: 3, column: 6 });
        let n = parse("x = 1\n[t]\ny = \"ü\"\nz = 2\n").expect("parses");
        assert_eq!(n.locate("/t/z", true), Pos { line: 4, column: 1 });
    }
}
