//! Failed safely or silently, live: an agent on the official Python SDK reads an incident and
//! restarts the service it names (get_incident → restart_service), through brownout's relay
//! over stdio and streamable HTTP, with `corrupt` or `schema_drift` on the incident. Ground
//! truth comes from the agent's side (the service it acted on against the one a run without
//! faults read); brownout's taint events must match it exactly.

mod common;
use common::http::{brownout_http, plan_file};
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const TASKS: usize = 50;

const CORRUPT: &str = "seed: 11\nfaults:\n  - {id: wrong-service, kind: corrupt, tools: [get_incident], path: /service}\n";
const DRIFT: &str = "seed: 11\nfaults:\n  - {id: drifted, kind: schema_drift, tools: [get_incident], mutation: retype, path: /severity}\n";

/// Run the chaining agent against `target` (`--url URL` or `-- CMD…`).
fn agent(policy: &str, target: &[String]) -> Value {
    let out = Command::new(python())
        .arg(repo().join("peers/python/chain_agent.py"))
        .args([
            "--tasks",
            &TASKS.to_string(),
            "--policy",
            policy,
            "--timeout",
            "90",
        ])
        .args(target)
        .output()
        .expect("run the chaining agent");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let doc: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "agent output is not JSON ({e}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(doc["completed"], true, "{doc}");
    doc
}

