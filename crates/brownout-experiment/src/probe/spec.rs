//! What a probe is: [`ProbeSpec`], read from YAML (a `--targets` file, an experiment's
//! `steady_state:` list) or built from the command line. A superset of the experiment
//! runner's steady-state `mcp` probe (`{probe: mcp, call: {tool, arguments}, tolerance:
//! {success, p50, p95, p99}, samples}`).

use brownout_core::slo::tolerance::Tolerance;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// One probe, tagged by `probe:` (`mcp`, `http`, `command` or `sli`).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(tag = "probe", rename_all = "snake_case")]
// Specs are few and built once; boxing would only make building them clumsier.
#[allow(clippy::large_enum_variant)]
pub enum ProbeSpec {
    /// A real MCP session: initialize, tools/list, optionally tools/call, clean close.
    Mcp(McpProbe),
    /// An HTTP request: status, latency, JSON paths in the body (e.g. a `/health`).
    Http(HttpProbe),
    /// A command: exit code, stdout.
    Command(CommandProbe),
    /// A check over a running relay's live SLIs, read from its admin API `/status`.
    Sli(SliProbe),
}

/// How to reach an MCP server over HTTP.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// Streamable HTTP, falling back to legacy SSE when the server refuses the POST
    /// (404/405) or the URL ends in `/sse`.
    #[default]
    Auto,
    /// Streamable HTTP only.
    Streamable,
    /// Legacy HTTP+SSE (GET the stream, POST to the endpoint it names).
    Sse,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpProbe {
    /// The server's MCP URL. Give `url` or `command`; in an experiment's steady state,
    /// neither: the experiment's target is used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A stdio server to start for each probe (program and arguments).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    #[serde(default)]
    pub transport: Transport,
    /// Headers sent with every HTTP request (values are never printed).
    #[serde(default, skip_serializing_if = "Headers::is_empty")]
    pub headers: Headers,
    /// A tool to call after `tools/list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<ProbeCall>,
    /// Tolerances the call's `result` must meet, usually with a JSON path:
    /// `$.content[0].text ~ /found/`, `$.structuredContent.count >= 1`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect: Vec<Tolerance>,
    /// Bounds over `samples` probes (the experiment runner's steady-state check).
    #[serde(default)]
    pub tolerance: SampleTolerance,
    /// Probes per check (default 1; the experiment runner's default is 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 10000))]
    pub samples: Option<u32>,
    /// Time budget of one probe, all phases together (default 10s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Dur>,
    /// Not in a file: the W3C trace context (`traceparent`) every request carries in
    /// `params._meta`, so a relay's spans for them join a run's trace (`run --otlp`).
    #[serde(skip)]
    #[schemars(skip)]
    pub traceparent: Option<String>,
}

/// The call an `mcp` probe makes.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProbeCall {
    pub tool: String,
    /// Its arguments (default `{}`).
    #[serde(default)]
    pub arguments: serde_json::Map<String, serde_json::Value>,
}

/// Bounds on a series of samples: `success` as `">= 99%"`, latency percentiles as
/// `"< 500ms"` (any tolerance of the shared language).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SampleTolerance {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success: Option<Tolerance>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50: Option<Tolerance>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p95: Option<Tolerance>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99: Option<Tolerance>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpProbe {
    pub url: String,
    /// GET unless given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(default, skip_serializing_if = "Headers::is_empty")]
    pub headers: Headers,
    /// A request body (sent as it is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The status expected: a code (`503`) or a tolerance (`"200..299"`, the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<CodeOrTolerance>,
    /// A bound on the response time, e.g. `"< 500ms"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Tolerance>,
    /// Tolerances the body must meet: `$.reason == "database_unreachable"`, `~ /ok/`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect: Vec<Tolerance>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Dur>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandProbe {
    /// Program and arguments (no shell).
    #[schemars(length(min = 1))]
    pub command: Vec<String>,
    /// The exit code expected: a code (default 0) or a tolerance (`"!= 0"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<CodeOrTolerance>,
    /// A tolerance stdout must meet: `~ /healthy/`, `"ok"`, `$.status == "up"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout: Option<Tolerance>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Dur>,
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SliProbe {
    /// The relay's admin API, e.g. `http://127.0.0.1:9901`.
    pub admin: String,
    /// The environment variable holding the admin API's bearer token, if it needs one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_env: Option<String>,
    /// `SLI TOLERANCE` over the relay's `/status`: `error_rate < 1%`, `p95 < 500ms`,
    /// `calls >= 1`; or a tolerance with a JSON path into `/status`.
    pub check: super::kinds::SliCheck,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Dur>,
}

