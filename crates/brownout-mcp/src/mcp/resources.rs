//! Resources: each stored run as `brownout://runs/{id}` (its journal as JSON) and
//! `brownout://runs/{id}/report.md` (the Markdown report), the policy in force as
//! `brownout://policy`, the fault-kind catalogue as `brownout://fault-kinds`.

use super::Ctx;
use brownout_store::store::{ListFilter, Store};
use serde_json::{json, Value};

/// The most runs listed as resources (newest first); older ones are read by URI.
const MAX_LISTED: u64 = 100;

pub fn list(ctx: &Ctx) -> Value {
    let mut resources = vec![
        json!({"uri": "brownout://policy", "name": "policy", "title": "The guardrail policy in force", "mimeType": "application/json"}),
        json!({"uri": "brownout://fault-kinds", "name": "fault-kinds", "title": "Fault kinds", "mimeType": "application/json"}),
    ];
    if let Ok(s) = brownout_store::store::open(ctx.cfg.store.as_deref()) {
        let filter = ListFilter {
            limit: Some(MAX_LISTED),
            ..ListFilter::default()
        };
        for r in s.list(&filter).unwrap_or_default() {
            resources.push(json!({
                "uri": format!("brownout://runs/{}", r.run_id),
                "name": r.run_id,
                "title": format!("{} — {} ({})", r.experiment, r.status, r.run_id),
                "mimeType": "application/json",
            }));
        }
    }
    json!({ "resources": resources, "resultType": "complete" })
}

pub fn templates() -> Value {
    json!({"resultType": "complete", "resourceTemplates": [
        {"uriTemplate": "brownout://runs/{id}", "name": "run-journal", "title": "A run's journal (JSON)", "mimeType": "application/json"},
        {"uriTemplate": "brownout://runs/{id}/report.md", "name": "run-report", "title": "A run's report (Markdown)", "mimeType": "text/markdown"},
    ]})
}

fn text(uri: &str, mime: &str, text: String) -> Value {
    json!({"resultType": "complete", "contents": [{"uri": uri, "mimeType": mime, "text": text}]})
}

pub fn read(ctx: &Ctx, uri: &str) -> Result<Value, String> {
    let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_default();
    match uri {
        "brownout://policy" => {
            let v = super::read::get_policy(ctx)?;
            return Ok(text(uri, "application/json", pretty(&v)));
        }
        "brownout://fault-kinds" => {
            let v = super::read::list_fault_kinds()?;
            return Ok(text(uri, "application/json", pretty(&v["kinds"])));
        }
        _ => {}
    }
    let rest = uri
        .strip_prefix("brownout://runs/")
        .ok_or_else(|| format!("no resource {uri}"))?;
    let (id, md) = match rest.strip_suffix("/report.md") {
        Some(id) => (id, true),
        None => (rest, false),
    };
    let s = brownout_store::store::open(ctx.cfg.store.as_deref()).map_err(|e| e.to_string())?;
    let (_, j) = s.journal(id).map_err(|e| e.to_string())?;
    Ok(if md {
        text(
            uri,
            "text/markdown",
            brownout_store::report::markdown::render(&j),
        )
    } else {
        text(uri, "application/json", pretty(&j))
    })
}
