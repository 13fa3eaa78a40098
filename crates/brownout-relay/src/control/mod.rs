//! Live control of a running relay's faults: the plan as a list of fault specs (their plan
//! syntax, as JSON) that can be added to, removed from, replaced and expired while traffic
//! flows. Every change is compiled and validated as a whole plan by `brownout-core` before it
//! replaces the running one, so an invalid change is rejected with its errors and the old
//! plan stays. The HTTP surface is [`admin`]; SIGHUP and `--watch` reloads come through
//! [`Control::replace_from_file`] too.

pub mod admin;
pub mod metrics;
pub mod otlp_metrics;
pub mod reload;

use crate::relay::Relay;
use brownout_core::plan::source::{self, Format};
use brownout_core::Plan;
use serde_json::{json, Map, Value};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Why a change was refused.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// The plan or fault does not validate; the text is every error, one per line.
    #[error("{0}")]
    Invalid(String),
    #[error("no fault with id `{0}`")]
    NoSuchFault(String),
    #[error("a fault with id `{0}` exists already; remove it first or pick another id")]
    DuplicateId(String),
    /// A renewal came after the fault's lease ran out: it is gone (swept now if it was not
    /// yet), whether or not the relay had got round to removing it.
    #[error("the lease of fault `{0}` lapsed: it is gone; add it again")]
    Lapsed(String),
}

/// How many lapsed fault ids the relay remembers, so a late renewal hears "lapsed" rather
/// than "no such fault" whether or not the sweep removed the fault first.
const REMEMBER_LAPSED: usize = 256;

/// One fault of the running plan, as written.
#[derive(Debug, Clone)]
struct Entry {
    id: String,
    kind: String,
    spec: Value,
    /// When it expires by itself, if it was added with a TTL.
    expires: Option<Instant>,
}

struct State {
    seed: u64,
    name: Option<String>,
    /// Top-level keys of the plan other than `seed`, `name` and `faults` (e.g. `duration`).
    extra: Map<String, Value>,
    entries: Vec<Entry>,
}

/// The running plan of one relay, changeable while it runs.
pub struct Control {
    relay: Arc<Relay>,
    state: Mutex<State>,
    started: Instant,
    /// Where a plan came from, for error messages.
    label: String,
    /// The ids of the last faults whose lease ran out (at most [`REMEMBER_LAPSED`]).
    lapsed: Mutex<std::collections::VecDeque<String>>,
}

impl Control {
    /// Take control of `relay`, whose running plan is `plan_text` (`None` for no plan:
    /// traffic passes untouched until faults are added). `label` names the plan in errors
    /// and picks its format by extension.
    pub fn new(
        relay: Arc<Relay>,
        plan_text: Option<&str>,
        label: &str,
    ) -> Result<Control, ControlError> {
        let control = Control {
            relay,
            state: Mutex::new(State {
                seed: 0,
                name: None,
                extra: Map::new(),
                entries: Vec::new(),
            }),
            started: Instant::now(),
            label: label.to_string(),
            lapsed: Mutex::new(Default::default()),
        };
        if let Some(text) = plan_text {
            control.replace_text(text, label, Format::from_path(label))?;
        }
        Ok(control)
    }

