//! Loading an experiment file: the schema check with `FILE:LINE:COL`, then what a schema
//! cannot say (exactly one kind of target, gates that parse, faults that compile and that
//! the target's driver can perform, a workload that loads), and the resolved parts the
//! runner needs.

use super::gates::{self, ParsedGate};
use super::spec::{Experiment, Faults, Server};
use brownout_core::plan::source::{parse, Format, Node};
use brownout_core::plan::{display_path, load_document, PlanError, PlanErrors};
use brownout_core::{Capabilities, Capability, Plan};
use brownout_relay::relay::child_back::ChildBack;
use brownout_relay::relay::http_front;
use brownout_relay::relay::url_back::UrlBack;
use brownout_relay::relay::Driver;
use brownout_sim::Workload;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// An experiment, checked and resolved.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub spec: Experiment,
    /// The file it came from (as given).
    pub file: String,
    /// The directory relative paths are read from.
    pub dir: PathBuf,
    /// The fault plan as JSON (`seed` and `faults`), before a stage sets `sessions`.
    pub plan_doc: Value,
    pub plan: Plan,
    pub workload: Workload,
    pub gates: Vec<ParsedGate>,
}

impl Loaded {
    /// The plan a stage runs: every fault reaches `share` (0..=1) of the sessions, the
    /// same stable subset at every stage (a hash of the seed and the session).
    pub fn stage_plan(&self, share: f64) -> Result<(Value, Plan), PlanErrors> {
        let mut doc = self.plan_doc.clone();
        if let Some(faults) = doc.get_mut("faults").and_then(Value::as_array_mut) {
            for f in faults.iter_mut().filter_map(Value::as_object_mut) {
                f.insert("sessions".into(), json!(share));
            }
        }
        let plan = Plan::from_str_format(&doc.to_string(), &self.file, Format::Json)?;
        Ok((doc, plan))
    }

