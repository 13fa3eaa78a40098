//! `corrupt`: a well-formed, wrong answer — values change, the schema still holds.
//!
//! The dangerous corruption is not a malformed answer (clients reject it) but a valid one
//! that lies. `corrupt` changes one value of a `tools/call` result's `structuredContent`
//! (or of the JSON inside its text when there is no structured content) and keeps the result
//! valid against the tool's advertised `outputSchema`: every candidate is validated and the
//! first that passes is used; when none does, the call passes untouched and uncounted. The
//! same change is mirrored into text items that carry the same JSON, so a client reading
//! either sees one story. `path` (a JSON pointer) picks the field; without it a leaf is
//! drawn per call, preferring values distinctive enough to follow (see `crate::taint`).
//! Modes:
//!
//! - `perturb` (default): a number nudged within its bounds and step, a string turned into a
//!   plausible sibling, an enum moved to another member ([`super::perturb`]);
//! - `swap`: another value of the same type from the same result;
//! - `stale`: a value this tool returned at the same place earlier in the session, for
//!   another call (the first such call has none: it passes untouched).

use super::perturb;
use super::simulated::SimOutcome;
use super::{Ctx, Invalid, KindInfo, ResultRewrite, Shaping, CALLS};
use crate::rng::SplitMix;
use crate::select::Direction;
use rustc_hash::FxHashMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Earlier values kept per (tool, field) for `stale`, and fields kept per session.
const STALE_VALUES: usize = 16;
const STALE_FIELDS: usize = 256;
/// Candidates tried (each validated against the schema).
const TRIES: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    Perturb,
    Swap,
    Stale,
}

impl Mode {
    fn as_str(self) -> &'static str {
        match self {
            Mode::Perturb => "perturb",
            Mode::Swap => "swap",
            Mode::Stale => "stale",
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct Corrupt {
    /// JSON pointer of the value inside the structured result (or the JSON in its text),
    /// e.g. `/service` (default: a leaf drawn per call).
    #[serde(default)]
    pub path: Option<String>,
    /// `perturb` (a nearby value the schema allows; the default), `swap` (another value of
    /// the same type from the same result) or `stale` (a value this tool returned earlier).
    #[serde(default)]
    pub mode: Mode,
}

/// What `stale` remembers in a session: (tool, pointer) → earlier values, newest last.
#[derive(Default)]
struct History(FxHashMap<(String, String), Vec<Value>>);

impl History {
    fn remember(&mut self, tool: &str, leaves: &[(String, &Value)]) {
        for (p, v) in leaves {
            let key = (tool.to_string(), p.clone());
            if !self.0.contains_key(&key) && self.0.len() >= STALE_FIELDS {
                continue;
            }
            let seen = self.0.entry(key).or_default();
            if !seen.contains(v) {
                if seen.len() >= STALE_VALUES {
                    seen.remove(0);
                }
                seen.push((*v).clone());
            }
        }
    }
}

impl Corrupt {
    pub fn apply(&self, c: &mut Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        let tool = c.tool?.to_string();
        let mut rng = SplitMix::new(c.mutation_seed());
        let result = s.value_mut()?.get_mut("result")?;
        if result.get("isError").and_then(Value::as_bool) == Some(true) {
            return None;
        }
        let structured = result
            .get("structuredContent")
            .is_some_and(|v| v.is_object() || v.is_array());
        let mut doc: Value = if structured {
            result.get("structuredContent")?.clone()
        } else {
            first_json_text(result)?
        };
        let mut all = Vec::new();
        crate::taint::leaves(&doc, "", &mut all);
        let stale = self.mode == Mode::Stale;
        let pointer = match &self.path {
            Some(p) => p.clone(),
            None => {
                let raw = c.schema.map(|sc| &sc.raw);
                let good: Vec<&(String, &Value)> = all
                    .iter()
                    .filter(|(p, v)| {
                        crate::taint::distinctive(v)
                            && !raw.is_some_and(|r| perturb::enumerated(r, p))
                    })
                    .collect();
                let pool: Vec<&(String, &Value)> = if good.is_empty() {
                    all.iter().collect()
                } else {
                    good
                };
                if pool.is_empty() {
                    if stale {
                        c.state.get::<History>().remember(&tool, &all);
                    }
                    return None;
                }
                pool[rng.below(pool.len())].0.clone()
            }
        };
        let old = doc.pointer(&pointer).filter(|v| is_scalar(v))?.clone();
        let field_schema = c
            .schema
            .and_then(|sc| perturb::leaf_schema(&sc.raw, &pointer));
        let mut options: Vec<Value> = match self.mode {
            Mode::Perturb => perturb::candidates(&old, field_schema, &mut rng),
            Mode::Swap => same_type(&all, &pointer, &old),
            Mode::Stale => c
                .state
                .get::<History>()
                .0
                .get(&(tool.clone(), pointer.clone()))
                .map(|seen| seen.iter().rev().filter(|v| **v != old).cloned().collect())
                .unwrap_or_default(),
        };
        if self.mode == Mode::Swap {
            shuffle(&mut options, &mut rng);
        }
        // Only `stale` needs what the tool returned before.
        if stale {
            c.state.get::<History>().remember(&tool, &all);
        }
        let validator = c.schema.map(|sc| &sc.validator);
        let new = options.into_iter().take(TRIES).find(|cand| {
            let Some(slot) = doc.pointer_mut(&pointer) else {
                return false;
            };
            *slot = cand.clone();
            validator.is_none_or(|v| v.is_valid(&doc))
        })?;
        if let Some(slot) = doc.pointer_mut(&pointer) {
            *slot = new.clone();
        }
        if structured {
            result["structuredContent"] = doc;
        }
        let mirrored = mirror_text(result, &pointer, &old, &new);
        if !structured && mirrored == 0 {
            return None;
        }
        s.mark_mutated();
        Some(format!(
            "corrupt ({}): `{pointer}` now holds another {} (schema {})",
            self.mode.as_str(),
            kind_of(&old),
            if c.schema.is_some() {
                "still valid"
            } else {
                "not advertised"
            }
        ))
    }
}

fn is_scalar(v: &Value) -> bool {
    matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_))
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "boolean",
        _ => "value",
    }
}