/// A status or exit code: a number, or a tolerance.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum CodeOrTolerance {
    Code(i64),
    Tolerance(Tolerance),
}

impl CodeOrTolerance {
    pub fn accepts(&self, code: i64) -> bool {
        match self {
            CodeOrTolerance::Code(c) => *c == code,
            CodeOrTolerance::Tolerance(t) => t.check_number(code as f64),
        }
    }
}

/// A duration written `10s`, `500ms`, `2m`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dur(pub Duration);

impl std::str::FromStr for Dur {
    type Err = String;
    fn from_str(s: &str) -> Result<Dur, String> {
        brownout_core::duration::parse_flag(s).map(Dur)
    }
}

impl Serialize for Dur {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{}ms", self.0.as_millis()))
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Dur, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Dur {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": r"^\s*[0-9]+(\.[0-9]+)?\s*(ms|s|m|h)?\s*$",
            "examples": ["10s", "500ms", "2m"],
        })
    }
}

/// Request headers whose values are secrets: sent, never printed (`Debug` and
/// serialization show `***`).
#[derive(Clone, Default, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct Headers(pub BTreeMap<String, String>);

impl Headers {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Parse `Name: value` (as `--header` takes it).
    pub fn add(&mut self, line: &str) -> Result<(), String> {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| "a header is written `Name: value`".to_string())?;
        let name = name.trim();
        if name.is_empty() || reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
            return Err(format!("`{name}` is not a header name"));
        }
        self.0.insert(name.to_string(), value.trim().to_string());
        Ok(())
    }

    /// The values, to scrub from anything printed.
    pub fn secrets(&self) -> impl Iterator<Item = &str> {
        self.0.values().map(String::as_str).filter(|v| v.len() >= 3)
    }

    pub(crate) fn header_map(&self) -> Result<reqwest::header::HeaderMap, String> {
        let mut m = reqwest::header::HeaderMap::new();
        for (k, v) in &self.0 {
            let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| format!("`{k}` is not a header name"))?;
            let mut value = reqwest::header::HeaderValue::from_str(v)
                .map_err(|_| format!("the value of header `{k}` is not valid in a header"))?;
            value.set_sensitive(true);
            m.insert(name, value);
        }
        Ok(m)
    }
}

impl std::fmt::Debug for Headers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|k| (k, "***")))
            .finish()
    }
}

impl Serialize for Headers {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.keys().map(|k| (k, "***")))
    }
}

impl ProbeSpec {
    /// A short, printable name of what the probe looks at (no header values; no URL
    /// credentials).
    pub fn target(&self) -> String {
        match self {
            ProbeSpec::Mcp(m) => match (&m.url, m.command.is_empty()) {
                (Some(u), _) => scrub_url(u),
                (None, false) => m.command.join(" "),
                (None, true) => "(the experiment's target)".into(),
            },
            ProbeSpec::Http(h) => scrub_url(&h.url),
            ProbeSpec::Command(c) => c.command.join(" "),
            ProbeSpec::Sli(s) => format!("{} {}", scrub_url(&s.admin), s.check),
        }
    }

    /// The probe's time budget (default 10 s).
    pub fn timeout(&self) -> Duration {
        let t = match self {
            ProbeSpec::Mcp(m) => m.timeout,
            ProbeSpec::Http(h) => h.timeout,
            ProbeSpec::Command(c) => c.timeout,
            ProbeSpec::Sli(s) => s.timeout,
        };
        t.map_or(Duration::from_secs(10), |d| d.0)
    }

    /// Give an `mcp` probe without a target this URL (the experiment's).
    pub fn with_default_url(mut self, url: &str) -> ProbeSpec {
        if let ProbeSpec::Mcp(m) = &mut self {
            if m.url.is_none() && m.command.is_empty() {
                m.url = Some(url.to_string());
            }
        }
        self
    }

    /// Header values, to scrub from anything printed.
    pub fn secrets(&self) -> Vec<String> {
        let h = match self {
            ProbeSpec::Mcp(m) => &m.headers,
            ProbeSpec::Http(h) => &h.headers,
            _ => return Vec::new(),
        };
        h.secrets().map(str::to_string).collect()
    }
}

/// A URL without its `user:password@`.
pub fn scrub_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) if !u.username().is_empty() || u.password().is_some() => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.to_string()
        }
        _ => url.to_string(),
    }
}