    /// The gates in one line (`error_rate < 1% over 10s; p99 < 800ms over 10s`).
    pub fn gates_text(&self) -> String {
        self.gates
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// The driver the faults run on: brownout's in-process HTTP relay, in front of a
    /// server it starts per session (`command`) or of a URL; `None` behind a remote relay,
    /// which checks the plan itself when the faults are posted.
    pub fn driver(&self) -> Option<Driver> {
        let t = &self.spec.target;
        if let Some(servers) = &t.servers {
            return Some(servers_driver(servers));
        }
        if t.fleet.is_some() {
            return None;
        }
        match (&t.command, &t.admin) {
            (_, Some(_)) => None,
            (Some(_), None) => Some(http_front::driver::<ChildBack>()),
            (None, None) => Some(http_front::driver::<UrlBack>()),
        }
    }
}

/// Read a path the experiment names: relative to the experiment's directory when it exists
/// there, else relative to the current directory.
pub fn resolve(dir: &Path, p: &str) -> PathBuf {
    let beside = dir.join(p);
    if Path::new(p).is_relative() && !beside.exists() && Path::new(p).exists() {
        PathBuf::from(p)
    } else {
        beside
    }
}

/// Load and check an experiment file.
pub fn load_file(path: &Path) -> Result<Loaded, PlanErrors> {
    let file = path.display().to_string();
    let text = brownout_relay::input::read_document(path).map_err(|e| one(&file, e.reason()))?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    load_text(&text, &file, &dir)
}

fn one(file: &str, message: String) -> PlanErrors {
    PlanErrors {
        file: file.to_string(),
        errors: vec![PlanError {
            pos: Default::default(),
            key: String::new(),
            message,
        }],
    }
}

/// Load and check an experiment from its text; `file` names it and picks the format.
pub fn load_text(text: &str, file: &str, dir: &Path) -> Result<Loaded, PlanErrors> {
    load_checked(text, file, dir).map_err(crate::marks::explain)
}

fn load_checked(text: &str, file: &str, dir: &Path) -> Result<Loaded, PlanErrors> {
    let spec: Experiment = load_document(text, file)?;
    let root = parse(text, Format::from_path(file)).map_err(|e| one(file, e.message))?;
    let mut errors = Vec::new();
    let at = |pointer: &str, message: String| PlanError {
        pos: root.locate(pointer, false),
        key: display_path(pointer),
        message,
    };
    let t = &spec.target;
    match (&t.command, &t.url, &t.admin) {
        _ if t.servers.is_some() || t.fleet.is_some() => {}
        (Some(_), Some(_), _) => errors.push(at(
            "/target/url",
            "give `command` or `url`, not both".into(),
        )),
        (None, None, _) => errors.push(at(
            "/target",
            "give `command: [PROGRAM, ARGS…]` (a stdio server) or `url:` (an HTTP server)".into(),
        )),
        (Some(_), None, Some(_)) => errors.push(at(
            "/target/admin",
            "`admin` goes with `url` (a relay already running), not with `command`".into(),
        )),
        _ => {}
    }
    for (key, u) in [("url", &t.url), ("admin", &t.admin)] {
        if let Some(u) = u {
            if !(u.starts_with("http://") || u.starts_with("https://")) {
                errors.push(at(
                    &format!("/target/{key}"),
                    format!("`{u}` is not an http:// or https:// URL"),
                ));
            }
        }
    }
    for (i, s) in spec.method.iter().enumerate() {
        match s.sessions.fraction() {
            Some(f) if f > 0.0 && f <= 1.0 => {}
            _ => errors.push(at(
                &format!("/method/{i}/sessions"),
                format!(
                    "`{}` is not a share above 0 % and at most 100 %",
                    s.sessions.0
                ),
            )),
        }
        if s.duration.get().is_zero() {
            errors.push(at(
                &format!("/method/{i}/duration"),
                "a stage lasts more than zero, e.g. `30s`".into(),
            ));
        }
    }
    for (i, p) in spec.steady_state.iter().enumerate() {
        for (key, why) in super::checks::tolerance(&p.tolerance) {
            errors.push(at(&format!("/steady_state/{i}/tolerance/{key}"), why));
        }
        for (key, why) in during_keys(p) {
            errors.push(at(&format!("/steady_state/{i}/{key}"), why));
        }
    }
    let mut parsed = Vec::new();
    for (i, g) in spec.gates.iter().enumerate() {
        match gates::parse(g) {
            Ok(p) => {
                if let Err(why) = super::health::readable(&p, &spec.target) {
                    errors.push(at(&format!("/gates/{i}"), why));
                }
                parsed.push(p)
            }
            Err(e) => errors.push(at(&format!("/gates/{i}"), e)),
        }
    }
    let seed = spec.seed;
    let (plan_doc, plan) = match faults_doc(&spec.faults, &root, file, dir, seed) {
        Ok(x) => x,
        Err(mut es) => {
            errors.append(&mut es.errors);
            (Value::Null, Plan::empty())
        }
    };
    let fleet = super::checks::fleet(&spec).into_iter();
    let remote_ids = super::checks::remote_ids(&spec, &plan_doc).into_iter();
    for (pointer, message) in super::checks::servers(&spec, &plan_doc)
        .into_iter()
        .chain(fleet)
        .chain(remote_ids)
    {
        errors.push(at(&pointer, message));
    }
    let workload = match read_workload(dir, &spec.load.workload, file) {
        Ok(w) => Some(w),
        Err(Ok(mut es)) => {
            // The workload's own errors name the workload file: report them as they are.
            if errors.is_empty() {
                return Err(es);
            }
            errors.append(&mut es.errors);
            None
        }
        Err(Err(m)) => {
            errors.push(at("/load/workload", m));
            None
        }
    };
    if !errors.is_empty() {
        return Err(PlanErrors::in_line_order(file, errors));
    }
    let Some(workload) = workload else {
        return Err(one(file, "the workload did not load".into()));
    };
    let mut loaded = Loaded {
        spec,
        file: file.to_string(),
        dir: dir.to_path_buf(),
        plan_doc,
        plan,
        workload,
        gates: parsed,
    };
    if let Some(d) = loaded.driver() {
        // The widest stage's plan is the one that must run on the driver.
        let (_, widest) = loaded.stage_plan(1.0)?;
        widest.check_driver(&d.name(), d.can, file)?;
    }
    loaded.plan.seed = loaded.plan_doc["seed"].as_u64().unwrap_or(0);
    Ok(loaded)
}

/// What a schema cannot say about a probe's `during: true` keys: (key, why) per misuse.
fn during_keys(p: &super::spec::Probe) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if !p.during {
        for (key, set) in [
            ("interval", p.interval.is_some()),
            ("alert_after", p.alert_after.is_some()),
            ("alert_p95", p.alert_p95.is_some()),
            ("window", p.window.is_some()),
            ("webhook", p.webhook.is_some()),
        ] {
            if set {
                out.push((
                    key,
                    format!(
                        "`{key}` goes with `during: true` (samples taken while the faults run)"
                    ),
                ));
            }
        }
    }
    if let Some(t) = &p.alert_p95 {
        match brownout_core::slo::tolerance::Tolerance::parse(t) {
            Ok(tol) if tol.check_number(0.0) && !tol.check_number(1e12) => {}
            Ok(_) => out.push((
                "alert_p95",
                format!("`{t}` never breaks for a slow P95: write an upper limit, e.g. `< 500ms`"),
            )),
            Err(e) => out.push(("alert_p95", format!("`{t}`: {e}"))),
        }
    }
    if let Some(w) = &p.webhook {
        if !(w.starts_with("http://") || w.starts_with("https://")) {
            out.push((
                "webhook",
                "the webhook is an http:// or https:// URL".to_string(),
            ));
        }
    }
    out
}

