//! `registry`: make the tool registry lie.
//!
//! Actions, on the tools a fault's `tools` globs name (all tools when absent):
//! - `hide`: leave them out of `tools/list` (calls by name still reach the server);
//! - `remove`: leave them out and answer calls with "Unknown tool" (a dropped tool);
//! - `dangling`: list them as usual but answer calls with "Unknown tool" (a registry that
//!   points at something that is gone);
//! - `phantom`: advertise an extra tool (`phantom_name`) whose calls fail "Unknown tool";
//! - `stale_schema`: serve an out-of-date input/output schema (a property renamed);
//! - `list_changed`: send a spurious `notifications/tools/list_changed` after the response.

use super::simulated::{SimOutcome, SimulatedCall};
use super::{AddedDelay, FaultKind, KindInfo, Phase, Targets, LISTS};
use super::{Ctx, Shaping};
use crate::capability::{Capability, Need};
use crate::rng::SplitMix;
use crate::select::Direction;
use crate::select::Globs;
use crate::splice;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    #[default]
    Hide,
    Remove,
    Dangling,
    Phantom,
    StaleSchema,
    ListChanged,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct Registry {
    /// What the registry does wrong (default `hide`).
    #[serde(default)]
    pub action: Action,
    /// phantom: the advertised tool's name (default `phantom_tool`).
    #[serde(default)]
    pub phantom_name: Option<String>,
    /// phantom: its description.
    #[serde(default)]
    pub phantom_description: Option<String>,
}

/// MCP's error code for an unknown tool (invalid params).
pub const UNKNOWN_TOOL: i64 = -32602;

impl Registry {
    pub fn phantom_name(&self) -> &str {
        self.phantom_name.as_deref().unwrap_or("phantom_tool")
    }

    pub fn acts_on_request(&self) -> bool {
        matches!(
            self.action,
            Action::Remove | Action::Dangling | Action::Phantom
        )
    }

    pub fn acts_on_response(&self) -> bool {
        !matches!(self.action, Action::Dangling)
    }

    /// Whether a `tools/call` of `tool` is one this fault answers in the server's place.
    pub fn fails_call(&self, tool: Option<&str>, targets: Option<&Globs>) -> bool {
        match self.action {
            Action::Phantom => tool == Some(self.phantom_name()),
            Action::Remove | Action::Dangling => {
                tool.is_some_and(|t| targets.is_none_or(|g| g.is_match(t)))
            }
            _ => false,
        }
    }

    /// Short-circuit a call to a tool the registry claims (or denies) exists.
    pub fn apply_request(&self, c: &Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        if c.method != "tools/call" {
            return None;
        }
        let tool = c.tool.unwrap_or_default();
        let msg = format!("Unknown tool: {tool}");
        s.reply = Some(splice::error_response(c.id, UNKNOWN_TOOL, &msg, None));
        Some(
            format!(
                "registry {:?}: call of `{tool}` answered \"{msg}\"",
                self.action
            )
            .to_lowercase(),
        )
    }

    /// Rewrite a `tools/list` result, or queue a spurious `list_changed`.
    pub fn apply_response(
        &self,
        c: &Ctx<'_>,
        targets: Option<&Globs>,
        s: &mut Shaping<'_>,
    ) -> Option<String> {
        if self.action == Action::ListChanged {
            s.extra
                .push(br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#.to_vec());
            return Some("spurious notifications/tools/list_changed".into());
        }
        if c.method != "tools/list" {
            return None;
        }
        let seed = c.mutation_seed();
        let hit = |name: &str| targets.is_none_or(|g| g.is_match(name));
        let tools = s
            .value_mut()?
            .get_mut("result")?
            .get_mut("tools")?
            .as_array_mut()?;
        let detail = match self.action {
            Action::Hide | Action::Remove => {
                let before = tools.len();
                tools.retain(|t| !t.get("name").and_then(Value::as_str).is_some_and(hit));
                let n = before - tools.len();
                if n == 0 {
                    return None;
                }
                format!("{n} tool(s) left out of tools/list")
            }
            Action::Phantom => {
                tools.push(json!({
                    "name": self.phantom_name(),
                    "description": self.phantom_description.as_deref().unwrap_or("A tool the registry advertises but no server provides."),
                    "inputSchema": {"type": "object", "properties": {}},
                }));
                format!("phantom tool `{}` advertised", self.phantom_name())
            }
            Action::StaleSchema => {
                let mut rng = SplitMix::new(seed);
                let mut changed = Vec::new();
                for t in tools.iter_mut() {
                    let Some(name) = t.get("name").and_then(Value::as_str).map(String::from) else {
                        continue;
                    };
                    if !hit(&name) {
                        continue;
                    }
                    for key in ["inputSchema", "outputSchema"] {
                        if let Some(schema) = t.get_mut(key) {
                            if let Some(p) = stale_property(schema, &mut rng) {
                                changed.push(format!("{name}.{key}.{p}"));
                            }
                        }
                    }
                }
                if changed.is_empty() {
                    return None;
                }
                format!("stale schema: renamed {}", changed.join(", "))
            }
            Action::Dangling | Action::ListChanged => return None,
        };
        s.mark_mutated();
        Some(detail)
    }
}

/// Rename one property of an object schema (and in `required`): the registry serves the
/// schema of an older version of the tool.
fn stale_property(schema: &mut Value, rng: &mut SplitMix) -> Option<String> {
    let props = schema.get_mut("properties")?.as_object_mut()?;
    if props.is_empty() {
        return None;
    }
    let mut names: Vec<String> = props.keys().cloned().collect();
    names.sort();
    let old = names[rng.below(names.len())].clone();
    let new = format!("{old}_legacy");
    let v = props.remove(&old)?;
    props.insert(new.clone(), v);
    if let Some(Value::Array(req)) = schema.get_mut("required") {
        for r in req.iter_mut() {
            if r.as_str() == Some(old.as_str()) {
                *r = Value::String(new.clone());
            }
        }
    }
    Some(format!("{old}→{new}"))
}

pub const KIND: KindInfo = KindInfo::of::<Registry>(
    "registry",
    "hide, remove, fake or stale tools in tools/list; spurious list_changed",
    LISTS,
    Direction::ToClient,
    r#"{}"#,
);

impl FaultKind for Registry {
    /// On `tools/call`, the fault's `tools` name the tools it removes, not the calls it
    /// looks at: a call of a removed (or dangling) tool is hit, a phantom call always
    /// fails, and hiding or staling a schema never touches a call.
    fn targets(&self, method: &str, tool: Option<&str>, tools: Option<&Globs>) -> Targets {
        if method != "tools/call" {
            return Targets::IgnoreTools;
        }
        match self.action {
            Action::Phantom if self.fails_call(tool, None) => Targets::Always,
            Action::Phantom => Targets::Skip,
            Action::Remove | Action::Dangling if self.fails_call(tool, tools) => {
                Targets::IgnoreTools
            }
            Action::Remove | Action::Dangling | Action::Hide | Action::StaleSchema => Targets::Skip,
            Action::ListChanged => Targets::BySelector,
        }
    }

