//! Plan text → a position-carrying document tree, for YAML, JSON and TOML alike.
//!
//! Plans are validated on a tree that remembers where each key and value sat in the file, so
//! every error can name `file:line:column` and the offending key. YAML and JSON (a subset of
//! YAML 1.2) are read with the event parser of `yaml-rust2`; TOML with the spanned parser of
//! `toml`. The tree converts to `serde_json::Value` for schema validation and typed
//! deserialization.

use serde_json::{Map, Value};
use std::fmt;

/// A 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// A document node and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub value: NodeValue,
    pub pos: Pos,
}

#[derive(Debug, Clone, PartialEq)]
pub enum NodeValue {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<Entry>),
}

/// A mapping entry: the key, where the key sits, and the value.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub key: String,
    pub key_pos: Pos,
    pub value: Node,
}

/// A syntax error: where, and what.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntaxError {
    pub pos: Pos,
    pub message: String,
}

/// Which text format a plan is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Yaml,
    Json,
    Toml,
}

impl Format {
    /// Guess the format from a file name; YAML when unsure (JSON is valid YAML 1.2).
    pub fn from_path(path: &str) -> Format {
        let lower = path.to_ascii_lowercase();
        if lower.ends_with(".toml") {
            Format::Toml
        } else if lower.ends_with(".json") {
            Format::Json
        } else {
            Format::Yaml
        }
    }
}

/// The deepest nesting of mappings and lists a document may have. Plans need a handful of
/// levels; the cap keeps a hostile or broken file from exhausting the stack of the recursive
/// code that walks the tree (conversion, validation, dropping it).
pub const MAX_DEPTH: usize = 64;

/// The largest document parsed, in bytes. A plan of the most faults a plan may hold
/// (1,000) with room for long payloads fits many times over; the cap keeps a hostile or
/// wrong file (a log, a disk image) from costing seconds and gigabytes to parse.
pub const MAX_TEXT_BYTES: usize = 4 << 20;

fn too_deep(pos: Pos) -> SyntaxError {
    SyntaxError {
        pos,
        message: format!("nested too deeply: more than {MAX_DEPTH} levels of mappings and lists"),
    }
}

/// Parse plan text into a tree.
///
/// Text over [`MAX_TEXT_BYTES`] is refused before anything is parsed.
///
/// Control characters other than tab, line feed and carriage return are refused with their
/// position (a NUL byte would otherwise end a YAML document early and truncate the plan), and
/// so is nesting deeper than [`MAX_DEPTH`], before any recursive structure is built.
pub fn parse(text: &str, format: Format) -> Result<Node, SyntaxError> {
    if text.len() > MAX_TEXT_BYTES {
        return Err(SyntaxError {
            pos: Pos { line: 1, column: 1 },
            message: format!(
                "the document is {} bytes, over the limit of {MAX_TEXT_BYTES} bytes",
                text.len()
            ),
        });
    }
    check_characters(text)?;
    match format {
        Format::Yaml | Format::Json => yaml::parse(text),
        Format::Toml => toml_src::parse(text),
    }
}

