//! `brownout experiment check|schema`.

use super::load::load_file;
use super::spec::Experiment;
use std::path::{Path, PathBuf};

/// `experiment check`: 0 when every file is valid, 1 otherwise (every error printed), as
/// `plan check`.
pub fn check(files: &[PathBuf], json: bool) -> i32 {
    check_with(files, json, None)
}

/// The policy file `path` (its guardrails), or the message saying why it cannot be used.
pub fn read_policy(path: &Path) -> Result<super::policy::Policy, String> {
    let text = brownout_relay::input::read_document(path)
        .map_err(|e| format!("{}: cannot read the policy: {}", path.display(), e.reason()))?;
    super::policy::Policy::from_str_named(&text, &path.display().to_string())
        .map_err(|e| e.to_string())
}

/// `experiment check`, with the guardrails of the policy at `policy` applied when given
/// (the check `brownout run --policy` makes before sending anything): exit 0 when every
/// file is valid and allowed, 1 otherwise, 2 when the policy itself is unusable.
pub fn check_with(files: &[PathBuf], json: bool, policy: Option<&Path>) -> i32 {
    let policy = match policy.map(read_policy).transpose() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    let mut bad = false;
    let mut out = Vec::new();
    for f in files {
        let loaded = load_file(f);
        if let (Ok(x), Some(p)) = (&loaded, &policy) {
            if let Err(r) = super::policy::check(x, p) {
                bad = true;
                if !json {
                    eprintln!("{}: refused by the policy: {r}", f.display());
                }
                out.push(serde_json::json!({"file": f.display().to_string(), "ok": false, "refusal": {"rule": r.rule, "detail": r.detail}}));
                continue;
            }
        }
        match loaded {
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
