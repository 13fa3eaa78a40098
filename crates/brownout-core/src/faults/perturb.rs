//! Plausible wrong values, for `corrupt`: where a field's schema sits inside a tool's
//! `outputSchema`, and values near the old one that the schema still allows — a number
//! nudged within its bounds and step, a string turned into a sibling (`INC-1042` →
//! `INC-1047`, `payments-api` → `payments-web`), an enum moved to another member. The caller
//! validates each candidate against the whole schema and keeps the first that passes.

use crate::rng::SplitMix;
use serde_json::{Number, Value};

/// Deepest `$ref` / `allOf` chain followed.
const MAX_HOPS: usize = 16;
/// Candidates proposed per call (each is validated; most pass).
const CANDIDATES: usize = 6;

/// Siblings a last word may become: names that sit beside each other in real systems.
const SIBLINGS: &[&[&str]] = &[
    &["api", "web", "worker", "db", "cache", "gateway", "queue"],
    &["prod", "staging", "dev", "canary"],
    &["primary", "replica", "standby"],
    &["east", "west", "north", "south", "central"],
    &["blue", "green"],
    &[
        "checkout",
        "cart",
        "billing",
        "orders",
        "inventory",
        "payments",
        "search",
        "auth",
    ],
    &["v1", "v2", "v3"],
    &["low", "medium", "high", "critical"],
    &["open", "closed", "resolved", "acknowledged"],
];

/// The schema of the value at `pointer` inside a document valid against `root`, following
/// `properties`, `items`, `prefixItems`, `additionalProperties`, local `$ref`s and the first
/// branch of `allOf`/`anyOf`/`oneOf` that describes the key.
pub fn leaf_schema<'s>(root: &'s Value, pointer: &str) -> Option<&'s Value> {
    let mut s = resolve(root, root)?;
    for raw in pointer.split('/').skip(1) {
        let key = raw.replace("~1", "/").replace("~0", "~");
        s = child(root, s, &key)?;
    }
    Some(s)
}

/// Does the schema enumerate the value at `pointer` (`enum` or `const`)? Such a value is one
/// of a few everybody uses: not distinctive, whatever its length.
pub(crate) fn enumerated(root: &Value, pointer: &str) -> bool {
    leaf_schema(root, pointer).is_some_and(|s| s.get("enum").is_some() || s.get("const").is_some())
}

fn resolve<'s>(root: &'s Value, mut s: &'s Value) -> Option<&'s Value> {
    for _ in 0..MAX_HOPS {
        match s.get("$ref").and_then(Value::as_str) {
            Some(r) => s = root.pointer(r.strip_prefix('#')?)?,
            None => return Some(s),
        }
    }
    None
}

fn child<'s>(root: &'s Value, s: &'s Value, key: &str) -> Option<&'s Value> {
    if let Some(p) = s.get("properties").and_then(|p| p.get(key)) {
        return resolve(root, p);
    }
    if let Ok(i) = key.parse::<usize>() {
        if let Some(p) = s.get("prefixItems").and_then(|p| p.get(i)) {
            return resolve(root, p);
        }
        if let Some(items) = s.get("items").filter(|i| i.is_object()) {
            return resolve(root, items);
        }
    }
    if let Some(a) = s.get("additionalProperties").filter(|a| a.is_object()) {
        return resolve(root, a);
    }
    for combo in ["allOf", "anyOf", "oneOf"] {
        if let Some(branches) = s.get(combo).and_then(Value::as_array) {
            for b in branches {
                if let Some(found) = resolve(root, b).and_then(|b| child(root, b, key)) {
                    return Some(found);
                }
            }
        }
    }
    None
}

/// Values near `old` that `schema` (the field's own, if known) allows, in a seeded order.
pub fn candidates(old: &Value, schema: Option<&Value>, rng: &mut SplitMix) -> Vec<Value> {
    if let Some(members) = schema.and_then(|s| s.get("enum")).and_then(Value::as_array) {
        let mut others: Vec<Value> = members.iter().filter(|m| *m != old).cloned().collect();
        shuffle(&mut others, rng);
        return others;
    }
    if schema.is_some_and(|s| s.get("const").is_some()) {
        return Vec::new();
    }
    let mut out = match old {
        Value::Number(n) => numbers(n, schema, rng),
        Value::String(s) => strings(s, schema, rng)
            .into_iter()
            .map(Value::String)
            .collect(),
        Value::Bool(b) => vec![Value::Bool(!b)],
        _ => Vec::new(),
    };
    out.retain(|v| v != old);
    out.dedup();
    out
}

