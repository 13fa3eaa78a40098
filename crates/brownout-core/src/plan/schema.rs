//! The plan's JSON Schema, built from the spec types, and validation against it.
//!
//! Each fault kind's schema is the union of the head keys, the selector keys and the kind's
//! own keys, closed with `additionalProperties: false` so a typo is an error. The same
//! schemas are printed by `brownout plan schema` and used to validate, so they agree.

use super::explain::{Explainer, SchemaError};
use super::spec::{HeadSpec, PlanSpec, SelectorSpec};
use crate::faults::{KindInfo, KINDS};
use jsonschema::Validator;
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{json, Map, Value};
use std::sync::OnceLock;

fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12().into_generator()
}

fn properties_of(schema: &Schema) -> (Map<String, Value>, Vec<Value>) {
    let v = schema.as_value();
    let props = v
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let req = v
        .get("required")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    (props, req)
}

/// The closed object schema of one kind (without `$defs`).
fn kind_object(info: &KindInfo, g: &mut SchemaGenerator) -> Value {
    let mut props = Map::new();
    let mut required = vec![Value::String("kind".into())];
    for s in [
        HeadSpec::json_schema(g),
        SelectorSpec::json_schema(g),
        info.params_schema(g),
    ] {
        let (p, r) = properties_of(&s);
        props.extend(p);
        for x in r {
            if !required.contains(&x) {
                required.push(x);
            }
        }
    }
    if let Some(k) = props.get_mut("kind") {
        *k = json!({"const": info.name, "description": info.summary});
    }
    json!({
        "type": "object",
        "title": info.name,
        "description": info.summary,
        "properties": props,
        "required": required,
        "additionalProperties": false,
    })
}

fn with_defs(mut schema: Value, g: &SchemaGenerator) -> Value {
    let defs: Map<String, Value> = g.definitions().clone().into_iter().collect();
    if !defs.is_empty() {
        schema["$defs"] = Value::Object(defs);
    }
    schema["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
    schema
}

/// The full JSON Schema of a plan file.
pub fn plan_schema() -> Value {
    let mut g = generator();
    let top = PlanSpec::json_schema(&mut g);
    let kinds: Vec<Value> = KINDS.iter().map(|k| kind_object(k, &mut g)).collect();
    let mut schema = top.as_value().clone();
    schema["title"] = json!("brownout fault plan");
    schema["properties"]["faults"] = json!({
        "type": "array",
        "description": "The faults, applied in this order.",
        "items": {"oneOf": kinds},
    });
    with_defs(schema, &g)
}

struct Validators {
    top: (Value, Validator),
    kinds: Vec<(&'static str, Value, Validator)>,
}

fn validators() -> &'static Validators {
    static V: OnceLock<Validators> = OnceLock::new();
    V.get_or_init(|| {
        let mut g = generator();
        let mut top = PlanSpec::json_schema(&mut g).as_value().clone();
        top["properties"]["faults"] = json!({"type": "array", "items": {"type": "object"}});
        let top = with_defs(top, &g);
        let kinds = KINDS
            .iter()
            .map(|k| {
                let mut g = generator();
                let obj = kind_object(k, &mut g);
                let schema = with_defs(obj, &g);
                let v = compile(&schema);
                (k.name, schema, v)
            })
            .collect();
        let v = compile(&top);
        Validators {
            top: (top, v),
            kinds,
        }
    })
}

fn compile(schema: &Value) -> Validator {
    // The schemas are built from our own types: failing to compile one is a bug in brownout,
    // caught by the unit tests below, not something a plan can cause.
    jsonschema::options()
        .should_validate_formats(false)
        .build(schema)
        .unwrap_or_else(|e| panic!("internal plan schema does not compile: {e}"))
}

/// Every violation of `doc`, explained (see [`explain`](super::explain)), one per location.
fn check(schema: &Value, validator: &Validator, doc: &Value) -> Vec<SchemaError> {
    let explainer = Explainer { root: schema };
    first_per_path(
        validator
            .iter_errors(doc)
            .flat_map(|e| explainer.explain(&e)),
    )
}

/// Check the top level of a plan (fault bodies are checked per kind).
pub fn check_top(doc: &Value) -> Vec<SchemaError> {
    let (schema, v) = &validators().top;
    check(schema, v, doc)
}

/// One error per location is enough: a `null` where an enum belongs fails both the type
/// and the enum, and saying it twice helps nobody.
/// At most [`MAX_ERRORS`](super::MAX_ERRORS) are found: the validator stops there, so a
/// document with a hundred thousand bad keys costs no more than one with a hundred.
fn first_per_path(errors: impl Iterator<Item = SchemaError>) -> Vec<SchemaError> {
    let mut seen = std::collections::HashSet::new();
    errors
        .filter(|e| seen.insert(e.0.clone()))
        .take(super::MAX_ERRORS)
        .collect()
}

/// Check one fault against its kind's closed schema. Paths are relative to the fault.
pub fn check_fault(info: &KindInfo, fault: &Value) -> Vec<SchemaError> {
    let Some((_, schema, v)) = validators().kinds.iter().find(|(n, _, _)| *n == info.name) else {
        return Vec::new();
    };
    check(schema, v, fault)
}

/// Validate any document against the schema of `T` (closed objects come from
/// `#[serde(deny_unknown_fields)]`); used for workload files, which share the plan's errors.
pub fn check_document<T: JsonSchema>(doc: &Value) -> Vec<SchemaError> {
    let mut g = generator();
    let root = T::json_schema(&mut g);
    let mut schema = with_defs(root.as_value().clone(), &g);
    close_objects(&mut schema);
    let v = compile(&schema);
    check(&schema, &v, doc)
}

/// Close every object schema that lists its properties, so a typo anywhere is an error
/// (nested types without `deny_unknown_fields`, such as a latency model, included).
fn close_objects(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if m.contains_key("properties") && !m.contains_key("additionalProperties") {
                m.insert("additionalProperties".into(), Value::Bool(false));
            }
            m.values_mut().for_each(close_objects);
        }
        Value::Array(a) => a.iter_mut().for_each(close_objects),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_compile_and_are_closed() {
        let s = plan_schema();
        let items = &s["properties"]["faults"]["items"]["oneOf"];
        assert_eq!(items.as_array().map(Vec::len), Some(KINDS.len()));
        assert!(jsonschema::validator_for(&s).is_ok());
        for k in KINDS {
            assert!(
                check_fault(k, &json!({"kind": k.name, "no_such_key": 1}))
                    .iter()
                    .any(|e| e.2.contains("no_such_key")),
                "{}",
                k.name
            );
        }
    }
}