fn shuffle<T>(v: &mut [T], rng: &mut SplitMix) {
    for i in (1..v.len()).rev() {
        v.swap(i, rng.below(i + 1));
    }
}

/// Other values of the same JSON type (an integer for an integer) in the document.
fn same_type(all: &[(String, &Value)], pointer: &str, old: &Value) -> Vec<Value> {
    let integer = |v: &Value| v.as_i64().is_some() || v.as_u64().is_some();
    let mut out: Vec<Value> = Vec::new();
    for (p, v) in all {
        let same = match (old, v) {
            (Value::String(_), Value::String(_)) | (Value::Bool(_), Value::Bool(_)) => true,
            (Value::Number(_), Value::Number(_)) => integer(old) == integer(v),
            _ => false,
        };
        if same && p != pointer && *v != old && !out.contains(v) {
            out.push((*v).clone());
        }
    }
    out
}

/// The JSON document inside the result's first text item that holds one.
fn first_json_text(result: &Value) -> Option<Value> {
    result
        .get("content")?
        .as_array()?
        .iter()
        .filter_map(|i| i.get("text").and_then(Value::as_str))
        .filter_map(|t| serde_json::from_str::<Value>(t).ok())
        .find(|v| v.is_object() || v.is_array())
}

/// Put `new` at `pointer` in every text item whose JSON holds `old` there; how many.
fn mirror_text(result: &mut Value, pointer: &str, old: &Value, new: &Value) -> usize {
    let Some(Value::Array(items)) = result.get_mut("content") else {
        return 0;
    };
    let mut n = 0;
    for item in items.iter_mut() {
        let Some(Value::String(text)) = item.get_mut("text") else {
            continue;
        };
        let Ok(mut parsed) = serde_json::from_str::<Value>(text) else {
            continue;
        };
        if let Some(slot) = parsed.pointer_mut(pointer).filter(|v| **v == *old) {
            *slot = new.clone();
            *text = parsed.to_string();
            n += 1;
        }
    }
    n
}

pub const KIND: KindInfo = KindInfo::of::<Corrupt>(
    "corrupt",
    "change a value of a result and keep it valid against the tool's outputSchema",
    CALLS,
    Direction::ToClient,
    r#"{}"#,
);

impl ResultRewrite for Corrupt {
    fn check(&self) -> Vec<Invalid> {
        match &self.path {
            Some(p) if !p.starts_with('/') => vec![Invalid::value(
                "path",
                format!("`{p}` is not a JSON pointer: write it from the root, e.g. `/service`"),
            )],
            _ => Vec::new(),
        }
    }

    fn rewrite(&self, c: &mut Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        self.apply(c, s)
    }

    fn simulated(&self) -> SimOutcome {
        SimOutcome::Wrong
    }
}

#[cfg(test)]
mod tests;
