//! `schema_drift`: return a shape the client did not expect.
//!
//! Mutates `structuredContent` and any JSON inside text content items of a `tools/call`
//! result: `rename` a field, `retype` it (string ↔ number, object → string, …), `drop` it,
//! `nullify` it, or `add` an unexpected one. `path` (a JSON pointer inside the result's
//! structured content) picks the field; without it a field is picked at random, the same
//! one on replay. A client that validates against the tool's `outputSchema` sees the
//! violation; one that does not may act on the drifted data: a silent failure.

use super::simulated::SimOutcome;
use super::{Ctx, Shaping};
use super::{KindInfo, ResultRewrite, CALLS};
use crate::rng::SplitMix;
use crate::select::Direction;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mutation {
    Rename,
    Retype,
    Drop,
    #[serde(rename = "nullify", alias = "null")]
    Nullify,
    Add,
    #[default]
    Random,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    Structured,
    Text,
    #[default]
    Both,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct SchemaDrift {
    /// What to do to the field: `rename`, `retype`, `drop`, `nullify`, `add`, or `random`
    /// (one of those, drawn per call; the default).
    #[serde(default)]
    pub mutation: Mutation,
    /// JSON pointer of the field inside the structured result, e.g. `/severity`
    /// (default: a field drawn at random).
    #[serde(default)]
    pub path: Option<String>,
    /// Which part of the result drifts: `structured`, `text` (JSON in text items) or `both`.
    #[serde(default)]
    pub target: Target,
    /// New name for `rename` (default: the old name with `_v2` appended).
    #[serde(default)]
    pub new_name: Option<String>,
}

const MUTATIONS: [Mutation; 5] = [
    Mutation::Rename,
    Mutation::Retype,
    Mutation::Drop,
    Mutation::Nullify,
    Mutation::Add,
];

impl SchemaDrift {
    pub fn apply(&self, c: &Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        let mut rng = SplitMix::new(c.mutation_seed());
        let mutation = match self.mutation {
            Mutation::Random => MUTATIONS[rng.below(MUTATIONS.len())],
            m => m,
        };
        let result = s.value_mut()?.get_mut("result")?;
        let mut done = Vec::new();
        if self.target != Target::Text {
            if let Some(sc) = result.get_mut("structuredContent") {
                if let Some(d) = self.drift(sc, mutation, &mut rng.clone()) {
                    done.push(format!("structuredContent {d}"));
                }
            }
        }
        if self.target != Target::Structured {
            if let Some(Value::Array(items)) = result.get_mut("content") {
                for item in items.iter_mut() {
                    let Some(Value::String(text)) = item.get_mut("text") else {
                        continue;
                    };
                    let Ok(mut parsed) = serde_json::from_str::<Value>(text) else {
                        continue;
                    };
                    if !(parsed.is_object() || parsed.is_array()) {
                        continue;
                    }
                    if let Some(d) = self.drift(&mut parsed, mutation, &mut rng.clone()) {
                        *text = parsed.to_string();
                        done.push(format!("text JSON {d}"));
                    }
                }
            }
        }
        if done.is_empty() {
            return None;
        }
        s.mark_mutated();
        Some(format!("schema drift: {}", done.join("; ")))
    }

    /// Apply one mutation to a JSON document; describe what changed.
    pub fn drift(&self, doc: &mut Value, mutation: Mutation, rng: &mut SplitMix) -> Option<String> {
        let pointer = match &self.path {
            Some(p) => p.clone(),
            None => {
                let mut fields = Vec::new();
                collect_fields(doc, String::new(), &mut fields);
                if fields.is_empty() {
                    if mutation == Mutation::Add && doc.is_object() {
                        String::new()
                    } else {
                        return None;
                    }
                } else {
                    fields[rng.below(fields.len())].clone()
                }
            }
        };
        if mutation == Mutation::Add {
            let target = if pointer.is_empty() {
                Some(&mut *doc)
            } else {
                parent_of(doc, &pointer).map(|(p, _)| p)
            };
            let obj = target?.as_object_mut()?;
            obj.insert(
                "brownout_unexpected".into(),
                Value::String("drifted".into()),
            );
            return Some(format!(
                "added `brownout_unexpected` beside {}",
                display(&pointer)
            ));
        }
        let (parent, key) = parent_of(doc, &pointer)?;
        let obj: &mut Map<String, Value> = parent.as_object_mut()?;
        let old = obj.get(&key)?.clone();
        match mutation {
            Mutation::Rename => {
                let new = self.new_name.clone().unwrap_or_else(|| format!("{key}_v2"));
                obj.remove(&key);
                obj.insert(new.clone(), old);
                Some(format!("renamed {} to `{new}`", display(&pointer)))
            }
            Mutation::Retype => {
                let new = retype(&old);
                obj.insert(key, new.clone());
                Some(format!(
                    "retyped {} from {} to {}",
                    display(&pointer),
                    type_name(&old),
                    type_name(&new)
                ))
            }
            Mutation::Drop => {
                obj.remove(&key);
                Some(format!("dropped {}", display(&pointer)))
            }
            Mutation::Nullify => {
                obj.insert(key, Value::Null);
                Some(format!("nulled {}", display(&pointer)))
            }
            Mutation::Add | Mutation::Random => None,
        }
    }
}

fn display(pointer: &str) -> String {
    format!("`{pointer}`")
}

/// Every object field, depth first, as JSON pointers.
fn collect_fields(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                let p = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                out.push(p.clone());
                collect_fields(child, p, out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                collect_fields(child, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

fn parent_of<'v>(doc: &'v mut Value, pointer: &str) -> Option<(&'v mut Value, String)> {
    let cut = pointer.rfind('/')?;
    let key = pointer[cut + 1..].replace("~1", "/").replace("~0", "~");
    let parent = if cut == 0 {
        doc
    } else {
        doc.pointer_mut(&pointer[..cut])?
    };
    Some((parent, key))
}

fn retype(v: &Value) -> Value {
    match v {
        Value::String(s) => s
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::from(s.len()), Value::Number),
        Value::Number(n) => Value::String(n.to_string()),
        Value::Bool(b) => Value::String(b.to_string()),
        Value::Array(a) => Value::String(Value::Array(a.clone()).to_string()),
        Value::Object(o) => Value::String(Value::Object(o.clone()).to_string()),
        Value::Null => Value::from(0),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "boolean",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => "null",
    }
}

pub const KIND: KindInfo = KindInfo::of::<SchemaDrift>(
    "schema_drift",
    "rename, retype, drop, null or add fields of structured and JSON text results",
    CALLS,
    Direction::ToClient,
    r#"{}"#,
);

impl ResultRewrite for SchemaDrift {
    /// A drifted result breaks the schema: `correctness` sees it.
    fn breaks_output_schema(&self) -> bool {
        true
    }

    fn rewrite(&self, c: &mut Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        self.apply(c, s)
    }

    fn simulated(&self) -> SimOutcome {
        SimOutcome::Corrupt
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn drift(m: Mutation, path: Option<&str>, doc: Value) -> (Value, Option<String>) {
        let sd = SchemaDrift {
            mutation: m,
            path: path.map(String::from),
            ..Default::default()
        };
        let mut d = doc;
        let out = sd.drift(&mut d, m, &mut SplitMix::new(3));
        (d, out)
    }

    #[test]
    fn each_mutation_changes_the_shape() {
        let doc = json!({"id": "INC-1", "severity": 2, "tags": ["a"]});
        assert_eq!(
            drift(Mutation::Rename, Some("/id"), doc.clone()).0,
            json!({"id_v2": "INC-1", "severity": 2, "tags": ["a"]})
        );
        assert_eq!(
            drift(Mutation::Retype, Some("/severity"), doc.clone()).0["severity"],
            json!("2")
        );
        assert_eq!(
            drift(Mutation::Retype, Some("/id"), doc.clone()).0["id"],
            json!(5)
        );
        assert!(drift(Mutation::Drop, Some("/tags"), doc.clone())
            .0
            .get("tags")
            .is_none());
        assert_eq!(
            drift(Mutation::Nullify, Some("/id"), doc.clone()).0["id"],
            Value::Null
        );
        assert_eq!(
            drift(Mutation::Add, None, json!({})).0["brownout_unexpected"],
            "drifted"
        );
        assert_eq!(drift(Mutation::Drop, Some("/missing"), doc.clone()).1, None);
    }

    #[test]
    fn random_field_is_nested_and_reproducible() {
        let doc = json!({"a": {"b": 1, "c": [{"d": true}]}});
        let (x, dx) = drift(Mutation::Nullify, None, doc.clone());
        let (y, dy) = drift(Mutation::Nullify, None, doc.clone());
        assert_eq!(x, y);
        assert_eq!(dx, dy);
        assert_ne!(x, doc);
    }
}
