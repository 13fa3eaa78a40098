//! The values side of taints: which JSON values are distinctive enough to follow, which ones
//! a fault introduced into a result, and a fingerprint of a call's arguments.

use rustc_hash::{FxHashSet, FxHasher};
use serde_json::Value;
use std::hash::{Hash, Hasher};

/// Deepest a document is walked.
const MAX_DEPTH: usize = 64;
/// Most leaves read from one document (a peer's huge result cannot make this slow).
pub const MAX_LEAVES: usize = 4096;
/// Longest pointer (bytes) of a value read: each leaf carries its own pointer, so a peer's
/// long keys above many leaves cannot make the pointers outweigh the document a
/// thousandfold. A value deeper than this is not read.
pub const MAX_POINTER: usize = 1024;
/// Shortest string that taints (in characters, after trimming).
pub const MIN_STRING: usize = 4;
/// Smallest integer magnitude that taints.
pub const MIN_INTEGER: f64 = 1000.0;
/// How much of a tainted value events show.
const SHOWN: usize = 24;

/// Words too common to say anything about where a value came from.
const COMMON: &[&str] = &[
    "true", "false", "null", "none", "nil", "yes", "no", "ok", "okay", "error", "success",
    "failed", "unknown", "default", "n/a", "empty",
];

/// A value as taints compare it: a string, a number by its value (`1.0` = `1`), or an
/// object key (a property a stale schema renamed, that the agent then sends as an argument).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Key {
    Str(Box<str>),
    Num(u64),
    Name(Box<str>),
}

impl Key {
    pub fn of(v: &Value) -> Option<Key> {
        match v {
            Value::String(s) => Some(Key::Str(s.as_str().into())),
            Value::Number(n) => n.as_f64().map(|f| {
                let f = if f == 0.0 { 0.0 } else { f };
                Key::Num(f.to_bits())
            }),
            _ => None,
        }
    }
}

/// A value a fault introduced, where it sits in the changed result.
#[derive(Debug, Clone, PartialEq)]
pub struct Tainted {
    /// JSON pointer in the delivered result (`/structuredContent/service`).
    pub pointer: String,
    pub key: Key,
    /// The value as events show it: truncated, never whole when long.
    pub shown: String,
}

impl Tainted {
    /// Byte strings one of which any request carrying this value must contain, whatever
    /// JSON writer made it; `None` when there are none (such a value is always checked on
    /// the parsed arguments). An ASCII string: its own bytes, unless it holds a character a
    /// writer may escape (`/` as `\/`; `<`, `>`, `&` as `\u003c`…, Go's encoding/json); non-ASCII
    /// text may be `\u`-escaped; a fraction may be written otherwise. An integer may be written by its digits (`12345678`, `12345678.0`)
    /// or in exponent form (`1.2345678E7`, Java's `Double.toString`): both are needles. A
    /// round one (`1000`, `1e3`) has no digits every spelling shares: always parsed.
    pub fn needles(&self) -> Option<Vec<Vec<u8>>> {
        let plain = |s: &str| {
            s.bytes().all(|b| {
                (0x20..0x7f).contains(&b) && !matches!(b, b'"' | b'\\' | b'/' | b'<' | b'>' | b'&')
            })
        };
        match &self.key {
            Key::Str(s) | Key::Name(s) if plain(s) => Some(vec![s.as_bytes().to_vec()]),
            Key::Num(bits) => {
                let f = f64::from_bits(*bits);
                if f.fract() != 0.0 || f.abs() >= 9.0e15 {
                    return None;
                }
                let digits = (f.abs() as i64).to_string();
                let significant = digits.trim_end_matches('0');
                if significant.len() < 2 {
                    return None;
                }
                let exponent = format!("{}.{}", &significant[..1], &significant[1..]);
                Some(vec![digits.into_bytes(), exponent.into_bytes()])
            }
            _ => None,
        }
    }
}

