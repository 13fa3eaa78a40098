//! `brownout experiment check|schema`.

use super::load::load_file;
use super::spec::Experiment;
use std::path::PathBuf;

/// `experiment check`: 0 when every file is valid, 1 otherwise (every error printed), as
/// `plan check`.
pub fn check(files: &[PathBuf], json: bool) -> i32 {
    let mut bad = false;
    let mut out = Vec::new();
    for f in files {
        match load_file(f) {
            Ok(x) => {
                let warnings: Vec<String> = super::gates::silent_blind_spot(&x.plan, &x.gates)
                    .into_iter()
                    .collect();
                if !json {
                    println!(
                        "{}: ok, {} stage(s), {} fault(s), {} gate(s)",
                        f.display(),
                        x.spec.method.len(),
                        x.plan.faults.len(),
                        x.gates.len()
                    );
                    for w in &warnings {
                        eprintln!("{}: warning: {w}", f.display());
                    }
                }
                out.push(serde_json::json!({"file": f.display().to_string(), "ok": true, "warnings": warnings}));
            }
            Err(e) => {
                bad = true;
                if !json {
                    eprintln!("{e}");
                }
                let errors: Vec<_> = e
                    .errors
                    .iter()
                    .map(|x| serde_json::json!({"file": e.file, "line": x.pos.line, "column": x.pos.column, "key": x.key, "message": x.message}))
                    .collect();
                out.push(serde_json::json!({"file": f.display().to_string(), "ok": false, "errors": errors}));
            }
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    }
    i32::from(bad)
}

/// The experiment file's JSON Schema.
pub fn schema() -> serde_json::Value {
    let g = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    g.into_root_schema_for::<Experiment>().as_value().clone()
}
