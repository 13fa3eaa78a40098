//! The probes other than `mcp`: `http` (status, latency, body), `command` (exit code,
//! stdout) and `sli` (a check over a running relay's `/status`).

use super::mcp::clip;
use super::reason::{classify_http, Failure, FailureReason};
use super::spec::{CommandProbe, HttpProbe, SliProbe};
use super::Phases;
use brownout_core::slo::tolerance::Tolerance;
use std::process::Stdio;
use tokio::time::Instant;

pub async fn http(
    h: &HttpProbe,
    client: &reqwest::Client,
    deadline: Instant,
    phases: &mut Phases,
) -> Result<String, Failure> {
    let method = reqwest::Method::from_bytes(h.method.as_deref().unwrap_or("GET").as_bytes())
        .map_err(|_| Failure::protocol("not an HTTP method"))?;
    let headers = h.headers.header_map().map_err(Failure::protocol)?;
    let mut req = client.request(method, &h.url).headers(headers);
    if let Some(b) = &h.body {
        req = req.body(b.clone());
    }
    let started = std::time::Instant::now();
    let (status, body) = phases
        .time("request", deadline, async {
            let resp = req.send().await.map_err(|e| classify_http(&e))?;
            let status = resp.status();
            let body = resp.bytes().await.map_err(|e| classify_http(&e))?;
            Ok((status, body))
        })
        .await?;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let text = String::from_utf8_lossy(&body);
    let code = i64::from(status.as_u16());
    let status_ok = match &h.status {
        Some(s) => s.accepts(code),
        None => status.is_success(),
    };
    if !status_ok {
        return Err(Failure::new(
            FailureReason::HttpStatus {
                code: status.as_u16(),
            },
            format!("HTTP {status}: {}", clip(&text)),
        ));
    }
    if let Some(l) = &h.latency {
        if !l.check_number(ms) {
            return Err(Failure::new(
                FailureReason::Latency,
                format!("answered in {ms:.0} ms, not `{l}`"),
            ));
        }
    }
    for e in &h.expect {
        if !e.check_text(&text) {
            return Err(Failure::new(
                FailureReason::UnexpectedContent,
                format!("the body does not meet `{e}`: {}", clip(&text)),
            ));
        }
    }
    Ok(format!("HTTP {}", status.as_u16()))
}

pub async fn command(
    c: &CommandProbe,
    deadline: Instant,
    phases: &mut Phases,
) -> Result<String, Failure> {
    let (program, args) = c
        .command
        .split_first()
        .ok_or_else(|| Failure::new(FailureReason::SpawnFailed, "no command given"))?;
    let child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| {
            Failure::new(
                FailureReason::SpawnFailed,
                format!("cannot start `{program}`: {e}"),
            )
        })?;
    let out = phases
        .time("run", deadline, async {
            child
                .wait_with_output()
                .await
                .map_err(|e| Failure::new(FailureReason::SpawnFailed, format!("`{program}`: {e}")))
        })
        .await?;
    let code = out.status.code();
    let exit_ok = match (&c.exit, code) {
        (Some(e), Some(code)) => e.accepts(i64::from(code)),
        (None, Some(code)) => code == 0,
        (_, None) => false,
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !exit_ok {
        return Err(Failure::new(
            FailureReason::ExitStatus { code },
            format!("`{program}` exited with {}", out.status),
        ));
    }
    if let Some(t) = &c.stdout {
        if !t.check_text(&stdout) {
            return Err(Failure::new(
                FailureReason::UnexpectedContent,
                format!("stdout does not meet `{t}`: {}", clip(&stdout)),
            ));
        }
    }
    Ok(format!("exit {}", code.unwrap_or(-1)))
}

