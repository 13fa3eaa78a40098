//! The GameDay file: its keys and schema, and loading it — the GameDay's own keys checked
//! with `FILE:LINE:COL`, the key and a "did you mean" (the machinery experiment files use),
//! then every experiment loaded and checked as `brownout run` would, with the GameDay's
//! `target` and `labels` filled in where the experiment has none; an inline experiment's
//! errors point into the GameDay file.

use crate::experiment::load::{load_text, resolve, Loaded};
use crate::experiment::spec::Target;
use brownout_core::plan::source::{parse, Format, Node};
use brownout_core::plan::{load_document, PlanError, PlanErrors};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// The most experiments a GameDay holds.
pub const MAX_EXPERIMENTS: usize = 50;
/// The largest weight an experiment may carry.
pub const MAX_WEIGHT: f64 = 1000.0;

/// A GameDay: an ordered, escalating series of experiments, scored together.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GameDay {
    /// What the GameDay exercises, in one line; its trend is kept under this title.
    #[schemars(length(min = 1, max = 200))]
    pub title: String,
    /// Free labels, given to every experiment that does not set the same key itself (the
    /// guardrails read them: `env: production` is refused by default).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// The default target of the experiments (same shape as an experiment's); an
    /// experiment's own `target` wins.
    #[serde(default)]
    pub target: Option<Target>,
    /// The experiments, in escalating order (run one after the other).
    #[schemars(length(min = 1, max = 50))]
    pub experiments: Vec<Step>,
}

/// One experiment of a GameDay: a file or an inline experiment document.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Unique within the GameDay; `requires` names it.
    #[schemars(regex(pattern = r"^[a-z0-9_-]{1,64}$"))]
    pub id: String,
    /// An experiment file, relative to the GameDay file (give `path` or `experiment`).
    #[serde(default)]
    pub path: Option<String>,
    /// An experiment document, inline (`brownout experiment schema` describes it).
    #[serde(default)]
    pub experiment: Option<Map<String, Value>>,
    /// Its share of the score (default 1; above 0, at most 1000).
    #[serde(default)]
    pub weight: Option<f64>,
    /// Run only if these earlier experiments completed; otherwise `skipped`.
    #[serde(default)]
    pub requires: Vec<String>,
}

impl Step {
    /// The weight, 1 when unset.
    pub fn weight(&self) -> f64 {
        self.weight.unwrap_or(1.0)
    }
}

/// A GameDay, checked, with every experiment loaded.
#[derive(Debug, Clone)]
pub struct LoadedGameDay {
    pub spec: GameDay,
    /// The file, as given.
    pub file: String,
    /// The experiments, in the file's order.
    pub experiments: Vec<Loaded>,
}

/// The GameDay file's JSON Schema.
pub fn schema() -> Value {
    let g = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    g.into_root_schema_for::<GameDay>().as_value().clone()
}

/// Load and check a GameDay file and every experiment in it.
pub fn load_file(path: &Path) -> Result<LoadedGameDay, PlanErrors> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| one(&file, "", e.to_string()))?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    load_text_at(&text, &file, &dir)
}

fn one(file: &str, key: &str, message: String) -> PlanErrors {
    PlanErrors {
        file: file.to_string(),
        errors: vec![PlanError {
            pos: Default::default(),
            key: key.into(),
            message,
        }],
    }
}

/// Load and check a GameDay from its text; `file` names it, `dir` is where its relative
/// paths are read from.
pub fn load_text_at(text: &str, file: &str, dir: &Path) -> Result<LoadedGameDay, PlanErrors> {
    let spec: GameDay = load_document(text, file)?;
    let root = parse(text, Format::from_path(file)).map_err(|e| one(file, "", e.message))?;
    let at = |pointer: &str, key: &str, message: String| PlanError {
        pos: root.locate(pointer, true),
        key: key.into(),
        message,
    };
    let mut errors = Vec::new();
    if spec.experiments.len() > MAX_EXPERIMENTS {
        errors.push(at(
            "/experiments",
            "experiments",
            format!(
                "{} experiments; a GameDay holds at most {MAX_EXPERIMENTS}",
                spec.experiments.len()
            ),
        ));
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, s) in spec.experiments.iter().enumerate() {
        let here = format!("/experiments/{i}");
        let key = |k: &str| format!("experiments[{i}].{k}");
        if seen.contains(&s.id.as_str()) {
            errors.push(at(
                &format!("{here}/id"),
                &key("id"),
                format!("`{}` is used twice: ids are unique", s.id),
            ));
        }
        match (&s.path, &s.experiment) {
            (Some(_), Some(_)) => errors.push(at(
                &format!("{here}/experiment"),
                &key("experiment"),
                "give `path` or `experiment`, not both".into(),
            )),
            (None, None) => errors.push(at(
                &here,
                &format!("experiments[{i}]"),
                "give `path: FILE` (an experiment file) or `experiment: {…}` (inline)".into(),
            )),
            _ => {}
        }
        if let Some(w) = s.weight {
            if !(w > 0.0 && w <= MAX_WEIGHT) {
                errors.push(at(
                    &format!("{here}/weight"),
                    &key("weight"),
                    format!("{w} is not a weight above 0 and at most {MAX_WEIGHT}"),
                ));
            }
        }
        for (k, r) in s.requires.iter().enumerate() {
            if !seen.contains(&r.as_str()) {
                let hint = if spec.experiments.iter().any(|e| &e.id == r) {
                    format!("`{r}` comes later: an experiment requires earlier ones")
                } else {
                    match brownout_core::plan::suggest(r, seen.iter().copied()) {
                        Some(c) => format!("no earlier experiment `{r}` (did you mean `{c}`?)"),
                        None => format!("no earlier experiment `{r}`"),
                    }
                };
                errors.push(at(
                    &format!("{here}/requires/{k}"),
                    &format!("{}[{k}]", key("requires")),
                    hint,
                ));
            }
        }
        seen.push(&s.id);
    }
    if !errors.is_empty() {
        return Err(PlanErrors::in_line_order(file, errors));
    }
    let mut experiments = Vec::new();
    let mut failed: Option<PlanErrors> = None;
    for (i, s) in spec.experiments.iter().enumerate() {
        match load_step(&spec, s, i, &root, file, dir) {
            Ok(x) => experiments.push(x),
            Err(e) => match &mut failed {
                None => failed = Some(e),
                Some(f) if f.file == e.file => f.errors.extend(e.errors),
                // One file's errors at a time: the first file's, then the next on a rerun.
                Some(_) => {}
            },
        }
    }
    if let Some(f) = failed {
        return Err(PlanErrors::in_line_order(&f.file.clone(), f.errors));
    }
    Ok(LoadedGameDay {
        spec,
        file: file.to_string(),
        experiments,
    })
}

