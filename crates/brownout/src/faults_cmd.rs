//! `brownout faults list|add|rm|clear|status`: the admin API of a running relay, from the
//! shell (`status` also serves as a container's liveness/readiness probe: docs/deploy.md).

/// `faults list|clear --fleet`: every relay of a fleet at once.
#[path = "faults_fleet.rs"]
pub mod fleet;

use crate::admin_addr::admin_url;
use clap::{Args, Subcommand};
use serde_json::Value;
use std::path::PathBuf;

#[derive(Args)]
pub struct Target {
    /// The running relay's admin API: the address given to `proxy --admin` (127.0.0.1:9901)
    /// or the URL it printed when it started (http://127.0.0.1:9901).
    #[arg(long, env = "BROWNOUT_ADMIN", value_name = "ADDR|URL")]
    pub admin: String,
    /// Bearer token, if the relay requires one.
    #[arg(long, env = "BROWNOUT_ADMIN_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Print the API's JSON answer instead of a summary.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum FaultsCmd {
    /// List the running faults, of one relay or of a whole fleet (`--fleet`, `--fleet-dns`).
    ///
    /// One of --admin (or BROWNOUT_ADMIN), --fleet, --fleet-dns with --admin-port; two of
    /// them together are refused.
    ///
    /// Exit codes: 0 listed; 1 a relay refused the token; 2 a relay not reached, or the
    /// command line is wrong (conflicting or missing flags, an address that is none).
    ///
    /// Example:
    ///   brownout faults list --fleet 10.0.0.5:9901,10.0.0.6:9901 --token "$TOKEN"
    List(fleet::RelayArgs),
    /// Add a fault, in plan syntax: inline (`'{kind: latency, added_ms: 500}'`) or `--file F`.
    ///
    /// Example:
    ///   brownout faults add --admin http://127.0.0.1:9901 --ttl 30s '{id: slow, kind: latency, tools: [search_*], added_ms: 800}'
    Add {
        #[command(flatten)]
        target: Target,
        /// The fault, as YAML or JSON.
        #[arg(required_unless_present = "file", conflicts_with = "file")]
        fault: Option<String>,
        /// Read the fault from this file instead.
        #[arg(long)]
        file: Option<PathBuf>,
        /// Remove the fault by itself after this long (30s, 500ms, 2m).
        #[arg(long)]
        ttl: Option<String>,
    },
    /// Remove a fault by id (`brownout faults list` shows the ids).
    Rm {
        #[command(flatten)]
        target: Target,
        /// The id of the fault to remove, as `faults list` shows it.
        id: String,
    },
    /// Remove every fault: traffic passes untouched. With --fleet or --fleet-dns, from every
    /// relay at once (the fleet's stop button): a line per relay with how many it removed.
    ///
    /// One of --admin (or BROWNOUT_ADMIN), --fleet, --fleet-dns with --admin-port.
    ///
    /// Exit codes: 0 every relay named cleared; 1 a relay refused the token; 2 a relay not
    /// reached (its faults may still be on: their leases, if any, still end them), or the
    /// command line is wrong.
    ///
    /// Example:
    ///   brownout faults clear --fleet 10.0.0.5:9901,10.0.0.6:9901 --token "$TOKEN"
    Clear(fleet::RelayArgs),
    /// The relay's GET /status (uptime, sessions, calls); exit 0 when it answers. A
    /// Kubernetes exec probe in an image with nothing but brownout (docs/deploy.md).
    Status(Target),
}

