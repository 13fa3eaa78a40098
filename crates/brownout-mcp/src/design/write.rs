//! A design written out: one YAML experiment file per step (`<id>.yaml`) and
//! `gameday.yaml` naming them in order, in a directory; and the summary `brownout design`
//! prints.

use super::build::Designed;
use serde_json::Value;
use std::path::Path;

/// Write the experiments and the GameDay file into `dir` (created if missing). A file
/// already there is replaced.
pub fn dir(dir: &Path, goal: &str, target: &Value, made: &[Designed]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    for d in made {
        let mut text = format!(
            "# {} — step {} of {} of the scenario {} (designed by brownout design; docs/design.md)\n",
            one_line(&d.title),
            d.step,
            d.steps,
            d.scenario.name()
        );
        text.push_str(&format!("# {}\n", one_line(&d.rationale)));
        text.push_str(&super::gameday::render(&d.doc).map_err(|e| anyhow::anyhow!(e))?);
        let path = dir.join(super::gameday::file_name(d));
        std::fs::write(&path, text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    let g = super::gameday::with_paths(goal, target, made);
    let text = super::gameday::render(&g).map_err(|e| anyhow::anyhow!(e))?;
    let path = dir.join("gameday.yaml");
    std::fs::write(&path, text)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    Ok(())
}

/// A comment line: no line breaks, no control characters.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// What `brownout design` prints without --json.
pub fn summary(out: &Value, dir: Option<&Path>) {
    for m in out["matched"].as_array().into_iter().flatten() {
        println!(
            "goal matched {} by: {}",
            m["scenario"].as_str().unwrap_or_default(),
            m["words"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for s in out["scenarios"].as_array().into_iter().flatten() {
        let name = s["scenario"].as_str().unwrap_or_default();
        if let Some(why) = s["skipped"].as_str() {
            println!("{name}: skipped: {why}");
            continue;
        }
        println!("{name}: {}", s["summary"].as_str().unwrap_or_default());
    }
    for e in out["experiments"].as_array().into_iter().flatten() {
        let policy = match e["policy_check"]["allowed"].as_bool() {
            Some(true) => "allowed by the policy now".to_string(),
            Some(false) => format!(
                "refused now by `{}`",
                e["policy_check"]["rule"].as_str().unwrap_or("?")
            ),
            None => "not checked".into(),
        };
        println!(
            "  {}: {} ({}; simulated: {})",
            e["id"].as_str().unwrap_or_default(),
            if e["valid"] == true {
                "valid"
            } else {
                "INVALID"
            },
            policy,
            e["estimate"]["verdict"].as_str().unwrap_or("no estimate")
        );
    }
    for n in out["notes"].as_array().into_iter().flatten() {
        println!("note: {}", n.as_str().unwrap_or_default());
    }
    if let Some(d) = dir {
        println!(
            "wrote {} experiment file(s) and gameday.yaml into {}",
            out["designed"],
            d.display()
        );
    }
}