/// One experiment: its document (from its file or inline) with the GameDay's target and
/// labels filled in, loaded as `brownout run` loads a file; errors point at the source.
fn load_step(
    g: &GameDay,
    s: &Step,
    i: usize,
    root: &Node,
    file: &str,
    dir: &Path,
) -> Result<Loaded, PlanErrors> {
    let (doc, src, label, base, exp_dir) = match (&s.path, &s.experiment) {
        (Some(p), _) => {
            let path = resolve(dir, p);
            let shown = path.display().to_string();
            let text = std::fs::read_to_string(&path).map_err(|e| PlanErrors {
                file: file.to_string(),
                errors: vec![PlanError {
                    pos: root.locate(&format!("/experiments/{i}/path"), false),
                    key: format!("experiments[{i}].path"),
                    message: format!("cannot read the experiment {shown}: {e}"),
                }],
            })?;
            // Its own schema errors first, with its own lines.
            let node = parse(&text, Format::from_path(&shown)).map_err(|e| PlanErrors {
                file: shown.clone(),
                errors: vec![PlanError {
                    pos: e.pos,
                    key: String::new(),
                    message: format!("syntax error: {}", e.message),
                }],
            })?;
            let exp_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
            (node.to_json(), node, shown, String::new(), exp_dir)
        }
        (None, Some(m)) => (
            Value::Object(m.clone()),
            root.clone(),
            file.to_string(),
            format!("/experiments/{i}/experiment"),
            dir.to_path_buf(),
        ),
        (None, None) => return Err(one(file, "", "no experiment".into())),
    };
    let mut doc = doc;
    if let Some(o) = doc.as_object_mut() {
        if let (false, Some(t)) = (o.contains_key("target"), &g.target) {
            o.insert("target".into(), serde_json::to_value(t).unwrap_or_default());
        }
        if !g.labels.is_empty() {
            let labels = o
                .entry("labels")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(l) = labels.as_object_mut() {
                for (k, v) in &g.labels {
                    l.entry(k.clone()).or_insert_with(|| v.clone().into());
                }
            }
        }
    }
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    let mut x = load_text(&text, &format!("{label}.json"), &exp_dir).map_err(|e| PlanErrors {
        file: label.clone(),
        errors: e
            .errors
            .into_iter()
            .map(|err| {
                let inner = pointer_of(&err.key);
                let key = match (base.is_empty(), err.key.is_empty()) {
                    (true, _) => err.key,
                    (false, true) => format!("experiments[{i}].experiment"),
                    (false, false) => format!("experiments[{i}].experiment.{}", err.key),
                };
                PlanError {
                    pos: src.locate(&format!("{base}{inner}"), true),
                    key,
                    message: err.message.replace(&format!("{label}.json"), &label),
                }
            })
            .collect(),
    })?;
    x.file = if base.is_empty() {
        label
    } else {
        format!("{file}#{}", s.id)
    };
    Ok(x)
}

/// `faults[2].added_ms` → `/faults/2/added_ms`.
fn pointer_of(key: &str) -> String {
    let mut out = String::new();
    for part in key.split('.').filter(|p| !p.is_empty()) {
        let (name, rest) = part.split_once('[').map_or((part, ""), |(n, r)| (n, r));
        if !name.is_empty() {
            out.push('/');
            out.push_str(&name.replace('~', "~0").replace('/', "~1"));
        }
        for idx in rest.split('[').map(|x| x.trim_end_matches(']')) {
            if !idx.is_empty() {
                out.push('/');
                out.push_str(idx);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::pointer_of;

    #[test]
    fn display_paths_become_pointers() {
        assert_eq!(pointer_of("faults[2].added_ms"), "/faults/2/added_ms");
        assert_eq!(pointer_of("method[0]"), "/method/0");
        assert_eq!(pointer_of("target.url"), "/target/url");
        assert_eq!(pointer_of(""), "");
    }
}