pub async fn sli(
    s: &SliProbe,
    client: &reqwest::Client,
    deadline: Instant,
    phases: &mut Phases,
) -> Result<String, Failure> {
    // `127.0.0.1:9901` as `brownout faults --admin` takes it, or a URL.
    let base = s.admin.trim_end_matches('/');
    let url = if base.contains("://") {
        format!("{base}/status")
    } else {
        format!("http://{base}/status")
    };
    let mut req = client.get(&url);
    if let Some(var) = &s.token_env {
        match std::env::var(var) {
            Ok(token) => req = req.bearer_auth(token),
            Err(_) => {
                return Err(Failure::protocol(format!(
                    "the environment variable `{var}` (the admin token) is not set"
                )))
            }
        }
    }
    let doc: serde_json::Value = phases
        .time("status", deadline, async {
            let resp = req.send().await.map_err(|e| classify_http(&e))?;
            if !resp.status().is_success() {
                return Err(Failure::new(
                    FailureReason::HttpStatus {
                        code: resp.status().as_u16(),
                    },
                    format!("the admin API answered HTTP {}", resp.status()),
                ));
            }
            resp.json()
                .await
                .map_err(|_| Failure::protocol("the admin API's /status is not JSON"))
        })
        .await?;
    if s.check.tolerance.check_json(&doc) {
        Ok(format!("`{}` holds", s.check))
    } else {
        let value = s
            .check
            .path
            .as_deref()
            .and_then(|p| brownout_core::slo::tolerance::JsonPath::parse(p).ok())
            .and_then(|p| p.select(&doc).cloned())
            .map_or("nothing".to_string(), |v| v.to_string());
        Err(Failure::new(
            FailureReason::SliBreached,
            format!("`{}` does not hold (the relay says {value})", s.check),
        ))
    }
}

/// `SLI TOLERANCE` (`error_rate < 1%`, `p95 < 500ms`) or `$.path TOLERANCE` over `/status`.
#[derive(Debug, Clone)]
pub struct SliCheck {
    text: String,
    path: Option<String>,
    tolerance: Tolerance,
}

/// The SLIs an `sli` probe names, and where `/status` keeps them.
pub const SLI_PATHS: [(&str, &str); 8] = [
    ("error_rate", "$.summary.error_rate"),
    ("p50", "$.summary.latency_ms.p50"),
    ("p95", "$.summary.latency_ms.p95"),
    ("p99", "$.summary.latency_ms.p99"),
    ("calls", "$.summary.calls"),
    ("tool_calls", "$.summary.tool_calls"),
    ("sessions", "$.sessions"),
    ("pending", "$.pending"),
];

impl std::str::FromStr for SliCheck {
    type Err = String;
    fn from_str(text: &str) -> Result<SliCheck, String> {
        let t = text.trim();
        if t.split_whitespace().any(|w| w == "over") {
            return Err(format!(
                "`{t}`: an sli probe reads the relay's whole-run figures from /status; windows (`over …`) belong to experiment gates: write e.g. `error_rate < 1%`"
            ));
        }
        let (path, tol_text) = if t.starts_with('$') {
            (None, t.to_string())
        } else {
            let (word, rest) = t.split_once(char::is_whitespace).unwrap_or((t, ""));
            let Some((_, path)) = SLI_PATHS.iter().find(|(n, _)| *n == word) else {
                let names: Vec<&str> = SLI_PATHS.iter().map(|(n, _)| *n).collect();
                let hint = brownout_core::plan::suggest(word, names.iter().copied())
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                return Err(format!(
                    "`{word}` is not an SLI of /status{hint}: one of {}, or a JSON path `$.…`",
                    names.join(", ")
                ));
            };
            (Some((*path).to_string()), format!("{path} {rest}"))
        };
        let tolerance = Tolerance::parse(&tol_text).map_err(|e| e.to_string())?;
        Ok(SliCheck {
            text: t.to_string(),
            path,
            tolerance,
        })
    }
}

impl std::fmt::Display for SliCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl serde::Serialize for SliCheck {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> serde::Deserialize<'de> for SliCheck {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<SliCheck, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for SliCheck {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SliCheck".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "minLength": 1,
            "description": "SLI TOLERANCE over the relay's /status: error_rate, p50, p95, p99, calls, tool_calls, sessions, pending; or a JSON path tolerance.",
            "examples": ["error_rate < 1%", "p95 < 500ms", "$.summary.tools.search.error_rate < 5%"],
        })
    }
}
