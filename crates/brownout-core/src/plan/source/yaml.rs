//! YAML (and JSON, a subset of YAML 1.2) → a position-carrying tree, via the event parser
//! of `yaml-rust2`, read in a flat loop with the nesting capped.

use super::{too_deep, Entry, Node, NodeValue, Pos, SyntaxError, MAX_DEPTH};
use rustc_hash::FxHashSet;
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

fn pos(m: &Marker) -> Pos {
    // yaml-rust2 markers: 1-based lines, 0-based columns.
    Pos {
        line: m.line(),
        column: m.col() + 1,
    }
}

enum Frame {
    Seq(Pos, Vec<Node>),
    /// A mapping: its entries, the key waiting for its value, and the keys seen (a set, so
    /// the duplicate check stays linear in the size of a mapping with many keys).
    Map(Pos, Vec<Entry>, Option<(String, Pos)>, FxHashSet<String>),
}

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    root: Option<Node>,
    error: Option<SyntaxError>,
    documents: usize,
    /// Set when the document nests past [`MAX_DEPTH`]: reading stops there.
    stopped: bool,
}

impl Builder {
    fn push(&mut self, node: Node) {
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Frame::Seq(_, items)) => items.push(node),
            Some(Frame::Map(_, entries, pending, seen)) => match pending.take() {
                None => {
                    let key = match &node.value {
                        NodeValue::Str(s) => s.clone(),
                        NodeValue::Int(i) => i.to_string(),
                        NodeValue::Bool(b) => b.to_string(),
                        NodeValue::Float(f) => f.to_string(),
                        NodeValue::Null => "null".to_string(),
                        _ => {
                            self.error.get_or_insert(SyntaxError {
                                pos: node.pos,
                                message: "mapping keys must be plain strings".into(),
                            });
                            String::new()
                        }
                    };
                    if !seen.insert(key.clone()) {
                        self.error.get_or_insert(SyntaxError {
                            pos: node.pos,
                            message: format!("duplicate key `{key}`"),
                        });
                    }
                    *pending = Some((key, node.pos));
                }
                Some((key, key_pos)) => entries.push(Entry {
                    key,
                    key_pos,
                    value: node,
                }),
            },
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        let p = pos(&mark);
        match ev {
            Event::SequenceStart(..) | Event::MappingStart(..) if self.stack.len() >= MAX_DEPTH => {
                self.error.get_or_insert(too_deep(p));
                self.stopped = true;
            }
            Event::DocumentStart => {
                self.documents += 1;
                if self.documents > 1 {
                    self.error.get_or_insert(SyntaxError {
                        pos: p,
                        message: "a plan file holds one document".into(),
                    });
                }
            }
            Event::Alias(_) => {
                self.error.get_or_insert(SyntaxError {
                    pos: p,
                    message: "YAML aliases are not supported in plans".into(),
                });
                self.push(Node {
                    value: NodeValue::Null,
                    pos: p,
                });
            }
            Event::Scalar(s, style, _, _) => {
                let value = if style == TScalarStyle::Plain {
                    plain(&s)
                } else {
                    NodeValue::Str(s)
                };
                self.push(Node { value, pos: p });
            }
            Event::SequenceStart(..) => self.stack.push(Frame::Seq(p, Vec::new())),
            Event::MappingStart(..) => {
                self.stack
                    .push(Frame::Map(p, Vec::new(), None, FxHashSet::default()))
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let node = match self.stack.pop() {
                    Some(Frame::Seq(p, items)) => Node {
                        value: NodeValue::Seq(items),
                        pos: p,
                    },
                    Some(Frame::Map(p, entries, _, _)) => Node {
                        value: NodeValue::Map(entries),
                        pos: p,
                    },
                    None => return,
                };
                self.push(node);
            }
            _ => {}
        }
    }
}

/// Resolve a plain scalar per the YAML 1.2 core schema.
fn plain(s: &str) -> NodeValue {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return NodeValue::Null,
        "true" | "True" | "TRUE" => return NodeValue::Bool(true),
        "false" | "False" | "FALSE" => return NodeValue::Bool(false),
        _ => {}
    }
    if let Ok(i) = s.parse::<i64>() {
        return NodeValue::Int(i);
    }
    if let Some(hex) = s.strip_prefix("0x") {
        if let Ok(i) = i64::from_str_radix(hex, 16) {
            return NodeValue::Int(i);
        }
    }
    let looks_numeric =
        s.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+' || c == '.');
    if looks_numeric {
        if let Ok(f) = s.parse::<f64>() {
            if f.is_finite() {
                return NodeValue::Float(f);
            }
        }
    }
    NodeValue::Str(s.to_string())
}

pub fn parse(text: &str) -> Result<Node, SyntaxError> {
    let mut b = Builder::default();
    let mut parser = Parser::new_from_str(text);
    // Events are read in a flat loop: `Parser::load` recurses once per level of nesting
    // and would overflow the stack before the builder could refuse the depth.
    let mut scan_error = None;
    while !b.stopped {
        match parser.next_token() {
            Ok((Event::StreamEnd, _)) => break,
            Ok((ev, mark)) => b.on_event(ev, mark),
            Err(e) => {
                scan_error = Some(e);
                break;
            }
        }
    }
    let scan_error = scan_error.map(|e| {
        if e.info().contains("recursion limit") {
            too_deep(pos(e.marker()))
        } else {
            SyntaxError {
                pos: pos(e.marker()),
                message: e.info().to_string(),
            }
        }
    });
    // The first problem in the file is the one to fix first.
    let first = [scan_error, b.error.take()]
        .into_iter()
        .flatten()
        .min_by_key(|e| (e.pos.line, e.pos.column));
    if let Some(e) = first {
        return Err(e);
    }
    Ok(b.root.unwrap_or(Node {
        value: NodeValue::Null,
        pos: Pos { line: 1, column: 1 },
    }))
}
