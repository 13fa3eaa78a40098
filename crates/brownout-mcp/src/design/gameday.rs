//! The GameDay file a design strings its experiments into (the format `brownout gameday`
//! runs, docs/design.md#gameday): a title, labels, the target, and the experiments in
//! order — each with a unique id, its file (`path`, relative to the GameDay file) or the
//! experiment inline, and `requires`: the step before it in its scenario's series. Written
//! as YAML (a JSON value through the emitter, so every string is quoted as it needs).

use super::build::Designed;
use serde_json::{json, Value};
use yaml_rust2::yaml::{Hash, Yaml};

/// The GameDay document with every experiment inline (for `design_experiments`).
pub fn inline(goal: &str, target: &Value, exps: &[Designed]) -> Value {
    doc(goal, target, exps, |d| json!({"experiment": d.doc}))
}

/// The GameDay document naming each experiment's file `<id>.yaml` beside it.
pub fn with_paths(goal: &str, target: &Value, exps: &[Designed]) -> Value {
    doc(goal, target, exps, |d| json!({"path": file_name(d)}))
}

/// The file an experiment is written to.
pub fn file_name(d: &Designed) -> String {
    format!("{}.yaml", d.id)
}

fn doc(goal: &str, target: &Value, exps: &[Designed], how: impl Fn(&Designed) -> Value) -> Value {
    let title = if goal.trim().is_empty() {
        format!("GameDay: {}", super::target_label(target))
    } else {
        format!(
            "GameDay: {} ({})",
            goal.trim().chars().take(120).collect::<String>(),
            super::target_label(target)
        )
    };
    let list: Vec<Value> = exps
        .iter()
        .map(|d| {
            let mut e = json!({"id": d.id});
            if let (Some(m), Some(extra)) = (e.as_object_mut(), how(d).as_object()) {
                m.extend(extra.clone());
            }
            e["weight"] = 1.into();
            if let Some(r) = &d.requires {
                e["requires"] = json!([r]);
            }
            e
        })
        .collect();
    let scenarios: Vec<&str> = {
        let mut v: Vec<&str> = exps.iter().map(|d| d.scenario.name()).collect();
        v.dedup();
        v
    };
    json!({
        "title": title,
        "labels": {"designed-by": "brownout design", "scenarios": scenarios.join(",")},
        "target": match (target.get("command"), target.get("url")) {
            (Some(c), _) => json!({"command": c}),
            (_, Some(u)) => json!({"url": u}),
            _ => json!({}),
        },
        "experiments": list,
    })
}

/// A JSON value as YAML text.
pub fn render(v: &Value) -> Result<String, String> {
    let mut out = String::new();
    let mut e = yaml_rust2::YamlEmitter::new(&mut out);
    e.dump(&to_yaml(v))
        .map_err(|e| format!("cannot write YAML: {e}"))?;
    out.push('\n');
    // The emitter starts documents with `---`; a file of one document does without.
    Ok(out.strip_prefix("---\n").unwrap_or(&out).to_string())
}

fn to_yaml(v: &Value) -> Yaml {
    match v {
        Value::Null => Yaml::Null,
        Value::Bool(b) => Yaml::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Yaml::Integer(i),
            None => Yaml::Real(n.to_string()),
        },
        Value::String(s) => Yaml::String(s.clone()),
        Value::Array(a) => Yaml::Array(a.iter().map(to_yaml).collect()),
        Value::Object(m) => {
            let mut h = Hash::new();
            for (k, v) in m {
                h.insert(Yaml::String(k.clone()), to_yaml(v));
            }
            Yaml::Hash(h)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_round_trips_through_the_project_parser() {
        let v = json!({"title": "a: b # c", "n": 3, "x": 0.25, "list": ["*", "yes", "-1"], "m": {"k": null, "b": true}});
        let text = render(&v).expect("yaml");
        let back =
            brownout_core::plan::source::parse(&text, brownout_core::plan::source::Format::Yaml)
                .expect("parses")
                .to_json();
        assert_eq!(back, v, "{text}");
    }
}
