//! `--otlp`: spans exported over OTLP/HTTP protobuf to a real receiver that decodes them with
//! the official OpenTelemetry protobuf definitions (peers/python/otlp_receiver.py, PyPI
//! `opentelemetry-proto`): a span per relayed call, fault attributes exactly on the faulted
//! calls, the client's `_meta.traceparent` continued, an experiment's phases, load and probe
//! calls, and a dead collector that costs the traffic nothing but dropped, counted spans.

mod common;
#[path = "experiment_support/mod.rs"]
mod support;

use common::http::free_port;
use common::{brownout, fixture, python, python_server, repo, tmp};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The trace the test client's calls belong to.
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

/// The OTLP receiver, killed on drop.
struct Receiver {
    child: Child,
    out: PathBuf,
    url: String,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    fn start(dir: &Path) -> Receiver {
        let out = dir.join("otlp.jsonl");
        let mut child = Command::new(python())
            .arg(repo().join("peers/python/otlp_receiver.py"))
            .arg("--out")
            .arg(&out)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the OTLP receiver");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the receiver's port");
        let port = line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("the receiver did not start: {line:?}"))
            .to_string();
        Receiver {
            child,
            out,
            url: format!("http://127.0.0.1:{port}"),
        }
    }

    /// The last export of metric `name` (cumulative: the last is the whole count).
    fn last_metric(&self, name: &str) -> Option<Value> {
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .rev()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["type"] == "metric" && v["name"] == name)
            .map(|v| v["metric"].clone())
    }

    /// Every span received so far.
    fn spans(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["type"] == "span")
            .collect()
    }
}

/// A span's W3C `traceparent` for call `i` of the test client's trace.
fn traceparent(i: usize) -> (String, String) {
    let span = format!("{:016x}", 0xb0_0000 + i);
    (format!("00-{TRACE}-{span}-01"), span)
}

/// Run the Python SDK client (peers/python/client.py) against `server`; its report and the
/// stderr of the server command (the relay's).
fn client(script: Value, server: &[String]) -> (Value, String) {
    let out = Command::new(python())
        .arg(repo().join("peers/python/client.py"))
        .args(["--timeout", "120", "--script", &script.to_string(), "--"])
        .args(server)
        .output()
        .expect("run the Python SDK client");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let report = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("client output is not JSON ({e}): {stdout}\n{stderr}"));
    (report, stderr)
}

/// `brownout proxy stdio --otlp URL --events E --plan P -- SERVER` ([`common::through`]
/// with `--otlp`).
fn relay(dir: &Path, plan: &str, otlp: &str, server: &[String]) -> Vec<String> {
    let mut cmd = common::through(dir, plan, server);
    let at = cmd.iter().position(|a| a == "--quiet").expect("--quiet") + 1;
    cmd.splice(at..at, ["--otlp".to_string(), otlp.to_string()]);
    cmd
}

fn call_events(dir: &Path) -> Vec<Value> {
    common::events_at(&dir.join("events.jsonl"))
        .into_iter()
        .filter(|e| e["type"] == "call")
        .collect()
}

fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