/// Refuse characters a text document should not hold: C0 controls (but tab, LF and CR), DEL
/// and C1 controls (but NEL, which YAML allows as a line break).
fn check_characters(text: &str) -> Result<(), SyntaxError> {
    let bad =
        |c: char| (c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\u{85}')) || c == '\u{7f}';
    let Some((offset, c)) = text.char_indices().find(|&(_, c)| bad(c)) else {
        return Ok(());
    };
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    let what = if c == '\0' {
        "a NUL byte (U+0000)".to_string()
    } else {
        format!("the control character U+{:04X}", u32::from(c))
    };
    Err(SyntaxError {
        pos: Pos { line, column },
        message: format!(
            "{what} is not allowed in a text document (is the file binary or cut short?)"
        ),
    })
}

impl Node {
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|e| &e.value)
    }

    pub fn entry(&self, key: &str) -> Option<&Entry> {
        match &self.value {
            NodeValue::Map(entries) => entries.iter().find(|e| e.key == key),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            NodeValue::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The plain JSON value of this node.
    pub fn to_json(&self) -> Value {
        match &self.value {
            NodeValue::Null => Value::Null,
            NodeValue::Bool(b) => Value::Bool(*b),
            NodeValue::Int(i) => Value::from(*i),
            NodeValue::Float(f) => {
                serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number)
            }
            NodeValue::Str(s) => Value::String(s.clone()),
            NodeValue::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            NodeValue::Map(entries) => {
                let mut m = Map::new();
                for e in entries {
                    m.insert(e.key.clone(), e.value.to_json());
                }
                Value::Object(m)
            }
        }
    }

    /// Where the thing a JSON pointer names sits. With `key` true and a pointer that ends in
    /// a mapping key, the key's own position (for "unknown key" errors).
    pub fn locate(&self, pointer: &str, key: bool) -> Pos {
        let mut node = self;
        let mut pos = self.pos;
        if pointer.is_empty() {
            return pos;
        }
        for raw in pointer.trim_start_matches('/').split('/') {
            let part = raw.replace("~1", "/").replace("~0", "~");
            match &node.value {
                NodeValue::Map(entries) => match entries.iter().find(|e| e.key == part) {
                    Some(e) => {
                        pos = if key { e.key_pos } else { e.value.pos };
                        node = &e.value;
                    }
                    None => return pos,
                },
                NodeValue::Seq(items) => {
                    match part.parse::<usize>().ok().and_then(|i| items.get(i)) {
                        Some(n) => {
                            pos = n.pos;
                            node = n;
                        }
                        None => return pos,
                    }
                }
                _ => return pos,
            }
        }
        pos
    }
}

mod yaml;

