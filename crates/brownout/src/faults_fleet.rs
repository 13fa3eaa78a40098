//! `brownout faults list|clear --fleet ADMIN,ADMIN…|--fleet-dns NAME --admin-port P`: every
//! relay's faults at once, listed as one table (or `--json`) or removed from every relay;
//! a relay that does not answer is a row that says so, and the exit code is 2 (1 when one
//! refused the token). Answers are
//! read up to 1 MiB, redirects are not followed (the token goes to the addresses named),
//! and credentials in an address are never printed.

use crate::experiment::fleet_spec::redact;
use clap::Args;
use serde_json::{json, Value};
use std::time::Duration;

/// One relay's answer may take this long (all are asked at once).
const TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Args)]
pub struct RelayArgs {
    /// The running relay's admin API: the address given to `proxy --admin` (127.0.0.1:9901)
    /// or the URL it printed when it started (http://127.0.0.1:9901). Default: the
    /// environment's BROWNOUT_ADMIN. Not with --fleet or --fleet-dns (next to them,
    /// BROWNOUT_ADMIN is ignored).
    #[arg(
        long,
        value_name = "ADDR|URL",
        conflicts_with_all = ["fleet", "fleet_dns"]
    )]
    pub admin: Option<String>,
    /// Instead of --admin, a fleet's relays: their admin APIs, comma-separated
    /// (`10.0.0.5:9901,10.0.0.6:9901`); one table of every relay's faults.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "ADMIN,ADMIN…",
        conflicts_with_all = ["fleet_dns", "admin_port"]
    )]
    pub fleet: Vec<String>,
    /// Instead of --admin, a fleet found by DNS: every address NAME resolves to is a relay
    /// whose admin API listens on --admin-port (a Kubernetes headless Service).
    #[arg(long, value_name = "NAME", requires = "admin_port")]
    pub fleet_dns: Option<String>,
    /// The admin API's port on every relay of --fleet-dns.
    #[arg(long, value_name = "PORT", requires = "fleet_dns")]
    pub admin_port: Option<u16>,
    /// Bearer token, if the relays require one (the same for every relay).
    #[arg(long, env = "BROWNOUT_ADMIN_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Print the API's JSON answer (with a fleet: `{"relays": [...]}`) instead of a table.
    #[arg(long)]
    pub json: bool,
}

impl RelayArgs {
    /// The one relay (`--admin`, else BROWNOUT_ADMIN), when this names no fleet.
    pub fn one_relay(&self) -> anyhow::Result<String> {
        if let Some(a) = &self.admin {
            return Ok(a.clone());
        }
        match std::env::var("BROWNOUT_ADMIN") {
            Ok(a) if !a.trim().is_empty() => Ok(a),
            _ => anyhow::bail!(
                "say which relay: --admin ADDR (or BROWNOUT_ADMIN in the environment), or a fleet: --fleet ADMIN,ADMIN… or --fleet-dns NAME --admin-port PORT"
            ),
        }
    }

    /// Whether this names a fleet rather than one relay.
    pub fn is_fleet(&self) -> bool {
        !self.fleet.is_empty() || self.fleet_dns.is_some()
    }
}

/// The admin base URLs of the fleet named on the command line.
async fn admins(a: &RelayArgs) -> anyhow::Result<Vec<String>> {
    if let Some(name) = &a.fleet_dns {
        let port = a
            .admin_port
            .ok_or_else(|| anyhow::anyhow!("--fleet-dns needs --admin-port"))?;
        let d = crate::experiment::fleet_spec::FleetDns {
            dns: name.clone(),
            admin_port: port,
            // Only the admin side is asked; the MCP port is not used here.
            mcp_port: port.wrapping_add(1),
            scheme: None,
            path: None,
            every: None,
        };
        let found = crate::experiment::fleet_dns::resolve(&d).await?;
        return Ok(found.into_iter().map(|m| m.admin).collect());
    }
    let mut out: Vec<String> = Vec::new();
    for given in &a.fleet {
        let url = crate::admin_addr::admin_url_of("--fleet", given)?;
        if !out.contains(&url) {
            out.push(url);
        }
    }
    Ok(out)
}

/// Why one relay could not do what it was asked.
enum Trouble {
    /// It answered, refusing the token (exit 1, as for one relay).
    Refused(String),
    /// No (usable) answer.
    NotReached(String),
}