/// Is this value specific enough that seeing it again means it was copied? Not a boolean or
/// null, not an integer below 1000 in magnitude, not a number with fewer than four
/// significant digits, not a string shorter than four characters or a common word.
pub fn distinctive(v: &Value) -> bool {
    match v {
        Value::String(s) => {
            let t = s.trim();
            t.chars().count() >= MIN_STRING && !COMMON.iter().any(|c| t.eq_ignore_ascii_case(c))
        }
        Value::Number(n) => {
            let Some(f) = n.as_f64() else { return false };
            if !f.is_finite() {
                return false;
            }
            if f.fract() == 0.0 {
                return f.abs() >= MIN_INTEGER;
            }
            // The mantissa's digits: `2.5e-10` has two, not four.
            let text = n.to_string();
            let mantissa = text.split(['e', 'E']).next().unwrap_or_default();
            let digits = mantissa
                .bytes()
                .skip_while(|b| !matches!(b, b'1'..=b'9'))
                .filter(u8::is_ascii_digit)
                .count();
            digits >= 4 || f.abs() >= MIN_INTEGER
        }
        _ => false,
    }
}

/// Every scalar (string, number, boolean) of `v`, depth first, with its JSON pointer under
/// `at`; at most [`MAX_LEAVES`], at most [`MAX_DEPTH`] deep.
pub fn leaves<'v>(v: &'v Value, at: &str, out: &mut Vec<(String, &'v Value)>) {
    walk(v, at.to_string(), 0, out);
}

fn walk<'v>(v: &'v Value, at: String, depth: usize, out: &mut Vec<(String, &'v Value)>) {
    if out.len() >= MAX_LEAVES || depth > MAX_DEPTH || at.len() > MAX_POINTER {
        return;
    }
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                let p = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                walk(child, p, depth + 1, out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                walk(child, format!("{at}/{i}"), depth + 1, out);
            }
        }
        Value::Null => {}
        _ => out.push((at, v)),
    }
}

/// Like [`leaves`], and a string that holds a JSON object or array (a text content item) is
/// read as that document, its leaves under the string's pointer (`/content/0/text/service`).
/// Object keys are collected in `names`.
fn result_leaves(v: &Value, at: String, depth: usize, out: &mut Vec<(String, Value)>) {
    let mut names = Vec::new();
    result_walk(v, at, depth, out, &mut names);
    out.extend(
        names
            .into_iter()
            .map(|(p, n)| (p, Value::Object(single(n)))),
    );
}

/// A marker for an object key among leaves: `{"\u{0}name": key}`.
fn single(name: String) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert(NAME.into(), Value::String(name));
    m
}

const NAME: &str = "\u{0}name";

fn name_of(v: &Value) -> Option<&str> {
    v.as_object()?.get(NAME)?.as_str()
}

fn result_walk(
    v: &Value,
    at: String,
    depth: usize,
    out: &mut Vec<(String, Value)>,
    names: &mut Vec<(String, String)>,
) {
    if out.len() + names.len() >= MAX_LEAVES || depth > MAX_DEPTH || at.len() > MAX_POINTER {
        return;
    }
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                let p = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                if p.len() > MAX_POINTER {
                    continue;
                }
                names.push((p.clone(), k.clone()));
                result_walk(child, p, depth + 1, out, names);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                result_leaves(child, format!("{at}/{i}"), depth + 1, out);
            }
        }
        Value::String(s) if s.starts_with(['{', '[']) => match serde_json::from_str::<Value>(s) {
            Ok(doc) if doc.is_object() || doc.is_array() => {
                result_leaves(&doc, at, depth + 1, out);
            }
            _ => out.push((at, v.clone())),
        },
        Value::Null => {}
        _ => out.push((at, v.clone())),
    }
}

