//! Agents that chain results: an argument may take its value from an earlier step's result
//! (`service: {from: get_incident, path: /service}`), and the agent's policy (`client.agent.
//! policy`) says what it does with a result before it acts on it: `trust` it, `validate` it
//! against the tool's `outputSchema` (re-fetching once a result that breaks it), or `verify`
//! it (reading it twice, a third time when the two disagree). Shared by the simulator and live
//! load (`brownout load`), so one workload means the same thing in both; see
//! `docs/load.md` ("Chained arguments and agent policies").

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What the agent does with a result a later step takes a value from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// Act on the result as it is.
    #[default]
    Trust,
    /// Check it against the tool's `outputSchema`; a result that breaks it is read again
    /// once with the same arguments, and the task fails if that one breaks it too. A wrong
    /// value that keeps the schema (`corrupt`) passes.
    Validate,
    /// Read it twice with the same arguments and compare the values later steps take; when
    /// they disagree, read a third time and take the value two reads agree on; none: the
    /// task fails.
    Verify,
}

impl Policy {
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Trust => "trust",
            Policy::Validate => "validate",
            Policy::Verify => "verify",
        }
    }
}

/// The agent that plays the workload: `client: {agent: {policy: verify}}`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Agent {
    /// `trust` (default), `validate` or `verify`.
    #[serde(default)]
    pub policy: Policy,
}

/// An argument whose value comes from an earlier result: `{from: TOOL, path: POINTER}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FromRef {
    /// The argument's name.
    pub arg: String,
    pub tool: String,
    /// A JSON pointer into the tool's result (its `structuredContent`, else the JSON in its
    /// first text item).
    pub path: String,
}

/// Is this argument value a reference? An object whose keys are `from` (and `path`).
pub fn is_ref(v: &Value) -> bool {
    v.as_object().is_some_and(|o| o.contains_key("from"))
}

/// The references among a call's arguments, in argument order; malformed ones are left out
/// (the workload check reports them).
pub fn refs(args: Option<&Map<String, Value>>) -> Vec<FromRef> {
    args.into_iter()
        .flatten()
        .filter_map(|(k, v)| {
            let o = v.as_object()?;
            if o.len() != 2 {
                return None;
            }
            Some(FromRef {
                arg: k.clone(),
                tool: o.get("from")?.as_str()?.to_string(),
                path: o.get("path")?.as_str()?.to_string(),
            })
        })
        .collect()
}

/// Why `p` is not a JSON pointer (RFC 6901), if it is not.
pub fn pointer_error(p: &str) -> Option<String> {
    if !p.is_empty() && !p.starts_with('/') {
        return Some(format!(
            "`{p}` is not a JSON pointer: it starts with `/` (did you mean `/{p}`?), or is empty for the whole result"
        ));
    }
    let mut chars = p.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.peek(), Some('0' | '1')) {
            return Some(format!(
                "`{p}` is not a JSON pointer: `~` is written `~0` and `/` inside a key `~1`"
            ));
        }
    }
    None
}

/// What a chained workload needs to know about every call, repeats expanded in the order
/// the steps list them: whether a later step takes a value from its result, and which.
/// Built from a workload's steps by `Chain::of` (in [`crate::workload`], beside the steps it
/// reads: the workload's own checks use this module, so this module does not use it).
#[derive(Debug, Clone, Default)]
pub struct Chain {
    /// Per step, per expanded call: the pointers later steps read from its result (empty:
    /// nobody consumes it).
    pub consumed: Vec<Vec<Vec<String>>>,
    /// Per step: the tools it takes values from.
    pub takes: Vec<Vec<String>>,
}

impl Chain {
    /// Does any step take a value from an earlier result?
    pub fn is_chained(&self) -> bool {
        self.takes.iter().any(|t| !t.is_empty())
    }
}

/// The value a tool's result offers to later steps: its `structuredContent`, else the JSON
/// inside its first text item (else that text as a string). `result` is the JSON-RPC
/// `result` object.
pub fn result_value(result: &Value) -> Option<Value> {
    if let Some(s) = result.get("structuredContent") {
        return Some(s.clone());
    }
    let text = result.get("content")?.as_array()?.iter().find_map(|c| {
        (c.get("type")?.as_str()? == "text")
            .then(|| c.get("text")?.as_str())
            .flatten()
    })?;
    Some(serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_are_checked() {
        assert_eq!(pointer_error(""), None);
        assert_eq!(pointer_error("/service"), None);
        assert_eq!(pointer_error("/a~1b/~0"), None);
        assert!(pointer_error("service").is_some_and(|m| m.contains("did you mean `/service`")));
        assert!(pointer_error("/a~2").is_some());
    }

    #[test]
    fn results_offer_structured_content_else_text_json() {
        let v = serde_json::json!({"structuredContent": {"service": "db"}, "content": []});
        assert_eq!(result_value(&v), Some(serde_json::json!({"service": "db"})));
        let v = serde_json::json!({"content": [{"type": "text", "text": "{\"n\": 3}"}]});
        assert_eq!(result_value(&v), Some(serde_json::json!({"n": 3})));
        let v = serde_json::json!({"content": [{"type": "text", "text": "plain"}]});
        assert_eq!(result_value(&v), Some(Value::String("plain".into())));
        assert_eq!(result_value(&serde_json::json!({"content": []})), None);
    }
}