mod toml_src;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_positions_point_at_keys_and_values() {
        let text = "seed: 42\nfaults:\n  - kind: latency\n    added_ms: 40\n";
        let n = parse(text, Format::Yaml).expect("parses");
        assert_eq!(
            n.locate("/faults/0/added_ms", true),
            Pos { line: 4, column: 5 }
        );
        assert_eq!(
            n.locate("/faults/0/added_ms", false),
            Pos {
                line: 4,
                column: 15
            }
        );
        assert_eq!(n.to_json()["faults"][0]["added_ms"], 40);
        assert_eq!(n.to_json()["seed"], 42);
    }

    #[test]
    fn json_is_read_as_yaml() {
        let n = parse(
            "{\"seed\": 1,\n \"faults\": [{\"kind\": \"drop\", \"probability\": 0.5}]}",
            Format::Json,
        )
        .expect("parses");
        assert_eq!(n.to_json()["faults"][0]["probability"], 0.5);
        assert_eq!(n.locate("/faults/0/probability", true).line, 2);
    }

    #[test]
    fn toml_positions() {
        let text = "seed = 7\n\n[[faults]]\nkind = \"error\"\ncode = -32000\n";
        let n = parse(text, Format::Toml).expect("parses");
        assert_eq!(n.to_json()["faults"][0]["code"], -32000);
        assert_eq!(n.locate("/faults/0/code", true), Pos { line: 5, column: 1 });
    }

    #[test]
    fn syntax_errors_have_positions() {
        let e = parse("faults:\n  - kind: [oops\n", Format::Yaml).expect_err("bad yaml");
        assert!(e.pos.line >= 2, "{e:?}");
        let e = parse("seed = \n", Format::Toml).expect_err("bad toml");
        assert_eq!(e.pos.line, 1);
        let e = parse("a: 1\na: 2\n", Format::Yaml).expect_err("duplicate");
        assert!(e.message.contains("duplicate"));
    }

    #[test]
    fn quoted_numbers_stay_strings() {
        let n = parse("a: '42'\nb: 42\nc: 1.5\nd: yes\n", Format::Yaml).expect("parses");
        let j = n.to_json();
        assert_eq!(j["a"], "42");
        assert_eq!(j["b"], 42);
        assert_eq!(j["c"], 1.5);
        assert_eq!(j["d"], "yes");
    }

    fn assert_too_deep(text: &str, format: Format, line: usize) {
        assert!(text.len() > 80_000 || text.len() < 2_000, "{}", text.len());
        let e = parse(text, format).expect_err("too deep");
        assert!(e.message.contains("nested too deeply"), "{e:?}");
        assert_eq!(e.pos.line, line, "{e:?}");
    }

    #[test]
    fn deep_nesting_is_refused_in_every_format() {
        // Block YAML: compact nested lists on one line, and nested mappings over many lines.
        assert_too_deep(&"- ".repeat(41_000), Format::Yaml, 1);
        let block: String = (0..300)
            .map(|i| format!("{}a:\n", "  ".repeat(i)))
            .collect();
        assert!(block.len() > 80_000);
        assert_too_deep(&block, Format::Yaml, MAX_DEPTH + 1);
        // Flow YAML and JSON.
        assert_too_deep(
            &format!("{}{}", "[".repeat(41_000), "]".repeat(41_000)),
            Format::Yaml,
            1,
        );
        let json = format!("{}1{}", "{\"a\": ".repeat(20_000), "}".repeat(20_000));
        assert_too_deep(&json, Format::Json, 1);
        // TOML: nested arrays, inline tables, dotted keys and table headers.
        assert_too_deep(
            &format!("a = {}{}", "[".repeat(41_000), "]".repeat(41_000)),
            Format::Toml,
            1,
        );
        assert_too_deep(
            &format!("a = {}1{}", "{b = ".repeat(20_000), "}".repeat(20_000)),
            Format::Toml,
            1,
        );
        assert_too_deep(
            &format!("{} = 1\n", vec!["a"; 40_000].join(".")),
            Format::Toml,
            1,
        );
        assert_too_deep(
            &format!("x = 1\n[{}]\n", vec!["a"; 40_000].join(".")),
            Format::Toml,
            2,
        );
        // Just over the cap, below the parsers' own limits.
        let over = MAX_DEPTH + 1;
        assert_too_deep(
            &format!("{}{}", "[".repeat(over), "]".repeat(over)),
            Format::Json,
            1,
        );
        assert_too_deep(
            &format!("a = {}{}", "[".repeat(over), "]".repeat(over)),
            Format::Toml,
            1,
        );
    }

    #[test]
    fn nesting_up_to_the_cap_parses() {
        // The document's own mapping is the first level.
        let inner = MAX_DEPTH - 1;
        let n = parse(
            &format!("a: {}{}", "[".repeat(inner), "]".repeat(inner)),
            Format::Yaml,
        )
        .expect("at the cap");
        assert!(n.to_json()["a"].is_array());
        let n = parse(
            &format!("a = {}{}", "[".repeat(inner), "]".repeat(inner)),
            Format::Toml,
        )
        .expect("at the cap");
        assert!(n.to_json()["a"].is_array());
        // A key after a refused collection still pairs up (the error is the only outcome).
        let deep = format!(
            "a: {}{}\nb: 1\n",
            "[".repeat(MAX_DEPTH),
            "]".repeat(MAX_DEPTH)
        );
        assert!(parse(&deep, Format::Yaml).is_err());
    }

    #[test]
    fn control_characters_are_refused_with_their_position() {
        let e = parse("faults: []\nseed: 1\0garbage\n", Format::Yaml).expect_err("NUL");
        assert_eq!(e.pos, Pos { line: 2, column: 8 });
        assert!(e.message.contains("NUL"), "{e:?}");
        for format in [Format::Json, Format::Toml] {
            let e = parse("\u{1b}[0m", format).expect_err("ESC");
            assert_eq!(e.pos, Pos { line: 1, column: 1 });
            assert!(e.message.contains("U+001B"), "{e:?}");
        }
        // Tabs and CRLF line ends are text.
        assert!(parse("a: 1\r\nb: \"x\ty\"\r\n", Format::Yaml).is_ok());
    }
}