fn read_workload(
    dir: &Path,
    w: &super::spec::WorkloadRef,
    file: &str,
) -> Result<Workload, Result<PlanErrors, String>> {
    let p = match w {
        super::spec::WorkloadRef::Path(p) => p,
        super::spec::WorkloadRef::Inline(m) => {
            let text = serde_json::to_string(m).map_err(|e| Err(e.to_string()))?;
            return Workload::from_str_live(&text, &format!("{file} (load.workload, as JSON)"))
                .map_err(Ok);
        }
    };
    let path = resolve(dir, p);
    let text = brownout_relay::input::read_document(&path)
        .map_err(|e| Err(format!("cannot read the workload: {e}")))?;
    Workload::from_str_live(&text, &path.display().to_string()).map_err(Ok)
}

/// `faults[2].added_ms` → `/faults/2/added_ms`.
fn pointer_of(key: &str) -> String {
    let mut out = String::new();
    for part in key.split('.') {
        let (name, rest) = part.split_once('[').unwrap_or((part, ""));
        if !name.is_empty() {
            out.push('/');
            out.push_str(name);
        }
        for idx in rest.split('[') {
            let idx = idx.trim_end_matches(']');
            if !idx.is_empty() {
                out.push('/');
                out.push_str(idx);
            }
        }
    }
    out
}

/// The plan document (`seed`, `faults`) and the compiled plan of the experiment's faults.
fn faults_doc(
    faults: &Faults,
    root: &Node,
    file: &str,
    dir: &Path,
    seed: Option<u64>,
) -> Result<(Value, Plan), PlanErrors> {
    let sessions_err = |pos, key: String| PlanError {
        pos,
        key,
        message: "the stages set `sessions` (the blast radius); remove it from the fault".into(),
    };
    match faults {
        Faults::Inline(list) => {
            let doc = json!({"seed": seed.unwrap_or(0), "faults": list});
            let mut errors = Vec::new();
            for (i, f) in list.iter().enumerate() {
                if f.get("sessions").is_some() {
                    let p = format!("/faults/{i}/sessions");
                    errors.push(sessions_err(root.locate(&p, true), display_path(&p)));
                }
            }
            let plan = Plan::from_str_format(&doc.to_string(), file, Format::Json).map_err(|e| {
                PlanErrors {
                    file: file.to_string(),
                    errors: e
                        .errors
                        .into_iter()
                        .map(|mut pe| {
                            pe.pos = root.locate(&pointer_of(&pe.key), false);
                            pe
                        })
                        .collect(),
                }
            });
            match (plan, errors.is_empty()) {
                (Ok(p), true) => Ok((doc, p)),
                (Ok(_), false) => Err(PlanErrors::in_line_order(file, errors)),
                (Err(mut e), _) => {
                    e.errors.extend(errors);
                    Err(PlanErrors::in_line_order(file, e.errors))
                }
            }
        }
        Faults::File(p) => {
            let path = resolve(dir, p);
            let name = path.display().to_string();
            let text = brownout_relay::input::read_document(&path).map_err(|e| PlanErrors {
                file: file.to_string(),
                errors: vec![PlanError {
                    pos: root.locate("/faults", false),
                    key: "faults".into(),
                    message: format!("cannot read the plan {name}: {}", e.reason()),
                }],
            })?;
            let mut plan = Plan::from_str_named(&text, &name)?;
            let proot =
                parse(&text, Format::from_path(&name)).map_err(|e| one(&name, e.message))?;
            let mut doc = proot.to_json();
            let errors: Vec<PlanError> = doc["faults"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
                .filter(|(_, f)| f.get("sessions").is_some())
                .map(|(i, _)| {
                    let p = format!("/faults/{i}/sessions");
                    sessions_err(proot.locate(&p, true), display_path(&p))
                })
                .collect();
            if !errors.is_empty() {
                return Err(PlanErrors::in_line_order(&name, errors));
            }
            if let Some(s) = seed {
                doc["seed"] = json!(s);
                plan.seed = s;
            } else if doc.get("seed").is_none() {
                doc["seed"] = json!(0);
            }
            Ok((doc, plan))
        }
    }
}

/// What the relay in front of these servers can carry out: what every one of their backs
/// can (a fault must be possible on whichever server it lands).
pub(super) fn servers_driver(servers: &BTreeMap<String, Server>) -> Driver {
    let child = http_front::driver::<ChildBack>();
    let url = http_front::driver::<UrlBack>();
    let all_child = servers.values().all(|s| s.command.is_some());
    let all_url = servers.values().all(|s| s.command.is_none());
    match (all_child, all_url) {
        (true, _) => child,
        (_, true) => url,
        _ => Driver {
            front: child.front,
            back: "(several servers)",
            can: Capability::ALL
                .iter()
                .filter(|c| child.can.has(**c) && url.can.has(**c))
                .fold(Capabilities::NONE, |acc, c| acc.with(*c)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::pointer_of;

    #[test]
    fn display_keys_map_back_to_pointers() {
        assert_eq!(pointer_of("faults[2].added_ms"), "/faults/2/added_ms");
        assert_eq!(pointer_of("faults[0]"), "/faults/0");
        assert_eq!(pointer_of(""), "");
    }
}
