//! Which of a target's tools may write, and the check that an experiment started through
//! `brownout mcp` never sends a real call to one.
//!
//! A tool *may write* when it is annotated destructive, or is not annotated read-only, or
//! has a write verb anywhere in its name (words split on non-alphanumerics and camelCase):
//! annotations are the target's word, so a `drop_table` that claims `readOnlyHint: true`
//! still counts as a write. The load and the steady-state probes of an MCP-started
//! experiment call only tools that do not, unless the operator's policy names the tool in
//! `load_tools`; a tool the target does not list counts as one that may write.
//! (`mcp::describe::check_target` runs [`check_load`] against the target as it describes
//! itself when the experiment starts.)

use brownout_experiment::experiment::load::Loaded;
use brownout_experiment::experiment::policy::{Policy, Refusal};
use std::collections::BTreeSet;

/// Verbs that name a change of state (a word of a tool's name equal to one: a write).
pub const WRITE_VERBS: &[&str] = &[
    "add",
    "append",
    "apply",
    "approve",
    "archive",
    "assign",
    "ban",
    "block",
    "book",
    "buy",
    "cancel",
    "charge",
    "checkout",
    "clear",
    "close",
    "commit",
    "create",
    "deactivate",
    "delete",
    "deploy",
    "destroy",
    "disable",
    "drop",
    "edit",
    "enable",
    "erase",
    "exec",
    "execute",
    "flush",
    "grant",
    "import",
    "insert",
    "install",
    "invite",
    "invoke",
    "kill",
    "launch",
    "lock",
    "merge",
    "migrate",
    "modify",
    "move",
    "mutate",
    "open",
    "order",
    "patch",
    "pay",
    "post",
    "publish",
    "purchase",
    "purge",
    "push",
    "put",
    "reboot",
    "refund",
    "register",
    "reject",
    "release",
    "remove",
    "rename",
    "replace",
    "reset",
    "restart",
    "restore",
    "revert",
    "revoke",
    "rollback",
    "rotate",
    "run",
    "save",
    "scale",
    "schedule",
    "send",
    "set",
    "shutdown",
    "sign",
    "start",
    "stop",
    "submit",
    "suspend",
    "terminate",
    "transfer",
    "truncate",
    "uninstall",
    "unlock",
    "update",
    "upload",
    "upsert",
    "wipe",
    "withdraw",
    "write",
];

/// The words of a tool's name: split on anything not alphanumeric and on camelCase,
/// lower-cased.
pub fn words(name: &str) -> Vec<String> {
    name.split(|c: char| !c.is_alphanumeric())
        .flat_map(split_camel)
        .map(|w| w.to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

/// `payInvoice` → `pay`, `Invoice`; `HTTPServer` → `HTTP`, `Server`; `TRUNCATE` stays whole.
fn split_camel(s: &str) -> Vec<String> {
    let cs: Vec<char> = s.chars().collect();
    let mut out = vec![String::new()];
    for (i, &c) in cs.iter().enumerate() {
        let prev = i.checked_sub(1).and_then(|j| cs.get(j)).copied();
        let next = cs.get(i + 1).copied();
        let starts = c.is_uppercase()
            && prev.is_some_and(|p| {
                p.is_lowercase()
                    || p.is_numeric()
                    || (p.is_uppercase() && next.is_some_and(char::is_lowercase))
            });
        if starts {
            out.push(String::new());
        }
        if let Some(w) = out.last_mut() {
            w.push(c);
        }
    }
    out
}

/// Why a tool may write (`None`: annotated read-only, not destructive, no write verb).
pub fn may_write(t: &rmcp::model::Tool) -> Option<String> {
    let a = t.annotations.as_ref();
    if a.and_then(|a| a.destructive_hint) == Some(true) {
        return Some("annotated destructive".into());
    }
    if let Some(v) = words(&t.name)
        .into_iter()
        .find(|w| WRITE_VERBS.contains(&w.as_str()))
    {
        return Some(format!("the write verb \"{v}\" is in its name"));
    }
    if a.and_then(|a| a.read_only_hint) != Some(true) {
        return Some("not annotated read-only".into());
    }
    None
}

/// Whether the load may call this tool for real: it cannot write, or the policy says so.
pub fn callable(t: &rmcp::model::Tool, policy: &Policy) -> bool {
    may_write(t).is_none() || policy.load_tools.iter().any(|n| n == t.name.as_ref())
}

/// The tools an experiment calls for real: every call of its workload, every probe.
pub fn called(x: &Loaded) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = x
        .workload
        .steps
        .iter()
        .flat_map(|s| &s.calls)
        .map(|c| c.tool.clone())
        .collect();
    out.extend(x.spec.steady_state.iter().map(|p| p.call.tool.clone()));
    out
}

/// Refuse an experiment whose load or probes would call a tool that may write (rule
/// `load_tools`), judged against the target's own tool list.
pub fn check_load(x: &Loaded, tools: &[rmcp::model::Tool], policy: &Policy) -> Result<(), Refusal> {
    for name in called(x) {
        if policy.load_tools.contains(&name) {
            continue;
        }
        let why = match tools.iter().find(|t| t.name == name) {
            Some(t) => match may_write(t) {
                Some(why) => why,
                None => continue,
            },
            None => "the target does not list it, so nothing says it is read-only".into(),
        };
        return Err(Refusal {
            rule: "load_tools".into(),
            detail: format!(
                "the load or a probe would call the tool {} for real, and it may write ({why}); an experiment started through MCP calls only read-only tools. Fault it (its calls answered by brownout) without calling it, or the operator names it in the policy's `load_tools`",
                super::untrusted::quote(&name, 80)
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(v: serde_json::Value) -> rmcp::model::Tool {
        serde_json::from_value(v).expect("a tool")
    }

    #[test]
    fn lying_missing_and_destructive_annotations_all_write() {
        let schema = json!({"type": "object"});
        let cases = [
            (
                json!({"name": "restart_service", "inputSchema": schema, "annotations": {"destructiveHint": true}}),
                true,
            ),
            (
                json!({"name": "drop_table", "inputSchema": schema, "annotations": {"readOnlyHint": true}}),
                true,
            ),
            (
                json!({"name": "transferFunds", "inputSchema": schema}),
                true,
            ),
            (json!({"name": "get_status", "inputSchema": schema}), true),
            (
                json!({"name": "get_status", "inputSchema": schema, "annotations": {"readOnlyHint": true}}),
                false,
            ),
            (
                json!({"name": "*", "inputSchema": schema, "annotations": {"readOnlyHint": true}}),
                false,
            ),
            (
                json!({"name": "db.TRUNCATE-all", "inputSchema": schema, "annotations": {"readOnlyHint": true}}),
                true,
            ),
            (
                json!({"name": "get_status", "inputSchema": schema, "annotations": {"readOnlyHint": true, "destructiveHint": true}}),
                true,
            ),
        ];
        for (t, writes) in cases {
            let t = tool(t);
            assert_eq!(
                may_write(&t).is_some(),
                writes,
                "{}: {:?}",
                t.name,
                may_write(&t)
            );
        }
        assert_eq!(words("payInvoice"), vec!["pay", "invoice"]);
        assert_eq!(words("HTTPPostRequest"), vec!["http", "post", "request"]);
        assert_eq!(words("db.TRUNCATE-all"), vec!["db", "truncate", "all"]);
        let mut p = Policy::default();
        let t = tool(json!({"name": "transfer_funds", "inputSchema": schema}));
        assert!(!callable(&t, &p));
        p.load_tools = vec!["transfer_funds".into()];
        assert!(callable(&t, &p));
    }
}
