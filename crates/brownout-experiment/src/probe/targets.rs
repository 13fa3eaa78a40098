//! `--targets FILE`: many probes in one process. A YAML (or JSON/TOML) list of probes,
//! each with its own monitor options, loaded with the plan loader's `FILE:LINE:COL` errors:
//!
//! ```yaml
//! - probe: mcp
//!   url: http://127.0.0.1:8900/mcp
//!   interval: 10s
//!   alert_after: 2
//!   p95: "< 500ms"
//! - probe: http
//!   url: http://127.0.0.1:8080/health
//!   status: 200
//! ```

use super::spec::{Dur, ProbeSpec};
use brownout_core::slo::tolerance::Tolerance;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One target of a `--targets` file: a probe and how to watch it (the monitor keys sit
/// beside the probe's own).
#[derive(Debug, Clone, Serialize)]
pub struct TargetEntry {
    #[serde(flatten)]
    pub probe: ProbeSpec,
    #[serde(flatten)]
    pub watch: Watch,
}

/// The monitor keys of a target; each defaults to the command line's option.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Watch {
    /// Time between probes (default: `--interval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Dur>,
    /// Failing probes in a row that raise an alert (default: `--alert-after`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub alert_after: Option<u32>,
    /// Limit of the rolling P95 (default: `--p95`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p95: Option<Tolerance>,
    /// Where this target's alerts go (default: `--webhook`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
}

const WATCH_KEYS: [&str; 4] = ["interval", "alert_after", "p95", "webhook"];

impl<'de> Deserialize<'de> for TargetEntry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<TargetEntry, D::Error> {
        use serde::de::Error;
        let mut map = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let mut watch = serde_json::Map::new();
        for k in WATCH_KEYS {
            if let Some(v) = map.remove(k) {
                watch.insert(k.to_string(), v);
            }
        }
        Ok(TargetEntry {
            probe: serde_json::from_value(serde_json::Value::Object(map))
                .map_err(D::Error::custom)?,
            watch: serde_json::from_value(serde_json::Value::Object(watch))
                .map_err(D::Error::custom)?,
        })
    }
}

impl JsonSchema for TargetEntry {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Target".into()
    }

    /// Each probe kind's schema, with the monitor keys added to its properties.
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut probe = g.root_schema_for::<ProbeSpec>();
        let watch = g.root_schema_for::<Watch>();
        let watch_props = watch
            .get("properties")
            .cloned()
            .unwrap_or_else(|| serde_json::json!({}));
        if let Some(variants) = probe.get_mut("oneOf").and_then(|v| v.as_array_mut()) {
            for v in variants {
                if let (Some(props), Some(extra)) = (
                    v.get_mut("properties").and_then(|p| p.as_object_mut()),
                    watch_props.as_object(),
                ) {
                    for (k, s) in extra {
                        props.insert(k.clone(), s.clone());
                    }
                }
            }
        }
        for (k, v) in [
            ("$defs", probe.get("$defs").cloned()),
            ("$defs", watch.get("$defs").cloned()),
        ] {
            if let Some(serde_json::Value::Object(defs)) = v {
                for (name, d) in defs {
                    g.definitions_mut().insert(name, d);
                }
            }
            let _ = k;
        }
        if let Some(o) = probe.as_object_mut() {
            o.remove("$defs");
            o.remove("$schema");
            o.remove("title");
        }
        probe
    }
}

/// Read a targets file.
pub fn load(path: &std::path::Path) -> anyhow::Result<Vec<TargetEntry>> {
    let text = brownout_relay::input::read_document(path)?;
    let list: Vec<TargetEntry> =
        brownout_core::plan::load_document(&text, &path.display().to_string())
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    if list.is_empty() {
        anyhow::bail!("{}: the list of targets is empty", path.display());
    }
    Ok(list)
}

/// The JSON Schema of a targets file.
pub fn schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Vec<TargetEntry>)).unwrap_or_default()
}