fn shuffle<T>(v: &mut [T], rng: &mut SplitMix) {
    for i in (1..v.len()).rev() {
        v.swap(i, rng.below(i + 1));
    }
}

fn bound(schema: Option<&Value>, key: &str) -> Option<f64> {
    schema?.get(key)?.as_f64()
}

fn numbers(n: &Number, schema: Option<&Value>, rng: &mut SplitMix) -> Vec<Value> {
    let Some(v) = n.as_f64() else {
        return Vec::new();
    };
    let lo = bound(schema, "minimum");
    let hi = bound(schema, "maximum");
    let xlo = bound(schema, "exclusiveMinimum");
    let xhi = bound(schema, "exclusiveMaximum");
    let inside = |x: f64| {
        lo.is_none_or(|l| x >= l)
            && hi.is_none_or(|h| x <= h)
            && xlo.is_none_or(|l| x > l)
            && xhi.is_none_or(|h| x < h)
    };
    let integer = n.is_i64() || n.is_u64();
    let mut out = Vec::new();
    for _ in 0..CANDIDATES * 2 {
        if out.len() >= CANDIDATES {
            break;
        }
        let sign = if rng.below(2) == 0 { -1.0 } else { 1.0 };
        let x = if integer {
            let step = bound(schema, "multipleOf")
                .filter(|m| *m >= 1.0)
                .unwrap_or(1.0);
            let span = ((v.abs() * 0.1) / step).round().max(1.0);
            let k = 1.0 + (rng.unit() * span).floor();
            v + sign * k * step
        } else {
            let r = 0.05 + 0.2 * rng.unit();
            let x = if v == 0.0 {
                sign * r
            } else {
                v * (1.0 + sign * r)
            };
            round_like(x, n)
        };
        if inside(x) && x != v {
            let num = if integer && x.abs() < 9.0e15 {
                Some(Number::from(x as i64))
            } else {
                Number::from_f64(x)
            };
            if let Some(num) = num {
                out.push(Value::Number(num));
            }
        }
    }
    out
}

/// Round `x` to as many decimals as `like` was written with (a price stays a price).
fn round_like(x: f64, like: &Number) -> f64 {
    let text = like.to_string();
    let decimals = text.split_once('.').map_or(0, |(_, f)| f.len()).min(6) as i32;
    let scale = 10f64.powi(decimals.max(1));
    (x * scale).round() / scale
}

fn strings(s: &str, schema: Option<&Value>, rng: &mut SplitMix) -> Vec<String> {
    let format = schema.and_then(|s| s.get("format")).and_then(Value::as_str);
    let mut out = Vec::new();
    for _ in 0..CANDIDATES {
        let c = if matches!(format, Some("date" | "date-time")) || looks_like_date(s) {
            shift_day(s, rng)
        } else if s.bytes().any(|b| b.is_ascii_digit()) {
            Some(other_digits(s, rng))
        } else {
            sibling(s, rng).or_else(|| Some(other_letter(s, rng)))
        };
        if let Some(c) = c.filter(|c| c != s && !out.contains(c)) {
            out.push(c);
        }
    }
    out
}

fn looks_like_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit)
}

/// Another day of the same month (01–28, so it always exists).
fn shift_day(s: &str, rng: &mut SplitMix) -> Option<String> {
    if !looks_like_date(s) {
        return None;
    }
    let day = 1 + rng.below(28);
    Some(format!("{}{day:02}{}", &s[..8], &s[10..]))
}