fn fault_keys(span: &Value) -> Vec<String> {
    span["attributes"]
        .as_object()
        .map(|m| {
            m.keys()
                .filter(|k| k.starts_with("brownout.fault"))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// The call spans (those with an MCP method), keyed by (session, request id).
fn call_spans(spans: &[Value]) -> BTreeMap<(String, String), Value> {
    let mut out = BTreeMap::new();
    for s in spans
        .iter()
        .filter(|s| attr(s, "mcp.method.name").is_string())
    {
        let key = (
            attr(s, "brownout.session")
                .as_str()
                .unwrap_or("")
                .to_string(),
            attr(s, "jsonrpc.request.id")
                .as_str()
                .unwrap_or("")
                .to_string(),
        );
        assert!(
            out.insert(key.clone(), s.clone()).is_none(),
            "two spans for {key:?}"
        );
    }
    out
}

#[test]
fn a_span_per_relayed_call_with_its_faults_continuing_the_clients_trace() {
    let dir = tmp();
    let receiver = Receiver::start(dir.path());
    // Seeded: some calls of each tool are faulted, not all.
    let plan = "seed: 11\nfaults:\n  - {id: slow-add, kind: latency, tools: [add], probability: 0.5, added_ms: 30}\n  - {id: echo-fails, kind: error, tools: [echo], probability: 0.5, phase: request, code: -32000, message: boom}\n";
    let mut script = vec![json!({"op": "list_tools"})];
    let mut sent = BTreeSet::new();
    for i in 0..16 {
        let (tp, span) = traceparent(i);
        sent.insert(span);
        let (name, args) = if i % 2 == 0 {
            ("add", json!({"a": i, "b": 1}))
        } else {
            ("echo", json!({"message": format!("m{i}")}))
        };
        script.push(json!({"op": "call_tool", "name": name, "arguments": args, "meta": {"traceparent": tp, "tracestate": "brownout=test"}}));
    }
    let (report, stderr) = client(
        Value::Array(script),
        &relay(dir.path(), plan, &receiver.url, &python_server()),
    );
    assert_eq!(report["completed"], true, "{report:#}\n{stderr}");

    // The relay waited for the collector before it exited: every span is there now.
    let calls = call_events(dir.path());
    let spans = receiver.spans();
    let by_call = call_spans(&spans);
    assert!(
        calls.len() >= 18,
        "initialize, tools/list, 16 calls: {calls:#?}"
    );
    assert_eq!(by_call.len(), calls.len(), "a span per call\n{stderr}");
    assert!(
        stderr.contains(&format!("otlp: {} span(s) exported", calls.len()))
            && stderr.contains(", 0 dropped"),
        "{stderr}"
    );
    let tool_calls: Vec<&Value> = by_call
        .values()
        .filter(|s| attr(s, "mcp.method.name") == "tools/call")
        .collect();
    assert_eq!(tool_calls.len(), 16);

    // Fault attributes exactly on the calls the engine says were faulted.
    let mut faulted = 0;
    for c in &calls {
        let key = (
            c["session"].as_str().unwrap_or("").to_string(),
            c["id"].to_string(),
        );
        let s = by_call
            .get(&key)
            .unwrap_or_else(|| panic!("no span for call {c}"));
        let ids: Vec<&str> = c["faults"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        assert_eq!(attr(s, "brownout.outcome"), &c["outcome"], "{s:#}");
        assert_eq!(attr(s, "mcp.method.name"), &c["method"], "{s:#}");
        if ids.is_empty() {
            assert!(
                fault_keys(s).is_empty(),
                "an unfaulted call has no fault attribute: {s:#}"
            );
            assert!(s["events"].as_array().is_some_and(Vec::is_empty), "{s:#}");
            continue;
        }
        faulted += 1;
        assert_eq!(attr(s, "brownout.fault.ids"), &json!(ids), "{s:#}");
        let fault_events: Vec<&Value> = s["events"]
            .as_array()
            .map(|a| a.iter().filter(|e| e["name"] == "brownout.fault").collect())
            .unwrap_or_default();
        assert!(!fault_events.is_empty(), "{s:#}");
        match ids[0] {
            "slow-add" => {
                assert_eq!(attr(s, "gen_ai.tool.name"), "add");
                assert_eq!(attr(s, "brownout.fault.kinds"), &json!(["latency"]));
                let delay = attr(s, "brownout.fault.delay_ms").as_f64().unwrap_or(0.0);
                assert!((29.0..=31.0).contains(&delay), "the added delay: {s:#}");
                // The span lasts as long as the client waited, the delay included.
                let ns = s["end_unix_nano"].as_u64().unwrap_or(0)
                    - s["start_unix_nano"].as_u64().unwrap_or(0);
                assert!(ns >= 29_000_000, "{s:#}");
            }
            "echo-fails" => {
                assert_eq!(attr(s, "gen_ai.tool.name"), "echo");
                assert_eq!(attr(s, "brownout.fault.error_code"), -32000, "{s:#}");
                assert_eq!(attr(s, "error.type"), "error", "{s:#}");
                assert_eq!(s["status"]["code"], 2, "ERROR status: {s:#}");
            }
            other => panic!("unexpected fault {other}"),
        }
    }
    assert!(
        (1..16).contains(&faulted),
        "the seed faults some calls, not all: {faulted}"
    );

    // Each tools/call continues the span the client named; the others start a trace.
    let parents: BTreeSet<String> = tool_calls
        .iter()
        .map(|s| s["parent_span_id"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(parents, sent, "every client span is a parent exactly once");
    for s in &tool_calls {
        assert_eq!(s["trace_id"], TRACE, "{s:#}");
        assert_eq!(s["trace_state"], "brownout=test", "{s:#}");
        assert_eq!(s["kind"], 2, "SERVER: {s:#}");
    }
    for s in by_call
        .values()
        .filter(|s| attr(s, "mcp.method.name") != "tools/call")
    {
        assert_eq!(s["parent_span_id"], "", "{s:#}");
        assert_ne!(s["trace_id"], TRACE, "{s:#}");
    }
    assert!(spans
        .iter()
        .all(|s| s["resource"]["service.name"] == "brownout"
            && s["resource"]["brownout.command"] == "proxy"));

    // The relay's metrics too: its last export counts every call and every injection.
    let sum = |m: &Value| -> u64 {
        m["sum"]["data_points"]
            .as_array()
            .map(|points| {
                points
                    .iter()
                    .filter_map(|p| p["as_int"].as_str().and_then(|n| n.parse::<u64>().ok()))
                    .sum()
            })
            .unwrap_or(0)
    };
    let m = receiver
        .last_metric("brownout.calls")
        .expect("brownout.calls exported");
    assert_eq!(m["sum"]["is_monotonic"], true, "{m:#}");
    assert_eq!(sum(&m), calls.len() as u64, "{m:#}");
    let injections = common::events_at(&dir.path().join("events.jsonl"))
        .iter()
        .filter(|e| e["type"] == "fault")
        .count() as u64;
    let m = receiver
        .last_metric("brownout.injections")
        .expect("injections");
    assert_eq!(sum(&m), injections, "{m:#}");
    assert!(receiver.last_metric("brownout.call.duration").is_some());
}

#[test]
fn the_http_relay_exports_a_span_per_call_too() {
    let dir = tmp();
    let receiver = Receiver::start(dir.path());
    let (_server, upstream) = common::http::python_http(&[]);
    let plan = common::http::plan_file(
        dir.path(),
        "seed: 5\nfaults:\n  - {id: add-fails, kind: error, tools: [add], probability: 0.5, phase: request, code: -32001}\n",
    );
    let events = dir.path().join("events.jsonl").display().to_string();
    let (relay, url) = common::http::brownout_http(&[
        "--plan",
        &plan,
        "--events",
        &events,
        "--otlp",
        &receiver.url,
        "--upstream",
        &upstream,
    ]);
    let mut sent = BTreeSet::new();
    let script: Vec<Value> = (0..10)
        .map(|i| {
            let (tp, span) = traceparent(100 + i);
            sent.insert(span);
            json!({"op": "call_tool", "name": "add", "arguments": {"a": i, "b": 2}, "meta": {"traceparent": tp}})
        })
        .collect();
    let report = common::http::py_http(&url, &[], Value::Array(script));
    assert_eq!(report["completed"], true, "{report:#}");
    let stderr = {
        let text = relay.stderr.clone();
        assert!(relay.stop().is_some(), "the relay stops on SIGTERM");
        let text = text.lock().map(|s| s.clone()).unwrap_or_default();
        text
    };
    let calls = call_events(dir.path());
    let by_call = call_spans(&receiver.spans());
    assert_eq!(by_call.len(), calls.len(), "{stderr}");
    assert!(stderr.contains(", 0 dropped"), "{stderr}");
    let tool_calls: Vec<&Value> = by_call
        .values()
        .filter(|s| attr(s, "mcp.method.name") == "tools/call")
        .collect();
    assert_eq!(tool_calls.len(), 10);
    let parents: BTreeSet<String> = tool_calls
        .iter()
        .map(|s| s["parent_span_id"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(parents, sent);
    let failed = tool_calls
        .iter()
        .filter(|s| attr(s, "brownout.fault.ids") == &json!(["add-fails"]))
        .count();
    let failed_calls = calls
        .iter()
        .filter(|c| c["faults"] == json!(["add-fails"]))
        .count();
    assert_eq!(failed, failed_calls);
    assert!((1..10).contains(&failed), "{failed}");
    assert!(tool_calls.iter().all(|s| attr(s, "brownout.session")
        .as_str()
        .is_some_and(|k| k.starts_with("http-"))));
}

#[test]
fn a_dead_collector_costs_the_calls_nothing_and_the_dropped_spans_are_counted() {
    let dir = tmp();
    let dead = format!("http://127.0.0.1:{}", free_port());
    let script: Vec<Value> = (0..20)
        .map(|i| json!({"op": "call_tool", "name": "echo", "arguments": {"message": format!("m{i}")}}))
        .collect();
    let (report, stderr) = client(
        Value::Array(script),
        &relay(dir.path(), "faults: []\n", &dead, &fixture()),
    );
    assert_eq!(report["completed"], true, "{report:#}\n{stderr}");
    let ops = report["ops"].as_array().expect("ops");
    assert_eq!(ops.len(), 20);
    assert!(
        ops.iter().all(|o| o["ok"] == true),
        "every call answered: {report:#}"
    );
    let calls = call_events(dir.path()).len();
    assert!(calls >= 21, "{calls}");
    assert!(
        stderr.contains(&format!(
            "otlp: 0 span(s) exported to {dead}/v1/traces, {calls} dropped"
        )) && stderr.contains("last export error: cannot connect"),
        "{stderr}"
    );
}

#[test]
fn an_experiment_exports_its_run_and_phases_as_one_trace() {
    let dir = tmp();
    let receiver = Receiver::start(dir.path());
    let (code, j, log) = support::run_experiment(
        dir.path(),
        &support::Exp::fixture_green(),
        &["--no-store", "--otlp", &receiver.url],
    );
    assert_eq!(code, 0, "{log}");
    let spans = receiver.spans();
    let root = spans
        .iter()
        .find(|s| {
            s["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("brownout run "))
        })
        .unwrap_or_else(|| panic!("no run span: {spans:#?}"));
    assert_eq!(root["parent_span_id"], "");
    assert_eq!(attr(root, "brownout.run.id"), &j["run_id"]);
    assert_eq!(attr(root, "brownout.run.status"), "completed");
    assert_eq!(root["resource"]["brownout.command"], "run");
    let children: Vec<&Value> = spans
        .iter()
        .filter(|s| s["parent_span_id"] == root["span_id"])
        .collect();
    let names: Vec<&str> = children.iter().filter_map(|s| s["name"].as_str()).collect();
    for want in ["baseline", "stage canary", "stage wider", "recovery"] {
        assert!(names.contains(&want), "{want} in {names:?}");
    }
    for c in &children {
        assert_eq!(c["trace_id"], root["trace_id"]);
        assert!(
            c["start_unix_nano"].as_u64() >= root["start_unix_nano"].as_u64(),
            "{c:#}"
        );
    }
    let canary = children
        .iter()
        .find(|s| s["name"] == "stage canary")
        .expect("canary");
    assert_eq!(attr(canary, "brownout.stage.share"), 0.1);
    assert_eq!(attr(canary, "brownout.stage.completed"), true);
    assert_eq!(
        attr(canary, "brownout.calls"),
        &j["stages"][0]["slis"]["calls"]
    );
    assert!(log.contains(", 0 dropped"), "{log}");

    // The load's calls hang under the run's root (sent while the run went on, before the
    // root), and the in-process relay's span for each call under the load's.
    let load_calls: Vec<&Value> = children
        .iter()
        .copied()
        .filter(|s| s["kind"] == 3 && attr(s, "gen_ai.tool.name").is_string())
        .collect();
    let relayed: Vec<&Value> = spans
        .iter()
        .filter(|s| s["kind"] == 2 && attr(s, "mcp.method.name") == "tools/call")
        .collect();
    let all_calls: u64 = std::iter::once(&j["baseline"])
        .chain(j["stages"].as_array().into_iter().flatten())
        .chain(std::iter::once(&j["recovery"]))
        .filter_map(|p| p["slis"]["calls"].as_u64())
        .sum();
    assert!(
        load_calls.len() as u64 >= all_calls && all_calls > 0,
        "{} load call spans for {all_calls} calls the journal counts",
        load_calls.len()
    );
    // Each load call has exactly one relay span under it (no retries in this workload);
    // the relay also saw the steady-state probes' calls and calls the stop cut short,
    // which the load does not report.
    let mut under: BTreeMap<String, usize> = BTreeMap::new();
    for r in &relayed {
        if r["parent_span_id"] != "" {
            assert_eq!(r["trace_id"], root["trace_id"], "{r:#}");
            *under.entry(r["parent_span_id"].to_string()).or_insert(0) += 1;
        }
    }
    for c in &load_calls {
        assert_eq!(under.get(&c["span_id"].to_string()), Some(&1), "{c:#}");
    }
    // F22: every request the relay carried is in the run's trace — the steady-state
    // probes' (initialize, tools/list, their calls) and the load's sessions' set-up
    // (initialize, tools/list) too, under the run's root; none is a trace of its own.
    let server: Vec<&Value> = spans.iter().filter(|s| s["kind"] == 2).collect();
    let outside: Vec<String> = server
        .iter()
        .filter(|s| s["trace_id"] != root["trace_id"] || s["parent_span_id"] == "")
        .map(|s| format!("{} ({})", s["name"], attr(s, "brownout.session")))
        .collect();
    assert!(
        outside.is_empty(),
        "relay spans outside the run's trace: {outside:?}"
    );
    let set_up: Vec<&&Value> = server
        .iter()
        .filter(|s| attr(s, "mcp.method.name") == "initialize")
        .collect();
    assert!(
        set_up.len() > 16,
        "the load's 16 sessions and the probe each initialize: {}",
        set_up.len()
    );
    assert!(
        set_up
            .iter()
            .all(|s| s["parent_span_id"] == root["span_id"]),
        "initialize under the run's root"
    );
}

#[test]
fn load_and_probe_calls_become_client_spans() {
    let dir = tmp();
    let receiver = Receiver::start(dir.path());
    let workload = dir.path().join("w.yaml");
    std::fs::write(&workload, support::FIXTURE_WORKLOAD).expect("workload");
    // The load goes through a relay that exports to the same collector: the relay's span
    // for each call continues the load's span for it (`params._meta.traceparent`).
    let out = Command::new(brownout())
        .arg("load")
        .arg(&workload)
        .args(["--tasks", "6", "--json", "--otlp", &receiver.url, "--"])
        .args(relay(dir.path(), "faults: []\n", &receiver.url, &fixture()))
        .output()
        .expect("load");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let summary: Value = serde_json::from_slice(&out.stdout).expect("summary");
    let spans = receiver.spans();
    let root = spans
        .iter()
        .find(|s| s["name"] == "brownout load")
        .unwrap_or_else(|| panic!("no load span: {spans:#?}"));
    let calls: Vec<&Value> = spans
        .iter()
        .filter(|s| s["parent_span_id"] == root["span_id"])
        .collect();
    assert_eq!(calls.len() as u64, summary["calls"].as_u64().unwrap_or(0));
    assert_eq!(calls.len(), 12, "6 tasks of 2 calls");
    assert!(calls
        .iter()
        .all(|s| s["kind"] == 3 && attr(s, "brownout.outcome") == "ok"));
    assert_eq!(attr(root, "brownout.calls"), 12);
    let relayed: Vec<&Value> = spans
        .iter()
        .filter(|s| s["kind"] == 2 && attr(s, "mcp.method.name") == "tools/call")
        .collect();
    assert_eq!(relayed.len(), 12, "{relayed:#?}");
    let mut children = std::collections::BTreeMap::new();
    for r in &relayed {
        assert_eq!(r["trace_id"], root["trace_id"], "{r:#}");
        *children.entry(r["parent_span_id"].to_string()).or_insert(0) += 1;
    }
    for c in &calls {
        assert_eq!(
            children.get(&c["span_id"].to_string()),
            Some(&1),
            "one relay span under load call {c:#}"
        );
    }

    let out = Command::new(brownout())
        .args([
            "probe",
            "--call",
            "echo",
            "--arguments",
            "{\"message\":\"hi\"}",
        ])
        .args(["--otlp", &receiver.url, "--"])
        .args(fixture())
        .output()
        .expect("probe");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let spans = receiver.spans();
    let probe = spans
        .iter()
        .find(|s| s["name"] == "brownout probe")
        .unwrap_or_else(|| panic!("no probe span: {spans:#?}"));
    assert_eq!(attr(probe, "brownout.probe.ok"), true);
    let phases: Vec<&str> = spans
        .iter()
        .filter(|s| s["parent_span_id"] == probe["span_id"])
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert!(
        phases.contains(&"initialize") && phases.contains(&"tools_call"),
        "{phases:?}"
    );
}

#[test]
fn a_bad_collector_url_is_refused_before_anything_starts() {
    for (url, says) in [
        ("https://127.0.0.1:4318", "only http://"),
        ("http://user:secret@127.0.0.1:4318", "password"),
        ("not a url", "not a URL"),
    ] {
        let out = Command::new(brownout())
            .args(["proxy", "stdio", "--otlp", url, "--"])
            .args(fixture())
            .stdin(Stdio::null())
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{url}: {stderr}");
        assert!(stderr.contains(says), "{url}: {stderr}");
        assert!(
            !stderr.contains("secret"),
            "the password is not echoed: {stderr}"
        );
    }
}