/// One relay's answer to `method /faults`, as JSON, or why there is none. The answer is
/// read up to [`MAX_ANSWER`](crate::experiment::remote::MAX_ANSWER) bytes only.
async fn one(
    http: &reqwest::Client,
    method: reqwest::Method,
    admin: &str,
    token: Option<&str>,
) -> Result<Value, Trouble> {
    let mut req = http.request(method, format!("{admin}/faults"));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.map_err(|e| {
        Trouble::NotReached(if e.is_timeout() {
            "no answer in time".to_string()
        } else if e.is_connect() {
            "cannot connect".to_string()
        } else {
            e.to_string()
        })
    })?;
    let status = resp.status();
    if matches!(status.as_u16(), 401 | 403) {
        return Err(Trouble::Refused(format!(
            "wrong or missing token ({status})"
        )));
    }
    if !status.is_success() {
        return Err(Trouble::NotReached(format!("answered {status}")));
    }
    let body = crate::experiment::remote::read_capped(resp, crate::experiment::remote::MAX_ANSWER)
        .await
        .map_err(|e| Trouble::NotReached(e.to_string()))?;
    serde_json::from_slice(&body).map_err(|e| Trouble::NotReached(format!("not JSON: {e}")))
}

/// One relay's faults: `Ok(faults)` or why it could not say.
async fn faults_of(
    http: reqwest::Client,
    admin: String,
    token: Option<String>,
) -> Result<Value, Trouble> {
    let v = one(&http, reqwest::Method::GET, &admin, token.as_deref()).await?;
    match &v["faults"] {
        Value::Array(_) => Ok(v["faults"].clone()),
        _ => Err(Trouble::NotReached("answered no list of faults".into())),
    }
}

/// Remove one relay's faults: `Ok(how many)` or why not.
async fn clear_one(
    http: reqwest::Client,
    admin: String,
    token: Option<String>,
) -> Result<u64, Trouble> {
    let v = one(&http, reqwest::Method::DELETE, &admin, token.as_deref()).await?;
    v["removed"]
        .as_u64()
        .ok_or_else(|| Trouble::NotReached("answered no count of faults removed".into()))
}

/// The fleet's admin URLs and a client for them, or the exit code when they are not known.
async fn fleet(a: &RelayArgs) -> anyhow::Result<Result<(Vec<String>, reqwest::Client), i32>> {
    let admins = match admins(a).await {
        Ok(x) => x,
        Err(e) => {
            eprintln!("brownout: {e}");
            return Ok(Err(2));
        }
    };
    // No redirects: the token goes to the addresses named (or resolved), nowhere else.
    let http = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    Ok(Ok((admins, http)))
}

/// The fleet's admin URLs and each relay's answer to `ask`, all asked at once; or the exit
/// code when the fleet is not known.
async fn ask_all<T, F, Fut>(
    a: &RelayArgs,
    ask: F,
) -> anyhow::Result<Result<(Vec<String>, Vec<Result<T, Trouble>>), i32>>
where
    F: Fn(reqwest::Client, String, Option<String>) -> Fut,
    Fut: std::future::Future<Output = Result<T, Trouble>>,
{
    let (admins, http) = match fleet(a).await? {
        Ok(f) => f,
        Err(code) => return Ok(Err(code)),
    };
    let answers = futures::future::join_all(
        admins
            .iter()
            .map(|ad| ask(http.clone(), ad.clone(), a.token.clone())),
    )
    .await;
    Ok(Ok((admins, answers)))
}

/// As for one relay: 2 when one was not reached, else 1 when one refused the token, else 0.
fn exit_code<T>(answers: &[Result<T, Trouble>]) -> i32 {
    if answers
        .iter()
        .any(|r| matches!(r, Err(Trouble::NotReached(_))))
    {
        2
    } else if answers
        .iter()
        .any(|r| matches!(r, Err(Trouble::Refused(_))))
    {
        1
    } else {
        0
    }
}