/// The last run of digits becomes another number of the same width.
fn other_digits(s: &str, rng: &mut SplitMix) -> String {
    let b = s.as_bytes();
    let end = b.iter().rposition(u8::is_ascii_digit).map_or(0, |i| i + 1);
    let start = b[..end]
        .iter()
        .rposition(|c| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    let width = end - start;
    let mut digits = String::with_capacity(width);
    for i in 0..width {
        // No new leading zero where there was none.
        let d = if i == 0 && width > 1 && b[start] != b'0' {
            1 + rng.below(9)
        } else {
            rng.below(10)
        };
        digits.push(char::from(b'0' + d as u8));
    }
    format!("{}{digits}{}", &s[..start], &s[end..])
}

/// The last word swapped for a sibling of it (`payments-api` → `payments-worker`).
fn sibling(s: &str, rng: &mut SplitMix) -> Option<String> {
    let cut = s.rfind(['-', '_', '.', '/', ':', ' ']).map_or(0, |i| i + 1);
    let last = &s[cut..];
    let group = SIBLINGS
        .iter()
        .find(|g| g.iter().any(|w| w.eq_ignore_ascii_case(last)))?;
    let others: Vec<&&str> = group
        .iter()
        .filter(|w| !w.eq_ignore_ascii_case(last))
        .collect();
    let pick = others[rng.below(others.len())];
    let pick = if last.chars().all(|c| c.is_ascii_uppercase()) {
        pick.to_ascii_uppercase()
    } else {
        pick.to_string()
    };
    Some(format!("{}{pick}", &s[..cut]))
}

/// One letter of the last word changed (same case, same length, same character set).
fn other_letter(s: &str, rng: &mut SplitMix) -> String {
    let chars: Vec<char> = s.chars().collect();
    let letters: Vec<usize> = (0..chars.len())
        .filter(|&i| chars[i].is_ascii_alphabetic())
        .collect();
    if letters.is_empty() {
        return format!("{s}-2");
    }
    // Prefer the last word's letters: the part that names the thing.
    let at = letters[letters.len() - 1 - rng.below(letters.len().min(3))];
    let c = chars[at];
    let base = if c.is_ascii_uppercase() { b'A' } else { b'a' };
    let shift = 1 + rng.below(25) as u8;
    let new = char::from(base + ((c as u8 - base + shift) % 26));
    let mut out = chars;
    out[at] = new;
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_leaf_schema_follows_properties_items_and_refs() {
        let root = json!({
            "type": "object",
            "properties": {
                "incident": {"$ref": "#/$defs/inc"},
                "list": {"type": "array", "items": {"type": "integer", "maximum": 10}}
            },
            "$defs": {"inc": {"properties": {"severity": {"enum": ["low", "high"]}}}}
        });
        assert_eq!(
            leaf_schema(&root, "/incident/severity"),
            Some(&json!({"enum": ["low", "high"]}))
        );
        assert_eq!(
            leaf_schema(&root, "/list/3").and_then(|s| s.get("maximum")),
            Some(&json!(10))
        );
        assert_eq!(leaf_schema(&root, "/nope"), None);
    }

    #[test]
    fn candidates_stay_inside_the_schema() {
        let mut rng = SplitMix::new(7);
        let e = candidates(
            &json!("low"),
            Some(&json!({"enum": ["low", "high"]})),
            &mut rng,
        );
        assert_eq!(e, [json!("high")]);
        let s = json!({"type": "integer", "minimum": 1, "maximum": 5});
        for _ in 0..50 {
            for c in candidates(&json!(3), Some(&s), &mut rng) {
                let x = c.as_i64().unwrap_or(-1);
                assert!((1..=5).contains(&x) && x != 3, "{c}");
            }
        }
        let ids = candidates(&json!("INC-1042"), None, &mut rng);
        assert!(!ids.is_empty());
        for c in ids {
            let c = c.as_str().unwrap_or_default().to_string();
            assert!(
                c.starts_with("INC-") && c.len() == 8 && c != "INC-1042",
                "{c}"
            );
        }
        let svc = candidates(&json!("payments-api"), None, &mut rng);
        assert!(svc
            .iter()
            .all(|c| c.as_str().is_some_and(|c| c.starts_with("payments-"))));
        assert!(candidates(&json!(1), Some(&json!({"const": 1})), &mut rng).is_empty());
    }

    #[test]
    fn dates_stay_dates() {
        let mut rng = SplitMix::new(1);
        for c in candidates(&json!("2026-11-26T10:00:00Z"), None, &mut rng) {
            let c = c.as_str().unwrap_or_default().to_string();
            assert!(looks_like_date(&c) && c.starts_with("2026-11-") && c.ends_with("T10:00:00Z"));
        }
    }
}
