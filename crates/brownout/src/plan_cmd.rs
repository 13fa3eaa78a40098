//! `brownout plan check|schema|kinds`: validate plans, print their schema, list fault kinds.

use brownout_core::faults::KINDS;
use brownout_core::Plan;
use std::path::Path;

/// Read and compile a plan file; errors name the file, line, column and key.
pub fn load(path: &Path) -> anyhow::Result<Plan> {
    let text = crate::input::read_document(path)
        .map_err(|e| anyhow::anyhow!("cannot read plan {}: {}", path.display(), e.reason()))?;
    Plan::from_str_named(&text, &path.display().to_string())
        .map_err(|e| anyhow::anyhow!("{}", brownout_experiment::marks::explain(e)))
}

/// `plan check`: exit 0 when every plan is valid, 1 otherwise (every error printed).
pub fn check(paths: &[std::path::PathBuf], json: bool) -> i32 {
    let mut bad = 0;
    let mut out = Vec::new();
    for p in paths {
        let text = match crate::input::read_document(p) {
            Ok(t) => t,
            Err(e) => {
                bad += 1;
                out.push(serde_json::json!({"file": p.display().to_string(), "ok": false, "errors": [{"message": e.reason()}]}));
                if !json {
                    eprintln!("{e}");
                }
                continue;
            }
        };
        match Plan::from_str_named(&text, &p.display().to_string())
            .map_err(brownout_experiment::marks::explain)
        {
            Ok(plan) => {
                if !json {
                    println!(
                        "{}: ok, seed {}, {} fault(s): {}",
                        p.display(),
                        plan.seed,
                        plan.faults.len(),
                        plan.faults
                            .iter()
                            .map(|f| format!("{} ({})", f.id, f.effect.kind()))
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                }
                out.push(serde_json::json!({"file": p.display().to_string(), "ok": true, "seed": plan.seed, "faults": plan.faults.iter().map(|f| serde_json::json!({"id": f.id, "kind": f.effect.kind()})).collect::<Vec<_>>()}));
            }
            Err(errs) => {
                bad += 1;
                if !json {
                    eprintln!("{errs}");
                }
                let list: Vec<_> = errs.errors.iter().map(|e| serde_json::json!({"line": e.pos.line, "column": e.pos.column, "key": e.key, "message": e.message})).collect();
                out.push(serde_json::json!({"file": p.display().to_string(), "ok": false, "errors": list}));
            }
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    }
    i32::from(bad > 0)
}

pub fn schema() {
    println!(
        "{}",
        serde_json::to_string_pretty(&brownout_core::plan::plan_schema()).unwrap_or_default()
    );
}

pub fn kinds(json: bool) {
    if json {
        let v: Vec<_> = KINDS.iter().map(|k| serde_json::json!({"kind": k.name, "summary": k.summary, "default_methods": k.default_methods})).collect();
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return;
    }
    for k in KINDS {
        println!("{:<16} {}", k.name, k.summary);
    }
}
