//! Every tool call's arguments checked against that tool's own `inputSchema` (catalogue.rs)
//! before dispatch: an undeclared key, a value outside an `enum`, a wrong type or a missing
//! required argument is an InvalidParams error naming the key — never a call answered with
//! something other than what was asked. The validators are compiled once.

use rmcp::ErrorData as McpError;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Every tool's compiled input schema, by name.
fn validators() -> &'static HashMap<String, jsonschema::Validator> {
    static V: OnceLock<HashMap<String, jsonschema::Validator>> = OnceLock::new();
    V.get_or_init(|| {
        super::catalogue::all()
            .into_iter()
            .filter_map(|t| {
                let name = t["name"].as_str()?.to_string();
                let v = jsonschema::validator_for(&t["inputSchema"]).ok()?;
                Some((name, v))
            })
            .collect()
    })
}

/// The arguments of a call to `tool`, against its input schema: `Ok` or InvalidParams with
/// every problem (at most 5), each naming its key.
pub fn check(tool: &str, args: &Value) -> Result<(), McpError> {
    let Some(v) = validators().get(tool) else {
        // A tool without a compiled schema is a bug in the catalogue: refuse, never pass.
        return Err(McpError::internal_error(
            format!("`{tool}` has no input schema"),
            None,
        ));
    };
    let problems: Vec<String> = v.iter_errors(args).take(5).map(|e| describe(&e)).collect();
    if problems.is_empty() {
        return Ok(());
    }
    Err(McpError::invalid_params(
        format!(
            "`{tool}`: {} (tools/list shows its inputSchema)",
            problems.join("; ")
        ),
        None,
    ))
}

/// One problem, naming the argument: `argument `form`: "xml" is not one of …`.
fn describe(e: &jsonschema::ValidationError<'_>) -> String {
    use jsonschema::error::ValidationErrorKind as K;
    let at = e.instance_path().to_string();
    let key = at.trim_start_matches('/').replace('/', ".");
    let clean = |s: &str| super::audit::clean_n(s, 200);
    match e.kind() {
        K::AdditionalProperties { unexpected } => {
            let names: Vec<String> = unexpected
                .iter()
                .map(|u| {
                    if key.is_empty() {
                        format!("`{}`", clean(u))
                    } else {
                        format!("`{key}.{}`", clean(u))
                    }
                })
                .collect();
            format!(
                "unknown argument {} (not declared by the tool)",
                names.join(", ")
            )
        }
        K::Required { property } => {
            let name = property
                .as_str()
                .map_or_else(|| property.to_string(), String::from);
            if key.is_empty() {
                format!("argument `{}` is required", clean(&name))
            } else {
                format!("argument `{key}.{}` is required", clean(&name))
            }
        }
        _ if key.is_empty() => clean(&e.to_string()),
        _ => format!("argument `{key}`: {}", clean(&e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(tool: &str, args: Value) -> String {
        check(tool, &args).expect_err("refused").message.to_string()
    }

    #[test]
    fn every_tool_has_a_compiled_input_schema() {
        for t in super::super::catalogue::all() {
            let n = t["name"].as_str().expect("name");
            assert!(validators().contains_key(n), "{n}");
        }
    }

    #[test]
    fn undeclared_values_and_keys_are_named() {
        let m = message("get_run", json!({"run_id": "r", "form": "xml"}));
        assert!(m.contains("`form`") && m.contains("xml"), "{m}");
        let m = message("get_run", json!({"run_id": "r", "format": "journal"}));
        assert!(m.contains("unknown argument `format`"), "{m}");
        let m = message("get_run", json!({}));
        assert!(m.contains("`run_id` is required"), "{m}");
        let m = message(
            "describe_target",
            json!({"target": {"command": ["x"], "env": {}}}),
        );
        assert!(m.contains("`target.env`"), "{m}");
        assert!(check("get_run", &json!({"run_id": "r", "form": "journal"})).is_ok());
        assert!(check("list_fault_kinds", &json!({})).is_ok());
    }
}