/// Exit codes: 0 done, 1 refused by the relay (invalid fault, unknown id), 2 unreachable.
pub async fn run(cmd: FaultsCmd) -> anyhow::Result<i32> {
    let (target, method, path, body) = match cmd {
        FaultsCmd::List(l) if l.is_fleet() => return fleet::list(&l).await,
        FaultsCmd::Clear(l) if l.is_fleet() => return fleet::clear(&l).await,
        FaultsCmd::List(l) => match one_target(l, "list") {
            Ok(t) => (t, reqwest::Method::GET, "/faults".to_string(), None),
            Err(code) => return Ok(code),
        },
        FaultsCmd::Clear(l) => match one_target(l, "clear") {
            Ok(t) => (t, reqwest::Method::DELETE, "/faults".to_string(), None),
            Err(code) => return Ok(code),
        },
        FaultsCmd::Add {
            target,
            fault,
            file,
            ttl,
        } => {
            let text = match (fault, file) {
                (Some(f), _) => f,
                (None, Some(p)) => crate::input::read_document(&p)?,
                (None, None) => anyhow::bail!("give the fault inline or with --file"),
            };
            let path = match ttl {
                Some(t) => {
                    if let Err(e) = crate::control::admin::parse_duration(&t) {
                        anyhow::bail!("--ttl {e}");
                    }
                    format!("/faults?ttl={}", urlencode(&t))
                }
                None => "/faults".into(),
            };
            (target, reqwest::Method::POST, path, Some(text))
        }
        FaultsCmd::Rm { target, id } => (
            target,
            reqwest::Method::DELETE,
            format!("/faults/{}", urlencode(&id)),
            None,
        ),
        FaultsCmd::Status(t) => (t, reqwest::Method::GET, "/status".into(), None),
    };
    let base = admin_url(&target.admin)?;
    let url = format!("{base}{path}");
    let client = reqwest::Client::new();
    let mut req = client.request(method.clone(), &url);
    if let Some(t) = &target.token {
        req = req.bearer_auth(t);
    }
    if let Some(b) = body {
        // Plan syntax is YAML (JSON is YAML too).
        req = req
            .header(reqwest::header::CONTENT_TYPE, "application/yaml")
            .body(b);
    }
    let resp = match req.send().await {
        Ok(r) => r,
        Err(e) => {
            eprintln!(
                "brownout: cannot reach the admin API at {base}: {}",
                why_unreachable(&e)
            );
            return Ok(2);
        }
    };
    let status = resp.status();
    let v: Value = resp.json().await.unwrap_or(Value::Null);
    if target.json {
        println!("{}", serde_json::to_string_pretty(&v)?);
    }
    if !status.is_success() {
        if !target.json {
            match v["errors"].as_array() {
                Some(errs) => errs
                    .iter()
                    .filter_map(Value::as_str)
                    .for_each(|e| eprintln!("{e}")),
                None => eprintln!("brownout: the relay answered {status}"),
            }
        }
        return Ok(1);
    }
    if !target.json {
        print_summary(&method, &v);
    }
    Ok(0)
}

/// The one relay `faults VERB` names (no fleet), or exit code 2 when none is named.
fn one_target(l: fleet::RelayArgs, verb: &str) -> Result<Target, i32> {
    match l.one_relay() {
        Ok(admin) => Ok(Target {
            admin,
            token: l.token,
            json: l.json,
        }),
        Err(e) => {
            eprintln!("brownout faults {verb}: {e}");
            Err(2)
        }
    }
}

fn print_summary(method: &reqwest::Method, v: &Value) {
    if let Some(faults) = v["faults"].as_array() {
        if faults.is_empty() {
            println!("no faults: traffic passes untouched");
        }
        for f in faults {
            let ttl = f["expires_in_s"]
                .as_f64()
                .map(|s| format!("  (expires in {s:.1}s)"))
                .unwrap_or_default();
            println!(
                "{:<24} {:<15} {}{ttl}",
                f["id"].as_str().unwrap_or("?"),
                f["kind"].as_str().unwrap_or("?"),
                f["spec"]
            );
        }
    } else if let Some(id) = v["id"].as_str() {
        println!("added {id}");
    } else if *method == reqwest::Method::GET {
        println!("relay up: {v}");
    } else if *method == reqwest::Method::DELETE {
        match &v["removed"] {
            Value::String(id) => println!("removed {id}"),
            n => println!("removed {n} fault(s)"),
        }
    }
}

/// Why a request got no answer, in plain words ("connection refused: is a relay running
/// with --admin there?") rather than the HTTP client's chain of error types.
fn why_unreachable(e: &reqwest::Error) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return match io.kind() {
                std::io::ErrorKind::ConnectionRefused => {
                    "connection refused: is a relay running with --admin at that address?".into()
                }
                _ => io.to_string(),
            };
        }
        source = s.source();
    }
    if e.is_timeout() {
        return "no answer in time".into();
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    text
}

/// Percent-encode a path segment or query value (ids and durations are short and plain;
/// this keeps a stray `/` or `?` from changing the request).
fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