/// Incident id → the service the agent acted on.
fn acted(doc: &Value) -> BTreeMap<String, String> {
    doc["tasks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["acted"] == true)
        .map(|t| {
            (
                t["id"].as_str().unwrap_or_default().to_string(),
                t["service"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn taint_events<'a>(events: &'a [Value], class: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == "taint" && e["class"] == class)
        .collect()
}

/// The truth: what the services are, read by the same agent through a relay with no faults.
fn truth(dir: &Path) -> BTreeMap<String, String> {
    let clean = agent("trust", &stdio(dir, "faults: []\n"));
    let ev = events(dir);
    assert!(
        taint_events(&ev, "altered").is_empty() && taint_events(&ev, "propagated").is_empty(),
        "precision: a run without faults taints nothing"
    );
    acted(&clean)
}

fn stdio(dir: &Path, plan: &str) -> Vec<String> {
    let mut cmd = vec!["--".to_string()];
    cmd.extend(through(dir, plan, &fixture()));
    cmd
}

/// The corrupted results the agent passed on, by its own account.
fn passed_on(truth: &BTreeMap<String, String>, got: &BTreeMap<String, String>) -> usize {
    got.iter()
        .filter(|(id, svc)| truth.get(*id) != Some(svc))
        .count()
}

fn check_trusting_agent(ev: &[Value], truth: &BTreeMap<String, String>, doc: &Value) {
    let got = acted(doc);
    assert_eq!(got.len(), TASKS, "every task acted: {doc}");
    let wrong = passed_on(truth, &got);
    assert_eq!(wrong, TASKS, "corrupt changed every service: {doc}");
    let altered = taint_events(ev, "altered");
    let propagated = taint_events(ev, "propagated");
    assert_eq!(altered.len(), TASKS);
    // Recall 100 %, precision 100 %: one propagation per corrupted result passed on.
    assert_eq!(propagated.len(), wrong, "{propagated:?}");
    for p in &propagated {
        assert_eq!(p["fault"], "wrong-service");
        assert_eq!(p["from_tool"], "get_incident");
        assert_eq!(p["to_tool"], "restart_service");
        assert_eq!(p["from_pointer"], "/structuredContent/service");
        assert_eq!(p["to_pointer"], "/service");
        let v = p["value"].as_str().unwrap_or_default();
        assert!(
            got.values().any(|s| s.starts_with(v)),
            "the event names the value the agent used: {v}"
        );
    }
}

#[test]
fn a_trusting_agent_over_stdio_propagates_every_corrupted_service() {
    let clean = tmp();
    let truth = truth(clean.path());
    assert!(
        truth
            .values()
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            > 1,
        "the fixture names several services"
    );
    let dir = tmp();
    let doc = agent("trust", &stdio(dir.path(), CORRUPT));
    check_trusting_agent(&events(dir.path()), &truth, &doc);
}

#[test]
fn a_trusting_agent_over_http_propagates_every_corrupted_service() {
    let clean = tmp();
    let truth = truth(clean.path());
    let dir = tmp();
    let plan = plan_file(dir.path(), CORRUPT);
    let ev_path = dir.path().join("http-events.jsonl").display().to_string();
    let fx = fixture();
    let (guard, url) = brownout_http(&[
        "--quiet", "--plan", &plan, "--events", &ev_path, "--", &fx[0], &fx[1],
    ]);
    let doc = agent("trust", &["--url".to_string(), url]);
    let _ = guard.stop();
    let ev = events_at(std::path::Path::new(&ev_path));
    check_trusting_agent(&ev, &truth, &doc);
}

#[test]
fn a_validating_agent_notices_drift_and_still_propagates_corruption() {
    let clean = tmp();
    let truth = truth(clean.path());

    let dir = tmp();
    let doc = agent("validate", &stdio(dir.path(), DRIFT));
    let ev = events(dir.path());
    let tasks = doc["tasks"].as_array().cloned().unwrap_or_default();
    assert!(
        tasks.iter().all(|t| t["refetched"] == true),
        "the SDK rejected every drifted result: {doc}"
    );
    assert_eq!(
        taint_events(&ev, "altered").len(),
        2 * TASKS,
        "both reads were drifted"
    );
    assert_eq!(
        taint_events(&ev, "noticed").len(),
        TASKS,
        "each re-fetch is noticing: {:?}",
        taint_events(&ev, "noticed").first()
    );
    assert!(taint_events(&ev, "propagated").is_empty());

    let dir = tmp();
    let doc = agent("validate", &stdio(dir.path(), CORRUPT));
    let ev = events(dir.path());
    let got = acted(&doc);
    assert!(
        doc["tasks"]
            .as_array()
            .is_some_and(|t| t.iter().all(|t| t["refetched"] == false)),
        "corrupt keeps the schema: {doc}"
    );
    assert_eq!(
        taint_events(&ev, "propagated").len(),
        passed_on(&truth, &got)
    );
    assert_eq!(taint_events(&ev, "noticed").len(), 0);
}

/// The same over legacy HTTP+SSE: a server on the official Python SDK served as `/sse`,
/// brownout in front of it, the agent reading a weather report and echoing the city it names.
#[test]
fn over_legacy_sse_every_corrupted_value_passed_on_is_propagated() {
    let (_server, upstream) = common::http::python_http(&["--transport", "sse"]);
    let dir = tmp();
    let plan = plan_file(
        dir.path(),
        "seed: 5\nfaults:\n  - {id: wrong-city, kind: corrupt, tools: [get_weather], path: /city, probability: 0.5}\n",
    );
    let ev_path = dir.path().join("sse-events.jsonl").display().to_string();
    let (guard, through) = brownout_http(&[
        "--quiet",
        "--upstream",
        &upstream,
        "--plan",
        &plan,
        "--events",
        &ev_path,
    ]);
    assert!(through.ends_with("/sse"), "{through}");
    let out = Command::new(python())
        .arg(repo().join("peers/python/chain_agent.py"))
        .args([
            "--url",
            &through,
            "--sse",
            "--tasks",
            "30",
            "--timeout",
            "90",
        ])
        .args([
            "--read",
            "get_weather",
            "--read-arg",
            "city",
            "--ids",
            "City{n}",
            "--field",
            "city",
        ])
        .args(["--act", "echo", "--act-arg", "message"])
        .output()
        .expect("run the chaining agent");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(
        doc["completed"],
        true,
        "{doc} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = guard.stop();
    let ev = events_at(std::path::Path::new(&ev_path));
    // The truth, from the agent's side: the city it echoed is not the one it asked about.
    let wrong = acted(&doc)
        .iter()
        .filter(|(asked, got)| asked != got)
        .count();
    assert!(wrong > 0 && wrong < 30, "about half corrupted: {doc}");
    assert_eq!(taint_events(&ev, "altered").len(), wrong);
    let propagated = taint_events(&ev, "propagated");
    assert_eq!(propagated.len(), wrong, "recall and precision over SSE");
    assert!(propagated
        .iter()
        .all(|p| p["to_tool"] == "echo" && p["to_pointer"] == "/message"));
}
