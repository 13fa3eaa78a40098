//! Default fault ids, derived from what a fault says rather than where it stands.
//!
//! A fault without an `id` is named `<kind>-<hash>`: eight hex digits of a stable hash of
//! its own keys (everything but `id`, `description` and `enabled`, in canonical form: keys
//! sorted, integral numbers written as integers). Adding, removing or reordering other
//! faults never renames it, and since a fault's random draws are keyed by its id, never
//! changes its decisions. Two unnamed faults with the same keys would get the same name:
//! the first in plan order keeps it, the second becomes `<kind>-<hash>-2`, the third
//! `-3`, and so on; a name an explicit `id` already uses is skipped the same way.

//!
//! A fault's random stream is named by its id, except for a fault a brownout run put on a
//! relay (`<id>--brownout-run-<seed>-<run id>`): its stream is named without the run id
//! ([`stream_name`]), so two runs never share a fault id on a relay, and the same seed
//! still draws the same on it.

use crate::rng::hash_str;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// What names a fault's random stream: its id, or for a run's fault on a relay
/// (`<id>--brownout-run-<seed>-<run id>`) the id up to its seed.
pub fn stream_name(id: &str) -> &str {
    const MARK: &str = "--brownout-run-";
    let Some(at) = id.rfind(MARK) else {
        return id;
    };
    let from = at + MARK.len();
    let digits = id[from..].bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return id;
    }
    &id[..from + digits]
}

/// Keys that do not change what a fault does, left out of its content hash.
const NOT_CONTENT: [&str; 3] = ["id", "description", "enabled"];

/// The stable hash of a fault's content (its JSON object as written).
pub fn content_hash(fault: &Value) -> u64 {
    let mut text = String::new();
    match fault {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m
                .keys()
                .filter(|k| !NOT_CONTENT.contains(&k.as_str()))
                .collect();
            keys.sort();
            text.push('{');
            for k in keys {
                canonical(&Value::String(k.clone()), &mut text);
                text.push(':');
                canonical(&m[k.as_str()], &mut text);
                text.push(',');
            }
            text.push('}');
        }
        other => canonical(other, &mut text),
    }
    hash_str(&text)
}

fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for k in keys {
                canonical(&Value::String(k.clone()), out);
                out.push(':');
                canonical(&m[k.as_str()], out);
                out.push(',');
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for x in a {
                canonical(x, out);
                out.push(',');
            }
            out.push(']');
        }
        Value::Number(n) => match n.as_f64() {
            // 100 and 100.0 are the same delay: one spelling.
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => {
                out.push_str(&format!("{}", f as i64));
            }
            Some(f) => out.push_str(&format!("{f:?}")),
            None => out.push_str(&n.to_string()),
        },
        other => out.push_str(&other.to_string()),
    }
}

/// The base default id of a fault of `kind` whose content hashes to `hash`.
pub fn base_id(kind: &str, hash: u64) -> String {
    format!("{kind}-{:08x}", (hash >> 32) as u32)
}

/// Name the unnamed faults. `faults` holds, in plan order, each fault's explicit id or
/// `Err((kind, content hash))`; the answer is every fault's id, in the same order.
pub fn assign(faults: &[Result<String, (&str, u64)>]) -> Vec<String> {
    let explicit: HashSet<&str> = faults
        .iter()
        .filter_map(|f| f.as_ref().ok().map(String::as_str))
        .collect();
    let mut taken: HashSet<String> = HashSet::new();
    let mut copies: HashMap<String, u32> = HashMap::new();
    faults
        .iter()
        .map(|f| match f {
            Ok(id) => id.clone(),
            Err((kind, hash)) => {
                let base = base_id(kind, *hash);
                let n = copies.entry(base.clone()).or_insert(0);
                loop {
                    *n += 1;
                    let id = if *n == 1 {
                        base.clone()
                    } else {
                        format!("{base}-{n}")
                    };
                    if !explicit.contains(id.as_str()) && taken.insert(id.clone()) {
                        break id;
                    }
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_hash_ignores_order_names_and_number_spelling() {
        let a = content_hash(&json!({"kind": "latency", "added_ms": 100, "tools": ["a"]}));
        let b = content_hash(
            &json!({"tools": ["a"], "added_ms": 100.0, "kind": "latency", "description": "x", "enabled": false}),
        );
        assert_eq!(a, b);
        let c = content_hash(&json!({"kind": "latency", "added_ms": 101, "tools": ["a"]}));
        assert_ne!(a, c);
    }

    #[test]
    fn copies_are_numbered_and_explicit_names_are_skipped() {
        let h = 0xdead_beef_0000_0000;
        let base = base_id("drop", h);
        assert_eq!(base, "drop-deadbeef");
        let ids = assign(&[
            Err(("drop", h)),
            Ok(format!("{base}-2")),
            Err(("drop", h)),
            Err(("drop", h)),
        ]);
        assert_eq!(
            ids,
            vec![
                base.clone(),
                format!("{base}-2"),
                format!("{base}-3"),
                format!("{base}-4")
            ]
        );
    }

    #[test]
    fn a_runs_fault_draws_from_its_id_without_the_run_id() {
        assert_eq!(
            stream_name("slow--brownout-run-7-20261127T045249Z_1a2b3c4d"),
            "slow--brownout-run-7"
        );
        assert_eq!(stream_name("slow--brownout-run-7"), "slow--brownout-run-7");
        assert_eq!(stream_name("slow"), "slow");
        assert_eq!(stream_name("slow--brownout-run-x"), "slow--brownout-run-x");
        // The compiled plan: two runs' copies of one fault share their draws.
        let plan = |id: &str| {
            crate::Plan::from_str_named(
                &format!("faults:\n  - {{id: \"{id}\", kind: drop}}\n"),
                "p",
            )
            .expect("plan")
        };
        let a = plan("x--brownout-run-7-run_a");
        let b = plan("x--brownout-run-7-run_b");
        let c = plan("x--brownout-run-8-run_a");
        assert_eq!(a.faults[0].id_hash, b.faults[0].id_hash);
        assert_ne!(a.faults[0].id_hash, c.faults[0].id_hash);
        assert_ne!(a.faults[0].id, b.faults[0].id);
    }
}
