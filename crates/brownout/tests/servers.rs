//! Several servers at once (`target.servers`), live: an on-call agent reads an incident from
//! one team's server and restarts the service it names on another's — two servers built on the
//! official Python SDK, behind one brownout relay. A value `corrupt` changed on the incidents
//! server and passed to the ops server is counted `propagated`, and the count matches what the
//! ops server itself recorded (the truth, from the target's side).

mod common;
use common::http::{free_port, spawn, wait_port, Guard};
use common::{brownout, python, repo, tmp};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const INCIDENT: &str = "INC-1042";

/// The load's agents (`load.sessions`): at most one call each is in flight when a run ends.
const AGENTS: u64 = 4;

/// The service the incidents server names for `INCIDENT`, asked of its own code.
fn true_service() -> String {
    let out = Command::new(python())
        .env("PYTHONPATH", repo().join("peers/python"))
        .args([
            "-c",
            &format!("import team_server as t; print(t.incident('{INCIDENT}').service)"),
        ])
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The incidents server over streamable HTTP (one process for every session).
fn incidents_http() -> (Guard, String) {
    let port = free_port();
    let mut cmd = Command::new(python());
    cmd.arg(repo().join("peers/python/team_server.py")).args([
        "--role",
        "incidents",
        "--port",
        &port.to_string(),
    ]);
    let mut g = spawn(cmd);
    wait_port(port, &mut g);
    (g, format!("http://127.0.0.1:{port}/mcp"))
}

/// The experiment: the incidents server at `incidents` (a URL), the ops server over stdio
/// (a process per session, as an agent host starts it) or, with `ops_url`, at that URL.
fn experiment(
    dir: &Path,
    incidents: &str,
    ops_url: Option<&str>,
    fault_servers: &str,
    extra: &str,
) -> std::path::PathBuf {
    let team = repo().join("peers/python/team_server.py");
    let record = dir.join("restarts.txt");
    let ops = match ops_url {
        Some(u) => format!("{{url: \"{u}\"}}"),
        None => format!(
            "{{command: [\"{}\", \"{}\", --role, ops, --record, \"{}\"]}}",
            python(),
            team.display(),
            record.display()
        ),
    };
    let text = format!(
        r#"title: the on-call agent never restarts a service it was wrongly told about
labels: {{env: staging}}
target:
  servers:
    incidents: {{url: "{incidents}"}}
    ops: {ops}
load:
  workload:
    seed: 7
    arrival: {{mode: closed, concurrency: 4}}
    steps:
      - calls:
          - {{tool: get_incident, arguments: {{id: {INCIDENT}}}}}
          - {{tool: list_deployments}}
      - calls:
          - tool: restart_service
            arguments: {{service: {{from: get_incident, path: /service}}}}
    client: {{timeout_ms: 20000, agent: {{policy: trust}}}}
  sessions: 4
method:
  - {{stage: half, duration: 5s, sessions: 50%}}
faults:
  - {{id: wrong-service, kind: corrupt, tools: [get_incident], servers: [{fault_servers}], path: /service}}
{extra}
gates:
  - error_rate < 50% over 5s
"#
    );
    let path = dir.join("servers.yaml");
    std::fs::write(&path, text).expect("write the experiment");
    path
}

/// Run the experiment; its exit code and journal.
fn run(dir: &Path, file: &Path) -> (i32, Value) {
    let journal = dir.join("journal.json");
    // Four agents, half of them under the fault at once: a ladder that starts at 50 %
    // (each agent starts two Python servers; more would crowd a loaded 2-core machine).
    let policy = dir.join("policy.yaml");
    std::fs::write(&policy, "ladder: [\"50%\", \"100%\"]\n").expect("write the policy");
    let out = Command::new(brownout())
        .arg("run")
        .arg("--policy")
        .arg(&policy)
        .arg(file)
        .arg("--journal")
        .arg(&journal)
        .output()
        .expect("run brownout");
    let text = std::fs::read_to_string(&journal).unwrap_or_else(|e| {
        panic!(
            "no journal ({e}); stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let j: Value = serde_json::from_str(&text).expect("journal JSON");
    (out.status.code().unwrap_or(-1), j)
}

/// The journal's `servers`, by name.
fn servers_by_name(j: &Value) -> std::collections::BTreeMap<&str, &Value> {
    j["servers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| (v["name"].as_str().unwrap_or_default(), v))
        .collect()
}

/// What the ops server restarted, line by line.
fn restarts(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("restarts.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_value_corrupted_on_one_server_and_acted_on_at_another_is_counted_as_the_target_saw_it() {
    let truth = true_service();
    let dir = tmp();
    let (_incidents, url) = incidents_http();
    let (code, j) = run(
        dir.path(),
        &experiment(dir.path(), &url, None, "incidents", ""),
    );
    assert_eq!(code, 0, "{j}");
    assert_eq!(j["target"]["kind"], "servers", "{j}");
    let done = restarts(dir.path());
    let wrong = done.iter().filter(|s| **s != truth).count() as u64;
    let s = &j["silent"];
    assert!(wrong > 0, "some sessions were under the fault: {done:?}");
    assert!(
        done.len() as u64 > wrong,
        "the agents outside the radius restart the right service: {done:?}"
    );
    // Every wrong restart the ops server saw was a value the incidents server's fault
    // changed: brownout counted those, across servers (the trusting agent acts on every
    // result it reads, so nothing changed goes unacted on). The relay counts a propagation
    // when the request passes it; a request still in flight when the run ended (at most one
    // per agent) may not have reached the ops server's record.
    let propagated = s["propagated"].as_u64().unwrap_or(0);
    let altered = s["altered"].as_u64().unwrap_or(0);
    assert!(
        (wrong..=wrong + AGENTS).contains(&propagated),
        "{s}\nwrong restarts: {wrong}: {done:?}"
    );
    assert!((propagated..=propagated + AGENTS).contains(&altered), "{s}");
    assert_eq!(s["noticed"].as_u64(), Some(0), "{s}");
    // Server by server: the changed results came from `incidents`; `ops` changed none, and
    // carried the restarts the ops server recorded.
    let by = servers_by_name(&j);
    let silent = |n: &str, k: &str| by[n]["silent"][k].as_u64();
    assert_eq!(silent("incidents", "altered"), Some(altered), "{j}");
    assert_eq!(silent("incidents", "propagated"), Some(propagated), "{j}");
    assert_eq!(silent("ops", "altered"), Some(0), "{j}");
    let restarts = j["tool_calls"]["ops/restart_service"].as_u64().unwrap_or(0);
    let done = done.len() as u64;
    assert!(
        (restarts..=restarts + AGENTS).contains(&done),
        "{restarts} vs {done}: {j}"
    );
}

#[test]
fn a_fault_for_another_server_changes_nothing_and_nothing_is_tainted() {
    let truth = true_service();
    let dir = tmp();
    let (_incidents, url) = incidents_http();
    let port = free_port();
    let mut cmd = Command::new(python());
    cmd.arg(repo().join("peers/python/team_server.py")).args([
        "--role",
        "ops",
        "--port",
        &port.to_string(),
        "--record",
        &dir.path().join("restarts.txt").display().to_string(),
    ]);
    let mut ops = spawn(cmd);
    wait_port(port, &mut ops);
    let ops_url = format!("http://127.0.0.1:{port}/mcp");
    // get_incident lives on `incidents`: a fault for `ops` never reaches it. The ops server's
    // deployments list, read beside the incident (a step that fans out to both servers),
    // fails for the agents under the faults: their tasks end there, restarting nothing.
    let down = "  - {id: ops-down, kind: error, servers: [ops], tools: [list_deployments]}";
    let file = experiment(dir.path(), &url, Some(&ops_url), "ops", down);
    let (code, j) = run(dir.path(), &file);
    assert_eq!(code, 0, "{j}");
    let done = restarts(dir.path());
    assert!(!done.is_empty(), "the load ran");
    assert!(done.iter().all(|s| *s == truth), "{done:?}");
    let s = &j["silent"];
    assert_eq!(
        (s["altered"].as_u64(), s["propagated"].as_u64()),
        (Some(0), Some(0)),
        "{j}"
    );
    // The fan-out, server by server: only `ops` failed calls, and only the tasks whose
    // deployments read succeeded restarted anything.
    let by = servers_by_name(&j);
    let errors = |n: &str| by[n]["errors"].as_u64().unwrap_or(u64::MAX);
    assert_eq!(errors("incidents"), 0, "{j}");
    assert!(errors("ops") > 0, "{j}");
    let deploys = j["tool_calls"]["ops/list_deployments"]
        .as_u64()
        .unwrap_or(0);
    let restarts = j["tool_calls"]["ops/restart_service"].as_u64().unwrap_or(0);
    // (A call in flight when the run ended may be on the server's record and not yet in
    // the relay's count: at most one per agent.)
    assert!(restarts <= deploys - errors("ops"), "{j}");
    let done = done.len() as u64;
    assert!(
        (restarts..=restarts + AGENTS).contains(&done),
        "{restarts} vs {done}: {j}"
    );
}

#[test]
fn a_fault_naming_a_server_the_target_lacks_is_an_error_with_a_suggestion() {
    let dir = tmp();
    let file = experiment(dir.path(), "http://127.0.0.1:9/mcp", None, "incident", "");
    let out = Command::new(brownout())
        .args(["experiment", "check"])
        .arg(&file)
        .output()
        .expect("run brownout");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("`faults[0].servers[0]`: no server `incident` (did you mean `incidents`?); the target's servers: incidents, ops"),
        "{err}"
    );
    // `servers` beside `command` is one or the other.
    let text = std::fs::read_to_string(&file)
        .expect("read")
        .replace("target:\n", "target:\n  command: [x]\n");
    std::fs::write(&file, text).expect("write");
    let out = Command::new(brownout())
        .args(["experiment", "check"])
        .arg(&file)
        .output()
        .expect("run brownout");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("give `servers` or `command`, not both"),
        "{err}"
    );
}
