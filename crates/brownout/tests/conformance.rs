//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, on Node 22 from
//! peers/npm) against server-everything directly and through brownout with an empty plan:
//! every check of every scenario must come out the same. brownout's own DNS-rebinding
//! protection is switched off for that comparison (`--allow-origin '*' --allow-host '*'`)
//! so brownout is fully transparent; with its defaults, the suite's DNS-rebinding scenario
//! must pass through brownout whatever the server does.

mod common;

use common::http::{brownout_http, everything_http};
use common::{repo, tmp};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Run the server suite against `url`; returns "scenario/check" → status.
fn run_suite(url: &str, out: &Path, scenario: Option<&str>) -> BTreeMap<String, String> {
    let node_bin = repo().join("peers/npm/node_modules/node/bin");
    let suite =
        repo().join("peers/npm/node_modules/@modelcontextprotocol/conformance/dist/index.js");
    assert!(
        suite.exists(),
        "run scripts/setup-peers: {} is missing",
        suite.display()
    );
    let path = format!(
        "{}:{}",
        node_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new(node_bin.join("node"));
    cmd.arg(&suite)
        .args(["server", "--url", url, "-o"])
        .arg(out)
        .env("PATH", path);
    if let Some(s) = scenario {
        cmd.args(["--scenario", s]);
    }
    let run = cmd.output().expect("run the conformance suite");
    let mut results = BTreeMap::new();
    for entry in std::fs::read_dir(out).expect("results directory").flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        // server-<scenario>-<timestamp>
        let scenario = name
            .strip_prefix("server-")
            .and_then(|n| n.find("-20").map(|i| n[..i].to_string()))
            .unwrap_or(name.clone());
        let Ok(text) = std::fs::read_to_string(entry.path().join("checks.json")) else {
            continue;
        };
        let checks: Vec<serde_json::Value> = serde_json::from_str(&text).expect("checks.json");
        for c in checks {
            results.insert(
                format!("{scenario}/{}", c["id"].as_str().unwrap_or("?")),
                c["status"].as_str().unwrap_or("?").to_string(),
            );
        }
    }
    assert!(
        !results.is_empty(),
        "the suite produced no results: {}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    results
}

#[test]
fn the_conformance_suite_sees_the_same_server_through_brownout() {
    let (_server, direct_url) = everything_http("streamableHttp");
    let (_relay, through_url) = brownout_http(&[
        "--upstream",
        &direct_url,
        "--allow-origin",
        "*",
        "--allow-host",
        "*",
    ]);
    let dir = tmp();
    let direct = run_suite(&direct_url, &dir.path().join("direct"), None);
    let through = run_suite(&through_url, &dir.path().join("through"), None);
    assert!(direct.len() >= 20, "too few checks ran: {direct:?}");
    let passed = direct.values().filter(|s| *s == "SUCCESS").count();
    assert!(
        passed >= 10,
        "the direct run should pass a good part of the suite: {direct:?}"
    );
    let differences: Vec<String> = direct
        .iter()
        .filter(|(k, v)| through.get(*k) != Some(*v))
        .map(|(k, v)| format!("{k}: direct {v}, through {:?}", through.get(k)))
        .chain(
            through
                .keys()
                .filter(|k| !direct.contains_key(*k))
                .map(|k| format!("{k}: only through brownout")),
        )
        .collect();
    assert!(differences.is_empty(), "{differences:#?}");
}

#[test]
fn brownout_adds_dns_rebinding_protection_by_default() {
    let (_server, direct_url) = everything_http("streamableHttp");
    let (_relay, through_url) = brownout_http(&["--upstream", &direct_url]);
    let dir = tmp();
    let r = run_suite(&through_url, dir.path(), Some("dns-rebinding-protection"));
    assert!(r.values().all(|s| s == "SUCCESS") && r.len() >= 2, "{r:?}");
}
