//! Schema violations → messages a person can act on.
//!
//! A raw JSON Schema error says "not valid under any of the schemas listed in the 'anyOf'
//! keyword". Here every violation names what the key accepts — every allowed value, or the
//! type and range expected, read from the schema the document was checked against — what the
//! document held instead, and a "did you mean" for a misspelt key or value. The wording is
//! generic: plans, workloads and any later document type get the same messages.

use jsonschema::error::ValidationErrorKind;
use jsonschema::ValidationError;
use serde_json::Value;

/// (JSON pointer into the document, point at the key rather than the value, message)
pub type SchemaError = (String, bool, String);

/// Explains the errors of one schema: `root` is the schema the validator was built from,
/// `$defs` included, so an error's schema path can be read in it.
pub struct Explainer<'s> {
    pub root: &'s Value,
}

/// The deepest `$ref` chain [`Explainer::allowed`] follows (the schemas are not recursive; this
/// keeps a future recursive one from looping).
const MAX_REF_DEPTH: usize = 8;

impl Explainer<'_> {
    /// The messages for one validation error (an `anyOf` may stand for several).
    pub fn explain(&self, err: &ValidationError<'_>) -> Vec<SchemaError> {
        let path = err.instance_path().as_str().to_string();
        let parent = self.parent_schema(err);
        let expected = |got: &Value| match parent {
            Some(s) => format!(
                "expected {}, got {}{}",
                self.allowed(s, 0),
                show(got),
                self.hint(s, got)
            ),
            None => err.to_string(),
        };
        match err.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                let known = parent.map(property_names).unwrap_or_default();
                unexpected
                    .iter()
                    .map(|k| {
                        let hint = match super::suggest(k, known.iter().map(String::as_str)) {
                            Some(s) => format!(" (did you mean `{s}`?)"),
                            None if known.is_empty() => String::new(),
                            None => format!("; known keys: {}", known.join(", ")),
                        };
                        (
                            format!("{path}/{}", k.replace('~', "~0").replace('/', "~1")),
                            true,
                            format!("unknown key `{k}`{hint}"),
                        )
                    })
                    .collect()
            }
            ValidationErrorKind::Required { property } => {
                let name = property
                    .as_str()
                    .map_or_else(|| property.to_string(), String::from);
                let what = parent
                    .and_then(|p| p.get("properties"))
                    .and_then(|p| p.get(&name))
                    .map(|s| format!(" ({})", self.allowed(s, 0)))
                    .unwrap_or_default();
                vec![(path, false, format!("missing required key `{name}`{what}"))]
            }
            ValidationErrorKind::Enum { options } => {
                let names: Vec<String> = options
                    .as_array()
                    .map(|a| a.iter().map(plain).collect())
                    .unwrap_or_default();
                let list = names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let message = match err.instance().as_str() {
                    Some(got) => {
                        let hint = super::suggest(got, names.iter().map(String::as_str))
                            .map(|s| format!(" (did you mean `{s}`?)"))
                            .unwrap_or_default();
                        format!("unknown value `{got}`; expected one of {list}{hint}")
                    }
                    None => format!("expected one of {list}, got {}", show(err.instance())),
                };
                vec![(path, false, message)]
            }
            ValidationErrorKind::AnyOf { context }
            | ValidationErrorKind::OneOfNotValid { context } => {
                if let Some(tagged) = parent.and_then(|p| self.tagged_union(p)) {
                    return self.explain_tagged(&path, err.instance(), &tagged, context);
                }
                match self.only_fitting_branch(&path, context) {
                    Some(inner) => inner.iter().flat_map(|e| self.explain(e)).collect(),
                    None => vec![(path, false, expected(err.instance()))],
                }
            }
            ValidationErrorKind::Type { .. }
            | ValidationErrorKind::Constant { .. }
            | ValidationErrorKind::Minimum { .. }
            | ValidationErrorKind::Maximum { .. }
            | ValidationErrorKind::ExclusiveMinimum { .. }
            | ValidationErrorKind::ExclusiveMaximum { .. }
            | ValidationErrorKind::MultipleOf { .. }
            | ValidationErrorKind::Pattern { .. }
            | ValidationErrorKind::MinLength { .. }
            | ValidationErrorKind::MaxLength { .. }
            | ValidationErrorKind::MinItems { .. }
            | ValidationErrorKind::MaxItems { .. } => vec![(path, false, expected(err.instance()))],
            _ => vec![(path, false, err.to_string())],
        }
    }

    /// An `anyOf`/`oneOf` of mappings told apart by one key's constant value (serde's
    /// internally tagged enums: `arrival: {mode: closed, …}`): the key and each branch's value.
    fn tagged_union(&self, schema: &Value) -> Option<(String, Vec<String>)> {
        let alts = ["anyOf", "oneOf"]
            .iter()
            .find_map(|k| schema.get(*k).and_then(Value::as_array))?;
        let mut tag: Option<String> = None;
        let mut values = Vec::new();
        for alt in alts {
            let props = self.resolve(alt).get("properties")?.as_object()?;
            let (key, value) = props.iter().find_map(|(k, v)| {
                let v = self.resolve(v);
                let c = v.get("const").or_else(|| {
                    v.get("enum")
                        .and_then(Value::as_array)
                        .filter(|e| e.len() == 1)
                        .and_then(|e| e.first())
                })?;
                Some((k.clone(), plain(c)))
            })?;
            match &tag {
                Some(t) if *t != key => return None,
                _ => tag = Some(key),
            }
            values.push(value);
        }
        Some((tag?, values))
    }

    fn explain_tagged(
        &self,
        path: &str,
        got: &Value,
        (tag, values): &(String, Vec<String>),
        context: &[Vec<ValidationError<'static>>],
    ) -> Vec<SchemaError> {
        let list = values
            .iter()
            .map(|v| format!("`{v}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let Some(obj) = got.as_object() else {
            let message = format!("expected a mapping with `{tag}`: {list}, got {}", show(got));
            return vec![(path.to_string(), false, message)];
        };
        let Some(value) = obj.get(tag) else {
            let message = format!("missing required key `{tag}` (one of {list})");
            return vec![(path.to_string(), false, message)];
        };
        let text = plain(value);
        if let Some(i) = values.iter().position(|v| *v == text) {
            if let Some(branch) = context.get(i) {
                return branch.iter().flat_map(|e| self.explain(e)).collect();
            }
        }
        let hint = super::suggest(&text, values.iter().map(String::as_str))
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        let at = format!("{path}/{}", tag.replace('~', "~0").replace('/', "~1"));
        vec![(
            at,
            false,
            format!("unknown value `{text}`; expected one of {list}{hint}"),
        )]
    }

    /// Of an `anyOf`'s alternatives, the one the value's type fits, when there is exactly one
    /// and its errors are about what is inside the value (a key, an enum value): then those
    /// errors say more than "none of the alternatives". `Option<T>` is `anyOf [T, null]`.
    fn only_fitting_branch<'e>(
        &self,
        path: &str,
        context: &'e [Vec<ValidationError<'static>>],
    ) -> Option<&'e [ValidationError<'static>]> {
        let mut fitting = context.iter().filter(|branch| fits(path, branch));
        let branch = fitting.next()?;
        if fitting.next().is_some() || branch.is_empty() {
            return None;
        }
        let inside = branch.iter().all(|e| {
            e.instance_path().as_str() != path
                || matches!(
                    e.kind(),
                    ValidationErrorKind::AdditionalProperties { .. }
                        | ValidationErrorKind::Required { .. }
                        | ValidationErrorKind::Enum { .. }
                        | ValidationErrorKind::AnyOf { .. }
                        | ValidationErrorKind::OneOfNotValid { .. }
                )
        });
        inside.then_some(branch.as_slice())
    }

    /// A likely fix for a value of the wrong type: a lone item where a list belongs, a
    /// quoted number where a number belongs.
    fn hint(&self, schema: &Value, got: &Value) -> String {
        let s = self.resolve(schema);
        let types: Vec<&str> = match s.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let wants = |t: &str| types.contains(&t);
        match got {
            Value::String(text) if wants("array") => {
                format!(" (a list of one is written [{}])", got_json(text))
            }
            Value::Number(_) | Value::Bool(_) if wants("array") => {
                format!(" (a list of one is written [{got}])")
            }
            Value::String(text) if wants("number") || wants("integer") => {
                match text.trim().parse::<f64>() {
                    // A number too large for a 64-bit float reaches here as its text,
                    // quoted or not: saying "remove the quotes" would send the user in circles.
                    Ok(n) if !n.is_finite() => {
                        format!(" ({} is too large to be a number here)", text.trim())
                    }
                    Ok(_) => format!(" (write the number without quotes: {})", text.trim()),
                    Err(_) => String::new(),
                }
            }
            _ => String::new(),
        }
    }

    /// The schema that holds the failing keyword (`…/properties/x` for `…/properties/x/type`).
    fn parent_schema(&self, err: &ValidationError<'_>) -> Option<&Value> {
        let p = err.schema_path().as_str();
        let cut = p.rfind('/')?;
        self.root.pointer(&p[..cut])
    }

    fn resolve<'v>(&'v self, schema: &'v Value) -> &'v Value {
        match schema.get("$ref").and_then(Value::as_str) {
            Some(r) => r
                .strip_prefix('#')
                .and_then(|p| self.root.pointer(p))
                .unwrap_or(schema),
            None => schema,
        }
    }

    /// What a schema accepts, in words: "one of `a`, `b`", "a number from 0 to 1", "a number
    /// ≥ 0 or a string such as \"500ms\"". `null` alternatives are left out: leaving a key
    /// out is how a document says "the default".
    pub fn allowed(&self, schema: &Value, depth: usize) -> String {
        let s = self.resolve(schema);
        if depth > MAX_REF_DEPTH {
            return "a valid value".into();
        }
        if let Some(v) = s.get("const") {
            return format!("`{}`", plain(v));
        }
        if let Some(opts) = s.get("enum").and_then(Value::as_array) {
            let list: Vec<String> = opts.iter().map(|o| format!("`{}`", plain(o))).collect();
            return format!("one of {}", list.join(", "));
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(alts) = s.get(key).and_then(Value::as_array) {
                let words: Vec<String> = alts
                    .iter()
                    .filter(|a| !is_null_schema(self.resolve(a)))
                    .map(|a| self.allowed(a, depth + 1))
                    .collect();
                return join_or(&words);
            }
        }
        let types: Vec<&str> = match s.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let words: Vec<String> = types
            .iter()
            .filter(|t| **t != "null")
            .map(|t| self.typed(t, s, depth))
            .collect();
        if words.is_empty() {
            "any value".into()
        } else {
            join_or(&words)
        }
    }

    fn typed(&self, ty: &str, s: &Value, depth: usize) -> String {
        match ty {
            "number" | "integer" => {
                let noun = if ty == "integer" {
                    "an integer"
                } else {
                    "a number"
                };
                let min = s.get("minimum").map(|v| (v, "≥"));
                let min = min.or(s.get("exclusiveMinimum").map(|v| (v, ">")));
                let max = s.get("maximum").map(|v| (v, "≤"));
                let max = max.or(s.get("exclusiveMaximum").map(|v| (v, "<")));
                match (min, max) {
                    (Some((lo, "≥")), Some((hi, "≤"))) => format!("{noun} from {lo} to {hi}"),
                    (Some((lo, a)), Some((hi, b))) => format!("{noun} {a} {lo} and {b} {hi}"),
                    (Some((lo, a)), None) => format!("{noun} {a} {lo}"),
                    (None, Some((hi, b))) => format!("{noun} {b} {hi}"),
                    (None, None) => noun.into(),
                }
            }
            "string" => {
                let examples: Vec<String> = s
                    .get("examples")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().map(|e| e.to_string()).collect())
                    .unwrap_or_default();
                match (
                    examples.is_empty(),
                    s.get("pattern").and_then(Value::as_str),
                ) {
                    (false, _) => format!("a string such as {}", examples.join(", ")),
                    (true, Some(p)) => format!("a string matching `{p}`"),
                    (true, None) => "a string".into(),
                }
            }
            "boolean" => "true or false".into(),
            "array" => {
                let items = s
                    .get("items")
                    .map(|i| format!(" of {}", plural(&self.allowed(i, depth + 1))))
                    .unwrap_or_default();
                match s.get("minItems").and_then(Value::as_u64) {
                    Some(n) if n > 0 => format!("a list of at least {n}{items}"),
                    _ => format!("a list{items}"),
                }
            }
            "object" => {
                let keys = property_names(s);
                if keys.is_empty() {
                    "a mapping".into()
                } else {
                    let keys: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
                    format!("a mapping with keys {}", keys.join(", "))
                }
            }
            other => format!("a {other}"),
        }
    }
}