/// The distinctive values `delivered` holds that `original` does not hold anywhere (equal,
/// or inside one of its strings), at most `max` of them. JSON inside text items is read as
/// JSON, on both sides. With `names`, an object key only the changed result has taints too
/// (a property a stale `tools/list` schema renamed: the agent may send it as an argument).
pub fn introduced(original: &Value, delivered: &Value, max: usize, keys_too: bool) -> Vec<Tainted> {
    let mut before = Vec::new();
    result_leaves(original, String::new(), 0, &mut before);
    let keys: FxHashSet<Key> = before.iter().filter_map(|(_, v)| Key::of(v)).collect();
    let names: FxHashSet<&str> = before.iter().filter_map(|(_, v)| name_of(v)).collect();
    let strings: Vec<&str> = before.iter().filter_map(|(_, v)| v.as_str()).collect();
    let mut after = Vec::new();
    result_leaves(delivered, String::new(), 0, &mut after);
    // Where both carry it, the structured content names the place.
    after.sort_by_key(|(p, _)| !p.starts_with("/structuredContent"));
    let mut out: Vec<Tainted> = Vec::new();
    for (pointer, v) in after {
        let v = &v;
        if out.len() >= max {
            break;
        }
        if let Some(n) = name_of(v) {
            if !keys_too {
                continue;
            }
            // A key only the changed result has (a renamed property), long enough to mean it.
            let fresh = !names.contains(n) && !keys.contains(&Key::Str(n.into()));
            if fresh && n.chars().count() >= MIN_STRING && !COMMON.contains(&n) {
                let key = Key::Name(n.into());
                if !out.iter().any(|t| t.key == key) {
                    out.push(Tainted {
                        pointer,
                        key,
                        shown: shown(&Value::String(n.to_string())),
                    });
                }
            }
            continue;
        }
        if !distinctive(v) {
            continue;
        }
        let Some(key) = Key::of(v) else { continue };
        if keys.contains(&key) || out.iter().any(|t| t.key == key) {
            continue;
        }
        if let Value::String(s) = v {
            if strings.iter().any(|o| o.contains(s.as_str())) {
                continue;
            }
        }
        out.push(Tainted {
            pointer,
            key,
            shown: shown(v),
        });
    }
    out
}

/// A value as events show it: at most 24 characters, the rest elided.
pub fn shown(v: &Value) -> String {
    let text = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut out: String = text
        .chars()
        .filter(|c| !c.is_control())
        .take(SHOWN)
        .collect();
    if text.chars().count() > SHOWN {
        out.push('…');
    }
    out
}

/// A fingerprint of a call's arguments that ignores key order (the same arguments sent
/// again fingerprint the same).
pub fn fingerprint(v: Option<&Value>) -> u64 {
    let mut h = FxHasher::default();
    if let Some(v) = v {
        feed(v, &mut h, 0);
    }
    h.finish()
}