/// One JSON row per relay (credentials in its address hidden): what it answered, under
/// the key `ok` names, or why it did not.
fn rows<T>(
    admins: &[String],
    answers: &[Result<T, Trouble>],
    ok: impl Fn(&T) -> (&'static str, Value),
) -> Vec<Value> {
    admins
        .iter()
        .zip(answers)
        .map(|(admin, r)| {
            let admin = redact(admin);
            match r {
                Ok(v) => {
                    let (key, value) = ok(v);
                    json!({"admin": admin, "reachable": true, key: value})
                }
                Err(Trouble::Refused(e)) => {
                    json!({"admin": admin, "reachable": true, "refused": true, "error": e})
                }
                Err(Trouble::NotReached(e)) => {
                    json!({"admin": admin, "reachable": false, "error": e})
                }
            }
        })
        .collect()
}

/// Remove every fault from every relay at once (the fleet's stop button); exit 0 when every
/// relay said it removed its faults, 2 when one was not reached, 1 when one refused the token.
pub async fn clear(a: &RelayArgs) -> anyhow::Result<i32> {
    let (admins, answers) = match ask_all(a, clear_one).await? {
        Ok(x) => x,
        Err(code) => return Ok(code),
    };
    let relays = rows(&admins, &answers, |n| ("removed", json!(n)));
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"relays": relays}))?
        );
    } else {
        let mut removed = 0;
        for r in &relays {
            let admin = r["admin"].as_str().unwrap_or("?");
            match (r["removed"].as_u64(), r["error"].as_str()) {
                (Some(n), _) => {
                    removed += n;
                    println!("{admin}  removed {n} fault{}", plural(n as usize));
                }
                (None, Some(e)) if r["refused"] == true => println!("{admin}  REFUSED: {e}"),
                (None, e) => println!("{admin}  NOT REACHED: {}", e.unwrap_or("?")),
            }
        }
        let failed = answers.iter().filter(|r| r.is_err()).count();
        let mut line = format!(
            "{} relay{}, {removed} fault{} removed",
            relays.len(),
            plural(relays.len()),
            plural(removed as usize)
        );
        if failed > 0 {
            line.push_str(&format!(
                "; {failed} relay{} NOT cleared: their faults may still be on",
                plural(failed)
            ));
        }
        println!("{line}");
    }
    Ok(exit_code(&answers))
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// List every relay's faults; exit 0 when every relay answered, 2 when one did not.
pub async fn list(a: &RelayArgs) -> anyhow::Result<i32> {
    let (admins, answers) = match ask_all(a, faults_of).await? {
        Ok(x) => x,
        Err(code) => return Ok(code),
    };
    let relays = rows(&admins, &answers, |f| ("faults", f.clone()));
    let unreachable = answers
        .iter()
        .filter(|r| matches!(r, Err(Trouble::NotReached(_))))
        .count();
    let refused = answers
        .iter()
        .filter(|r| matches!(r, Err(Trouble::Refused(_))))
        .count();
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"relays": relays}))?
        );
    } else {
        print!("{}", table(&relays));
        let faults: usize = relays
            .iter()
            .map(|r| r["faults"].as_array().map_or(0, Vec::len))
            .sum();
        let mut line = format!(
            "{} relay{}, {} fault{}",
            relays.len(),
            plural(relays.len()),
            faults,
            plural(faults)
        );
        if refused > 0 {
            line.push_str(&format!(", {refused} refused the token"));
        }
        if unreachable > 0 {
            line.push_str(&format!(", {unreachable} not reached"));
        }
        println!("{line}");
    }
    Ok(exit_code(&answers))
}

/// The table: one row per fault, a relay without faults or not reached on a row of its own.
fn table(relays: &[Value]) -> String {
    let mut rows: Vec<[String; 4]> = vec![[
        "RELAY".into(),
        "FAULT".into(),
        "KIND".into(),
        "EXPIRES".into(),
    ]];
    for r in relays {
        let admin = r["admin"].as_str().unwrap_or("?").to_string();
        if let Some(e) = r["error"].as_str() {
            let what = if r["refused"] == true {
                "REFUSED"
            } else {
                "NOT REACHED"
            };
            rows.push([admin, format!("{what}: {e}"), String::new(), String::new()]);
            continue;
        }
        let faults = r["faults"].as_array().cloned().unwrap_or_default();
        if faults.is_empty() {
            rows.push([admin.clone(), "-".into(), String::new(), String::new()]);
        }
        for f in faults {
            rows.push([
                admin.clone(),
                f["id"].as_str().unwrap_or("?").to_string(),
                f["kind"].as_str().unwrap_or("?").to_string(),
                f["expires_in_s"]
                    .as_f64()
                    .map_or("never".into(), |s| format!("{s:.1}s")),
            ]);
        }
    }
    let widths: Vec<usize> = (0..4)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in &rows {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_a_row_per_fault_and_per_silent_relay() {
        let relays = vec![
            json!({"admin": "http://a:1", "reachable": true, "faults": [
                {"id": "x--brownout-run-7", "kind": "error", "expires_in_s": 4.25}]}),
            json!({"admin": "http://b:1", "reachable": true, "faults": []}),
            json!({"admin": "http://c:1", "reachable": false, "error": "cannot connect"}),
        ];
        let t = table(&relays);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4, "{t}");
        assert!(
            lines[1].contains("x--brownout-run-7") && lines[1].contains("4.2s"),
            "{t}"
        );
        assert!(
            lines[2].starts_with("http://b:1") && lines[2].contains('-'),
            "{t}"
        );
        assert!(lines[3].contains("NOT REACHED: cannot connect"), "{t}");
    }
}