/// Whether a value's type fits an alternative: no type mismatch at the value itself.
fn fits(path: &str, branch: &[ValidationError<'_>]) -> bool {
    branch.iter().all(|e| {
        e.instance_path().as_str() != path
            || match e.kind() {
                ValidationErrorKind::Type { .. } | ValidationErrorKind::Constant { .. } => false,
                ValidationErrorKind::AnyOf { context }
                | ValidationErrorKind::OneOfNotValid { context } => {
                    context.iter().any(|b| fits(path, b))
                }
                _ => true,
            }
    })
}

fn got_json(text: &str) -> String {
    Value::String(text.to_string()).to_string()
}

/// "a string" → "strings", for "a list of strings"; other phrases are left as they are.
fn plural(words: &str) -> String {
    for (one, many) in [
        ("a string", "strings"),
        ("a number", "numbers"),
        ("an integer", "integers"),
        ("a mapping", "mappings"),
        ("a list", "lists"),
    ] {
        if let Some(rest) = words.strip_prefix(one) {
            if !rest.contains(" or ") {
                return format!("{many}{rest}");
            }
        }
    }
    words.to_string()
}

fn is_null_schema(s: &Value) -> bool {
    s.get("type").and_then(Value::as_str) == Some("null")
}

fn property_names(schema: &Value) -> Vec<String> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

fn join_or(words: &[String]) -> String {
    match words {
        [] => "any value".into(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// A value as it appears in a list of choices: strings bare, others as JSON.
fn plain(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), String::from)
}

/// What the document held, short: JSON text, cut after 60 characters.
fn show(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(60) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}