    pub fn relay(&self) -> &Arc<Relay> {
        &self.relay
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lapsed(&self) -> MutexGuard<'_, std::collections::VecDeque<String>> {
        self.lapsed.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Remember that these faults' leases ran out.
    fn note_lapsed(&self, ids: &[String]) {
        let mut lapsed = self.lapsed();
        for id in ids {
            lapsed.retain(|l| l != id);
            lapsed.push_back(id.clone());
            while lapsed.len() > REMEMBER_LAPSED {
                lapsed.pop_front();
            }
        }
    }

    /// Replace the whole plan with the one in `text`; `file` names it in errors.
    ///
    /// The plan is parsed and compiled here, before any lock is taken: traffic waits only
    /// while the compiled plan is swapped in. An empty or truncated document (no `faults`
    /// key: an empty body, `null`, `{}`, a half-written file) is refused, never taken for
    /// "no faults"; a plan without faults says `faults: []`.
    pub fn replace_text(
        &self,
        text: &str,
        file: &str,
        format: Format,
    ) -> Result<usize, ControlError> {
        let compile = || {
            // Validate exactly as `plan check` would, with the file's own lines and columns.
            Plan::from_str_format(text, file, format)
                .map_err(|e| ControlError::Invalid(e.to_string()))
        };
        let doc = match source::parse(text, format) {
            Ok(node) => node.to_json(),
            // A syntax error: the compiler words it as `plan check` does.
            Err(e) => {
                compile()?;
                return Err(ControlError::Invalid(format!(
                    "{file}:{}: {}",
                    e.pos, e.message
                )));
            }
        };
        // Checked before compiling, so the reason is this one whatever the compiler says.
        let mut doc = match doc {
            Value::Object(m) if m.contains_key("faults") => m,
            other => {
                let what = match other {
                    Value::Null => "the plan is empty (a truncated file?)".to_string(),
                    Value::Object(m) if m.is_empty() => "the plan is empty".to_string(),
                    Value::Object(_) => "the plan has no `faults` key".to_string(),
                    _ => "a plan is a map of keys with `faults`".to_string(),
                };
                return Err(ControlError::Invalid(format!(
                    "{file}: {what}; to run without faults, say so with `faults: []`"
                )));
            }
        };
        let plan = compile()?;
        self.relay
            .check_plan(&plan, file)
            .map_err(|e| ControlError::Invalid(e.to_string()))?;
        let faults = match doc.remove("faults") {
            Some(Value::Array(a)) => a,
            _ => Vec::new(),
        };
        let mut candidate = State {
            seed: doc.remove("seed").and_then(|v| v.as_u64()).unwrap_or(0),
            name: doc
                .remove("name")
                .and_then(|v| v.as_str().map(str::to_string)),
            extra: doc,
            entries: faults
                .into_iter()
                .map(|spec| Entry {
                    id: String::new(),
                    kind: String::new(),
                    spec,
                    expires: None,
                })
                .collect(),
        };
        pin(&mut candidate.entries, &plan);
        let n = plan.faults.len();
        let mut state = self.state();
        *state = candidate;
        self.relay.set_plan(plan);
        Ok(n)
    }

    /// Replace the plan from its file (SIGHUP, `--watch`).
    pub fn replace_from_file(&self, path: &Path) -> Result<usize, ControlError> {
        let text = crate::input::read_document(path).map_err(|e| {
            ControlError::Invalid(format!(
                "cannot read plan {}: {}",
                path.display(),
                e.reason()
            ))
        })?;
        let file = path.display().to_string();
        self.replace_text(&text, &file, Format::from_path(&file))
    }

    /// Add one fault, in plan syntax (YAML or JSON), optionally for `ttl` only.
    pub fn add(
        &self,
        text: &str,
        format: Format,
        ttl: Option<Duration>,
    ) -> Result<String, ControlError> {
        if format == Format::Json {
            serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(|e| {
                ControlError::Invalid(format!(
                    "fault: not JSON ({e}); send YAML as application/yaml"
                ))
            })?;
        }
        let expires = match ttl {
            None => None,
            Some(t) => Some(Instant::now().checked_add(t).ok_or_else(|| {
                ControlError::Invalid(format!("ttl of {}s is out of range", t.as_secs()))
            })?),
        };
        let spec = source::parse(text, format)
            .map(|n| n.to_json())
            .map_err(|e| ControlError::Invalid(format!("fault:{}: {}", e.pos, e.message)))?;
        if !spec.is_object() {
            return Err(ControlError::Invalid(
                "a fault is a map of keys, such as {kind: latency, added_ms: 100}".into(),
            ));
        }
        // Alone first, so its errors are about it: `faults[0].added_ms`.
        let alone = json!({"faults": [spec]}).to_string();
        Plan::from_str_format(&alone, "fault", Format::Json).map_err(|e| {
            // Positions would point into a document the caller never wrote: name keys only.
            ControlError::Invalid(
                e.errors
                    .iter()
                    .map(|x| {
                        let key = x.key.strip_prefix("faults[0]").unwrap_or(&x.key);
                        match key.trim_start_matches('.') {
                            "" => x.message.clone(),
                            k => format!("`{k}`: {}", x.message),
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            )
        })?;
        let mut state = self.state();
        if let Some(id) = spec.get("id").and_then(Value::as_str) {
            if state.entries.iter().any(|e| e.id == id) {
                return Err(ControlError::DuplicateId(id.to_string()));
            }
        }
        if let Some(id) = spec.get("id").and_then(Value::as_str) {
            self.lapsed().retain(|l| l != id);
        }
        let previous = state.entries.clone();
        state.entries.push(Entry {
            id: String::new(),
            kind: String::new(),
            spec,
            expires,
        });
        match self.commit(&mut state, &self.label) {
            Ok(_) => Ok(state
                .entries
                .last()
                .map(|e| e.id.clone())
                .unwrap_or_default()),
            Err(e) => {
                state.entries = previous;
                Err(e)
            }
        }
    }

    /// Remove the fault with this id.
    pub fn remove(&self, id: &str) -> Result<(), ControlError> {
        let mut state = self.state();
        let before = state.entries.len();
        state.entries.retain(|e| e.id != id);
        if state.entries.len() == before {
            return Err(ControlError::NoSuchFault(id.to_string()));
        }
        self.commit(&mut state, &self.label).map(|_| ())
    }

    /// Renew a fault's lease: it now expires `ttl` from now. Nothing else changes — no plan
    /// is compiled, so its counters, token buckets and draws continue. A fault added
    /// without a TTL takes one. A fault whose lease has already run out is not renewed,
    /// whether the sweep removed it yet or not: it is removed now, and the answer is
    /// [`ControlError::Lapsed`] (so whether a lapse shows never depends on the sweep's
    /// timing).
    pub fn renew(&self, id: &str, ttl: Duration) -> Result<f64, ControlError> {
        let now = Instant::now();
        let until = now.checked_add(ttl).ok_or_else(|| {
            ControlError::Invalid(format!("ttl of {}s is out of range", ttl.as_secs()))
        })?;
        let mut state = self.state();
        let Some(at) = state.entries.iter().position(|e| e.id == id) else {
            drop(state);
            if self.lapsed().contains(&id.to_string()) {
                return Err(ControlError::Lapsed(id.to_string()));
            }
            return Err(ControlError::NoSuchFault(id.to_string()));
        };
        if state.entries[at].expires.is_some_and(|t| t <= now) {
            state.entries.remove(at);
            let _ = self.commit(&mut state, &self.label);
            drop(state);
            self.note_lapsed(&[id.to_string()]);
            eprintln!(
                "brownout: fault `{}` expired",
                brownout_core::human::clean_n(id, 200)
            );
            return Err(ControlError::Lapsed(id.to_string()));
        }
        state.entries[at].expires = Some(until);
        Ok(ttl.as_secs_f64())
    }

    /// Remove every fault: traffic passes untouched.
    pub fn clear(&self) -> usize {
        let mut state = self.state();
        let n = state.entries.len();
        state.entries.clear();
        let _ = self.commit(&mut state, &self.label);
        n
    }

    /// Whether a fault's TTL has passed (cheap: no plan is compiled).
    /// When the first fault with a TTL expires, if one has a TTL.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.state().entries.iter().filter_map(|e| e.expires).min()
    }

    pub fn any_expired(&self, now: Instant) -> bool {
        self.state()
            .entries
            .iter()
            .any(|e| e.expires.is_some_and(|t| t <= now))
    }

    /// Remove faults whose TTL has passed; returns their ids.
    pub fn expire(&self, now: Instant) -> Vec<String> {
        let mut state = self.state();
        let gone: Vec<String> = state
            .entries
            .iter()
            .filter(|e| e.expires.is_some_and(|t| t <= now))
            .map(|e| e.id.clone())
            .collect();
        if !gone.is_empty() {
            state.entries.retain(|e| e.expires.is_none_or(|t| t > now));
            let _ = self.commit(&mut state, &self.label);
            drop(state);
            self.note_lapsed(&gone);
        }
        gone
    }

    /// The running faults, as written, with their id, kind and time left, and the seed in
    /// force (`--seed` over the plan's own).
    pub fn list(&self) -> Value {
        let state = self.state();
        let now = Instant::now();
        json!({
            "seed": self.relay.seed_override().unwrap_or(state.seed),
            "faults": state.entries.iter().map(|e| json!({
                "id": e.id,
                "kind": e.kind,
                "expires_in_s": e.expires.map(|t| t.saturating_duration_since(now).as_secs_f64()),
                "spec": e.spec,
            })).collect::<Vec<_>>(),
        })
    }

    /// The relay's metrics in the Prometheus text format.
    pub fn metrics(&self) -> String {
        let active = self.state().entries.len();
        metrics::render(&self.relay, active)
    }

    /// Uptime, sessions, calls and injections per fault.
    pub fn status(&self) -> Value {
        let faults = self.state().entries.len();
        let mut v = self.relay.status();
        if let Some(m) = v.as_object_mut() {
            m.insert(
                "uptime_s".into(),
                json!(self.started.elapsed().as_secs_f64()),
            );
            m.insert("faults".into(), json!(faults));
        }
        v
    }

    /// Compile the state's faults into a plan and make it the relay's; record the ids and
    /// kinds the compiler settled on.
    fn commit(&self, state: &mut State, file: &str) -> Result<usize, ControlError> {
        let mut doc = state.extra.clone();
        doc.insert("seed".into(), json!(state.seed));
        if let Some(n) = &state.name {
            doc.insert("name".into(), json!(n));
        }
        doc.insert(
            "faults".into(),
            Value::Array(state.entries.iter().map(|e| e.spec.clone()).collect()),
        );
        let plan = Plan::from_str_format(&Value::Object(doc).to_string(), file, Format::Json)
            .map_err(|e| ControlError::Invalid(e.to_string()))?;
        self.relay
            .check_plan(&plan, file)
            .map_err(|e| ControlError::Invalid(e.to_string()))?;
        pin(&mut state.entries, &plan);
        let n = plan.faults.len();
        self.relay.set_plan(plan);
        Ok(n)
    }
}

/// Record the ids and kinds the compiler settled on, and pin each id into its spec, so
/// removing an earlier fault never renames a later one.
fn pin(entries: &mut [Entry], plan: &Plan) {
    for (entry, fault) in entries.iter_mut().zip(&plan.faults) {
        entry.id = fault.id.clone();
        entry.kind = fault.effect.kind().to_string();
        if let Some(m) = entry.spec.as_object_mut() {
            m.insert("id".into(), json!(fault.id));
        }
    }
}

#[cfg(test)]
mod lease_tests;
