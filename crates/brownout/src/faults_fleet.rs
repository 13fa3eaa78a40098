//! `brownout faults list --fleet ADMIN,ADMIN…|--fleet-dns NAME --admin-port P`: every
//! relay's faults at once, as one table (or `--json`); a relay that does not answer is a
//! row that says so, and the exit code is 2.

use clap::Args;
use serde_json::{json, Value};
use std::time::Duration;

/// One relay's answer may take this long (all are asked at once).
const TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Args)]
pub struct ListArgs {
    /// The running relay's admin API: the address given to `proxy --admin` (127.0.0.1:9901)
    /// or the URL it printed when it started (http://127.0.0.1:9901).
    #[arg(
        long,
        env = "BROWNOUT_ADMIN",
        value_name = "ADDR|URL",
        required_unless_present_any = ["fleet", "fleet_dns"]
    )]
    pub admin: Option<String>,
    /// Instead of --admin, a fleet's relays: their admin APIs, comma-separated
    /// (`10.0.0.5:9901,10.0.0.6:9901`); one table of every relay's faults.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "ADMIN,ADMIN…",
        conflicts_with = "fleet_dns"
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

impl ListArgs {
    /// Whether this lists a fleet rather than one relay.
    pub fn is_fleet(&self) -> bool {
        !self.fleet.is_empty() || self.fleet_dns.is_some()
    }
}

/// The admin base URLs of the fleet named on the command line.
async fn admins(a: &ListArgs) -> anyhow::Result<Vec<String>> {
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
        let url = crate::admin_addr::admin_url(given)?;
        if !out.contains(&url) {
            out.push(url);
        }
    }
    Ok(out)
}

/// One relay's faults: `Ok(faults)` or why it could not say.
async fn one(http: &reqwest::Client, admin: &str, token: Option<&str>) -> Result<Value, String> {
    let mut req = http.get(format!("{admin}/faults"));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.map_err(|e| {
        if e.is_timeout() {
            "no answer in time".to_string()
        } else if e.is_connect() {
            "cannot connect".to_string()
        } else {
            e.to_string()
        }
    })?;
    let status = resp.status();
    if !status.is_success() {
        return Err(format!("answered {status}"));
    }
    let v: Value = resp.json().await.map_err(|e| format!("not JSON: {e}"))?;
    Ok(v["faults"].clone())
}

/// List every relay's faults; exit 0 when every relay answered, 2 when one did not.
pub async fn list(a: &ListArgs) -> anyhow::Result<i32> {
    let admins = match admins(a).await {
        Ok(x) => x,
        Err(e) => {
            eprintln!("brownout: {e}");
            return Ok(2);
        }
    };
    let http = reqwest::Client::builder().timeout(TIMEOUT).build()?;
    let answers =
        futures::future::join_all(admins.iter().map(|ad| one(&http, ad, a.token.as_deref()))).await;
    let relays: Vec<Value> = admins
        .iter()
        .zip(&answers)
        .map(|(admin, r)| match r {
            Ok(f) => json!({"admin": admin, "reachable": true, "faults": f}),
            Err(e) => json!({"admin": admin, "reachable": false, "error": e}),
        })
        .collect();
    let unreachable = answers.iter().filter(|r| r.is_err()).count();
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
        println!(
            "{} relays, {} faults{}",
            relays.len(),
            faults,
            if unreachable > 0 {
                format!(", {unreachable} not reached")
            } else {
                String::new()
            }
        );
    }
    Ok(if unreachable > 0 { 2 } else { 0 })
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
            rows.push([
                admin,
                format!("NOT REACHED: {e}"),
                String::new(),
                String::new(),
            ]);
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