fn feed(v: &Value, h: &mut FxHasher, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, *b).hash(h),
        Value::Number(n) => {
            2u8.hash(h);
            n.as_f64().map(f64::to_bits).hash(h);
        }
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(items) => {
            (4u8, items.len()).hash(h);
            for i in items {
                feed(i, h, depth + 1);
            }
        }
        Value::Object(m) => {
            (5u8, m.len()).hash(h);
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            for k in keys {
                k.hash(h);
                if let Some(child) = m.get(k) {
                    feed(child, h, depth + 1);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_specific_values_are_distinctive() {
        for v in [
            json!(true),
            json!(null),
            json!(7),
            json!(404),
            json!("db"),
            json!("none"),
        ] {
            assert!(!distinctive(&v), "{v} should not taint");
        }
        for v in [
            json!("payments-api"),
            json!(10452),
            json!(4.20731),
            json!("INC-2041"),
        ] {
            assert!(distinctive(&v), "{v} should taint");
        }
        assert!(!distinctive(&json!(0.5)));
    }

    #[test]
    fn introduced_values_are_the_new_distinctive_ones() {
        let original =
            json!({"id": "INC-1", "service": "payments-api", "count": 12, "tags": ["x"]});
        let delivered = json!({"id": "INC-1", "service": "billing-api", "count": 13, "tags": ["x"], "note": "payments"});
        let t = introduced(&original, &delivered, 16, false);
        let pointers: Vec<&str> = t.iter().map(|t| t.pointer.as_str()).collect();
        // `count` 13 is too small to follow; `note` is inside an original string.
        assert_eq!(pointers, ["/service"]);
        assert_eq!(t[0].key, Key::Str("billing-api".into()));
    }

    #[test]
    fn a_renamed_property_taints_its_new_name() {
        let before = json!({"tools": [{"name": "restart", "inputSchema": {"properties": {"service": {"type": "string"}}}}]});
        let after = json!({"tools": [{"name": "restart", "inputSchema": {"properties": {"service_v2": {"type": "string"}}}}]});
        let t = introduced(&before, &after, 16, true);
        assert_eq!(t.len(), 1, "{t:?}");
        assert_eq!(t[0].key, Key::Name("service_v2".into()));
    }

    #[test]
    fn json_in_text_is_read_as_json_and_one_value_taints_once() {
        let sc = json!({"id": "INC-1", "service": "payments-api"});
        let bad = json!({"id": "INC-1", "service": "payments-web"});
        let original =
            json!({"content": [{"type": "text", "text": sc.to_string()}], "structuredContent": sc});
        let delivered = json!({"content": [{"type": "text", "text": bad.to_string()}], "structuredContent": bad});
        let t = introduced(&original, &delivered, 16, false);
        assert_eq!(t.len(), 1, "{t:?}");
        assert_eq!(t[0].pointer, "/structuredContent/service");
        let text_only = json!({"content": [{"type": "text", "text": bad.to_string()}]});
        let t = introduced(
            &json!({"content": [{"type": "text", "text": sc.to_string()}]}),
            &text_only,
            16,
            false,
        );
        assert_eq!(t[0].pointer, "/content/0/text/service");
    }

    #[test]
    fn numbers_compare_by_value_and_fingerprints_ignore_key_order() {
        assert_eq!(Key::of(&json!(1000)), Key::of(&json!(1000.0)));
        let a = json!({"a": 1, "b": [1, "x"]});
        let b: Value = serde_json::from_str(r#"{"b": [1, "x"], "a": 1.0}"#).unwrap_or_default();
        assert_eq!(fingerprint(Some(&a)), fingerprint(Some(&b)));
        assert_ne!(fingerprint(Some(&a)), fingerprint(Some(&json!({"a": 2}))));
    }

    #[test]
    fn shown_values_are_truncated_and_clean() {
        assert_eq!(shown(&json!("a\nb")), "ab");
        assert_eq!(shown(&json!("x".repeat(40))).chars().count(), 25);
    }
    fn tainted(v: Value) -> Tainted {
        Tainted {
            pointer: "/v".into(),
            key: Key::of(&v).unwrap_or(Key::Num(0)),
            shown: shown(&v),
        }
    }

    #[test]
    fn needles_survive_every_writer_s_spelling() {
        // Go's encoding/json writes `&` as `\u0026`: no raw bytes to look for.
        assert_eq!(tainted(json!("R&D-portal")).needles(), None);
        assert_eq!(tainted(json!("a<b>-c")).needles(), None);
        assert!(tainted(json!("payments-web")).needles().is_some());
        // Java's Double.toString writes 12345678.0 as `1.2345678E7`.
        let n = tainted(json!(12345678)).needles().unwrap_or_default();
        assert!(n.iter().any(|b| b.as_slice() == b"1.2345678"), "{n:?}");
        // `1e3` shares no digits with `1000` but `1`.
        assert_eq!(tainted(json!(1000)).needles(), None);
    }

    #[test]
    fn an_exponent_s_digits_are_not_significant() {
        // 2.5e-10 has two significant digits, not four.
        assert!(!distinctive(&json!(2.5e-10)));
        assert!(distinctive(&json!(2.5731e-10)));
    }

    #[test]
    fn long_keys_above_many_leaves_cannot_blow_up_the_pointers() {
        let key = "k".repeat(64 * 1024);
        let doc = json!({ key.clone(): vec![12345; MAX_LEAVES] });
        let mut out = Vec::new();
        leaves(&doc, "", &mut out);
        let bytes: usize = out.iter().map(|(p, _)| p.len()).sum();
        assert!(
            bytes <= MAX_LEAVES * MAX_POINTER,
            "{bytes} bytes of pointers"
        );
        let t = introduced(&json!({}), &doc, 16, true);
        assert!(t.iter().all(|t| t.pointer.len() <= MAX_POINTER));
    }
}
