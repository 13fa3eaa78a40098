//! What a design reads from a target's tools: which ones the load may call for real (never
//! one that may write, unless the operator's policy names it in `load_tools`; never one that
//! needs the client's own help), their shape (list-like, declared output, plain), example
//! arguments from their input schemas, and which one a scenario should aim at — a tool the
//! goal names first.

use crate::target::writes::{callable, may_write, words};
use brownout_experiment::experiment::policy::Policy;
use rmcp::model::Tool;
use serde_json::{json, Map, Value};

/// The shape of a tool, as far as its name, annotations and schemas tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// It may write (the policy's `load_tools` lets the load call it anyway).
    Write,
    /// It declares an `outputSchema`.
    Declared,
    /// list/search/find/query…: its answers are collections.
    List,
    /// Anything else.
    Plain,
}

const LIST_WORDS: &[&str] = &["list", "search", "find", "query", "browse", "lookup"];
/// Tools that need the client to do something (sampling, elicitation): not load material.
const INTERACTIVE: &[&str] = &["sampl", "elicit", "llm", "prompt", "roots"];

pub fn shape(t: &Tool) -> Shape {
    if may_write(t).is_some() {
        return Shape::Write;
    }
    if t.output_schema.is_some() {
        return Shape::Declared;
    }
    if words(&t.name)
        .iter()
        .any(|x| LIST_WORDS.contains(&x.as_str()))
    {
        return Shape::List;
    }
    Shape::Plain
}

/// Whether a tool needs the client's own help (sampling, elicitation, roots).
pub fn interactive(t: &Tool) -> bool {
    words(&t.name)
        .iter()
        .any(|w| INTERACTIVE.iter().any(|i| w.starts_with(i)))
}

/// The tools a designed load may call, best first: one the goal names, then read-only
/// tools before write tools the policy allows, then by name.
pub fn load_tools<'a>(tools: &'a [Tool], policy: &Policy, goal: &str) -> Vec<&'a Tool> {
    let mut v: Vec<&Tool> = tools
        .iter()
        .filter(|t| callable(t, policy) && !interactive(t))
        .collect();
    v.sort_by_key(|t| {
        (
            !named_in(goal, &t.name),
            shape(t) == Shape::Write,
            t.name.to_string(),
        )
    });
    v
}

/// Whether the goal's text names the tool.
pub fn named_in(goal: &str, name: &str) -> bool {
    !goal.is_empty() && !name.is_empty() && goal.to_lowercase().contains(&name.to_lowercase())
}

/// The tool a scenario aims at among the load's: one the goal names, else the first of the
/// wanted shapes (in order), else the first read-only one, else the first.
pub fn aim<'a>(load: &[&'a Tool], goal: &str, wanted: &[Shape]) -> Option<&'a Tool> {
    if let Some(t) = load.iter().find(|t| named_in(goal, &t.name)) {
        return Some(t);
    }
    for w in wanted {
        if let Some(t) = load.iter().find(|t| shape(t) == *w) {
            return Some(t);
        }
    }
    load.iter()
        .find(|t| shape(t) != Shape::Write)
        .or(load.first())
        .copied()
}

/// Example arguments that satisfy an input schema's required properties.
pub fn example(schema: &Value, depth: u32) -> Value {
    if depth > 4 {
        return Value::Null;
    }
    if let Some(e) = schema["enum"].as_array().and_then(|e| e.first()) {
        return e.clone();
    }
    if let Some(d) = schema.get("default") {
        return d.clone();
    }
    let ty = match &schema["type"] {
        Value::String(s) => s.as_str(),
        Value::Array(a) => a
            .iter()
            .find_map(|t| t.as_str().filter(|t| *t != "null"))
            .unwrap_or("string"),
        _ if schema["properties"].is_object() => "object",
        _ => "string",
    };
    match ty {
        "object" => {
            let mut m = Map::new();
            let required: Vec<&str> = schema["required"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if let Some(props) = schema["properties"].as_object() {
                for (k, v) in props.iter().filter(|(k, _)| required.contains(&k.as_str())) {
                    m.insert(k.clone(), example(v, depth + 1));
                }
            }
            Value::Object(m)
        }
        "integer" => json!(schema["minimum"].as_i64().unwrap_or(1).max(1)),
        "number" => json!(schema["minimum"].as_f64().unwrap_or(1.0).max(1.0)),
        "boolean" => json!(false),
        "array" => json!([]),
        _ => json!(if schema["minLength"].as_u64().unwrap_or(0) > 8 {
            "brownout-probe-value"
        } else {
            "brownout"
        }),
    }
}

/// A tool's example arguments.
pub fn arguments(t: &Tool) -> Value {
    example(&Value::Object((*t.input_schema).clone()), 0)
}

/// The first top-level field an output schema declares, as a JSON pointer.
pub fn declared_field(t: &Tool) -> Option<String> {
    let s = t.output_schema.as_ref()?;
    let props = s.get("properties")?.as_object()?;
    props
        .keys()
        .next()
        .map(|k| format!("/{}", k.replace('~', "~0").replace('/', "~1")))
}