    fn acts_on_request(&self, _direction: Direction) -> bool {
        Registry::acts_on_request(self)
    }

    fn acts_on_response(&self, _direction: Direction) -> bool {
        Registry::acts_on_response(self)
    }

    /// A stale schema is a changed `tools/list` result: an agent that builds its calls
    /// from it (a renamed parameter) acted on it (docs/silent.md).
    fn alters_result(&self) -> bool {
        self.action == Action::StaleSchema
    }

    /// It adds entries (dangling tools) and hides listed ones.
    fn selects_unlisted_tools(&self) -> bool {
        true
    }

    fn needs(&self, _direction: Direction) -> Vec<Need> {
        match self.action {
            Action::ListChanged => vec![Need::key(Capability::MultipleAnswers, "action")],
            _ => Vec::new(),
        }
    }

    fn act(&self, phase: Phase, c: &mut Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        match phase {
            Phase::Request => self.apply_request(c, s),
            Phase::Response => self.apply_response(c, c.tools, s),
        }
    }

    fn simulate(&self, _direction: Direction, _c: &mut Ctx<'_>, out: &mut SimulatedCall) -> bool {
        match self.action {
            Action::Remove | Action::Dangling | Action::Phantom => {
                out.worsen(SimOutcome::FailFast);
                true
            }
            _ => false,
        }
    }

    fn max_added_delay(&self) -> AddedDelay {
        AddedDelay::NONE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::KindState;
    use crate::rng::StreamKey;
    use crate::time::Time;

    fn list() -> Vec<u8> {
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [
            {"name": "echo", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}},
            {"name": "restart_service", "inputSchema": {"type": "object", "properties": {}}}
        ]}}))
        .expect("json")
    }

    fn run(action: Action, targets: Option<&Globs>) -> (Value, Option<String>) {
        let raw = list();
        let mut state = KindState::default();
        let c = Ctx {
            key: StreamKey::new(0, 0, 0),
            seq: 0,
            now: Time::ZERO,
            method: "tools/list",
            tool: None,
            id: None,
            tools: None,
            state: &mut state,
            schema: None,
        };
        let mut s = Shaping::new(&raw);
        let r = Registry {
            action,
            ..Default::default()
        };
        let d = r.apply_response(&c, targets, &mut s);
        let out = s
            .output()
            .map(|b| serde_json::from_slice(&b).expect("json"))
            .unwrap_or_else(|| serde_json::from_slice(&raw).expect("json"));
        (out, d)
    }

    #[test]
    fn list_rewrites() {
        let g = Globs::new(&["restart_*".into()]).expect("glob");
        let (v, _) = run(Action::Hide, Some(&g));
        assert_eq!(v["result"]["tools"].as_array().map(Vec::len), Some(1));
        let (v, _) = run(Action::Phantom, None);
        assert_eq!(v["result"]["tools"][2]["name"], "phantom_tool");
        let e = Globs::new(&["echo".into()]).expect("glob");
        let (v, _) = run(Action::StaleSchema, Some(&e));
        assert_eq!(
            v["result"]["tools"][0]["inputSchema"]["required"][0],
            "message_legacy"
        );
        assert!(run(Action::Dangling, None).1.is_none());
    }

    #[test]
    fn which_calls_fail() {
        let g = Globs::new(&["restart_*".into()]).expect("glob");
        let r = Registry {
            action: Action::Remove,
            ..Default::default()
        };
        assert!(r.fails_call(Some("restart_service"), Some(&g)));
        assert!(!r.fails_call(Some("echo"), Some(&g)));
        let p = Registry {
            action: Action::Phantom,
            ..Default::default()
        };
        assert!(p.fails_call(Some("phantom_tool"), Some(&g)));
        assert!(!p.fails_call(Some("restart_service"), Some(&g)));
    }
}
