//! The command line: plan tools, exit codes, `--json`, and the demo.

mod common;
use common::*;
use serde_json::Value;
use std::process::Command;

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(brownout())
        .args(args)
        .current_dir(repo())
        .output()
        .expect("run brownout");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn every_example_plan_is_valid() {
    let plans: Vec<String> = std::fs::read_dir(repo().join("examples"))
        .expect("examples")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .is_some_and(|x| x == "yaml" || x == "json" || x == "toml")
        })
        .map(|p| p.display().to_string())
        .collect();
    assert!(plans.len() >= 2, "{plans:?}");
    let mut args = vec!["plan", "check"];
    args.extend(plans.iter().map(String::as_str));
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn plan_check_reports_every_error_and_exits_1() {
    let dir = tmp();
    let p = dir.path().join("bad.yaml");
    std::fs::write(&p, "seed: 1\nfaults:\n  - kind: latency\n    added_ms: 10\n    probabilty: 0.5\n  - kind: nope\n").expect("write");
    let (code, _, err) = run(&["plan", "check", &p.display().to_string()]);
    assert_eq!(code, 1);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(lines[0].ends_with("bad.yaml:5:5: `faults[0].probabilty`: unknown key `probabilty` (did you mean `probability`?)"), "{err}");
    assert!(
        lines[1].contains("bad.yaml:6:11: `faults[1].kind`: unknown kind `nope`"),
        "{err}"
    );
    let (code, out, _) = run(&["plan", "check", "--json", &p.display().to_string()]);
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v[0]["errors"][0]["line"], 5);
    assert_eq!(v[0]["errors"][0]["column"], 5);
    assert_eq!(v[0]["errors"][0]["key"], "faults[0].probabilty");
}

#[test]
fn the_printed_schema_accepts_the_examples_and_rejects_typos() {
    let (code, out, _) = run(&["plan", "schema"]);
    assert_eq!(code, 0);
    let schema: Value = serde_json::from_str(&out).expect("schema is JSON");
    let v = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
    let demo = brownout_core::plan::source::parse(
        &std::fs::read_to_string(repo().join("examples/demo-plan.yaml")).expect("demo plan"),
        brownout_core::plan::source::Format::Yaml,
    )
    .expect("yaml")
    .to_json();
    assert!(
        v.is_valid(&demo),
        "{:?}",
        v.iter_errors(&demo)
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
    );
    assert!(!v
        .is_valid(&serde_json::json!({"faults": [{"kind": "latency", "added_ms": 5, "typo": 1}]})));
    assert!(!v.is_valid(&serde_json::json!({"faults": [{"kind": "latency", "probability": 2}]})));
}

#[test]
fn kinds_are_listed() {
    let (code, out, _) = run(&["plan", "kinds", "--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).expect("json");
    let names: Vec<&str> = v
        .as_array()
        .map(|a| a.iter().filter_map(|k| k["kind"].as_str()).collect())
        .unwrap_or_default();
    for k in [
        "latency",
        "error",
        "timeout",
        "malformed",
        "drop",
        "duplicate",
        "reorder",
        "rate_limit",
        "schema_drift",
        "partial_result",
        "registry",
        "cold_start",
        "process",
    ] {
        assert!(names.contains(&k), "{k} missing from {names:?}");
    }
}

#[test]
fn demo_runs_live_and_reports_per_fault() {
    let (code, out, err) = run(&["demo", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    let faults = v["faults"].as_array().cloned().unwrap_or_default();
    let ids: Vec<&str> = faults.iter().filter_map(|f| f["id"].as_str()).collect();
    for id in [
        "slow-logs",
        "flaky-restart",
        "drifted-incident",
        "ghost-tool",
    ] {
        assert!(ids.contains(&id), "{id} not injected: {ids:?}");
    }
    // The client's side of the story: the drift is a schema violation, the ghost a JSON-RPC error.
    assert!(
        v["client_saw"]["get_incident"]["outputSchema violation"]
            .as_u64()
            .unwrap_or(0)
            > 0,
        "{v}"
    );
    assert_eq!(
        v["client_saw"]["delete_incident"]["JSON-RPC error"], 1,
        "{v}"
    );
    let eta = v["eta"].as_f64().unwrap_or(1.0);
    assert!(eta > 0.0 && eta < 1.0, "{eta}");
    // The simulated stories come first: the headline's blast radius sits near the
    // independent-failure prediction, and the cascade breaches its SLO only without resilience.
    let bare = &v["simulated"]["headline"]["no_resilience"];
    let (measured, predicted) = (
        bare["blast_radius"].as_f64().unwrap_or(0.0),
        bare["predicted_blast_radius"].as_f64().unwrap_or(1.0),
    );
    assert!((measured - predicted).abs() < 0.02, "{bare}");
    let cascade = &v["simulated"]["cascade"];
    assert_eq!(cascade["no_resilience"]["slo_held"], false, "{cascade}");
    assert_eq!(cascade["resilience"]["slo_held"], true, "{cascade}");
}

#[test]
fn help_teaches() {
    let (code, out, _) = run(&["--help"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("brownout demo") && out.contains("proxy stdio"),
        "{out}"
    );
    let (_, out, _) = run(&["proxy", "stdio", "--help"]);
    assert!(
        out.contains("--events") && out.contains("--strict") && out.contains("Example"),
        "{out}"
    );
}

#[test]
fn the_plan_reference_documents_every_kind_and_every_key() {
    let (code, out, _) = run(&["plan", "schema"]);
    assert_eq!(code, 0);
    let schema: Value = serde_json::from_str(&out).expect("schema");
    let doc = std::fs::read_to_string(repo().join("docs/plans.md")).expect("docs/plans.md");
    let kinds = schema["properties"]["faults"]["items"]["oneOf"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(kinds.len() >= 13);
    for k in &kinds {
        let kind = k["properties"]["kind"]["const"].as_str().expect("kind");
        assert!(
            doc.contains(&format!("### `{kind}`")),
            "no section for {kind}"
        );
        for key in k["properties"].as_object().expect("properties").keys() {
            assert!(
                doc.contains(&format!("`{key}`")),
                "{kind}.{key} is not documented"
            );
        }
    }
    for key in schema["properties"].as_object().expect("top").keys() {
        assert!(
            doc.contains(&format!("`{key}`")),
            "top-level {key} is not documented"
        );
    }
}

/// The top of `brownout --help` keeps its lines: the "Start here" commands one per line.
#[test]
fn help_keeps_the_start_here_lines() {
    let (code, out, _) = run(&["--help"]);
    assert_eq!(code, 0);
    for line in [
        "Start here:",
        "  brownout demo ",
        "  brownout plan check examples/demo-plan.yaml ",
        "  brownout proxy stdio --plan PLAN -- CMD ARGS ",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(line)),
            "no line starting {line:?} in\n{out}"
        );
    }
}

/// The arguments a newcomer meets first say what they are, and `proxy stdio`'s usage shows
/// both ways to reach a server.
#[test]
fn help_teaches_every_argument() {
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["plan", "check", "--help"],
            &["Plan files to check", "Print the results as JSON"],
        ),
        (&["plan", "kinds", "--help"], &["Print the kinds as JSON"]),
        (
            &["faults", "rm", "--help"],
            &["The id of the fault to remove", "127.0.0.1:9901"],
        ),
        (
            &["proxy", "stdio", "--help"],
            &[
                "--upstream <URL>",
                "-- <CMD> [ARGS]...",
                "The server command",
            ],
        ),
    ];
    for (args, wanted) in cases {
        let (code, out, err) = run(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        for w in *wanted {
            assert!(out.contains(w), "{args:?}: no {w:?} in\n{out}");
        }
    }
    let (_, usage, _) = run(&["proxy", "stdio", "-h"]);
    let usage = usage.split("Usage:").nth(1).unwrap_or("");
    assert!(usage.contains("--upstream"), "{usage}");
}

/// `faults --admin` takes the address `proxy --admin` takes (host:port) as well as the URL
/// the relay printed; an address nobody listens on is "connection refused", with the
/// address.
#[test]
fn faults_admin_takes_host_port_and_says_connection_refused() {
    let dir = tmp();
    let mut cmd = through(
        dir.path(),
        "faults:\n  - {id: e1, kind: error, phase: request, tools: [echo], code: -32011}\n",
        &fixture(),
    );
    cmd.insert(3, "--admin".into());
    cmd.insert(4, "127.0.0.1:0".into());
    let w = Wire::spawn(&cmd);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let url = loop {
        let text = w.stderr_text();
        if let Some(rest) = text.split("admin API on ").nth(1) {
            break rest.lines().next().unwrap_or("").trim().to_string();
        }
        assert!(
            std::time::Instant::now() < until,
            "no admin address: {text}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let addr = url.trim_start_matches("http://").to_string();
    for given in [addr.as_str(), url.as_str()] {
        let (code, out, err) = run(&["faults", "list", "--admin", given]);
        assert_eq!(code, 0, "--admin {given}: {err}");
        assert!(out.contains("e1"), "{out}");
    }
    drop(w);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let free = listener.local_addr().expect("addr").to_string();
    drop(listener);
    let (code, _, err) = run(&["faults", "list", "--admin", &free]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("connection refused") && err.contains(&free),
        "{err}"
    );
}

/// `cargo install` ships a small binary: the release profile carries no debug info (the
/// bench profile keeps line tables for profiling).
#[test]
fn the_release_profile_has_no_debug_info() {
    let manifest = std::fs::read_to_string(repo().join("Cargo.toml")).expect("Cargo.toml");
    let section = |name: &str| -> String {
        manifest
            .split("\n[")
            .find(|s| s.starts_with(&format!("{name}]")))
            .unwrap_or("")
            .to_string()
    };
    let release = section("profile.release");
    let debug = release
        .lines()
        .find_map(|l| l.trim().strip_prefix("debug"))
        .map(|v| v.trim_start_matches([' ', '=']).trim().to_string());
    assert!(
        matches!(debug.as_deref(), None | Some("false" | "0" | "\"none\"")),
        "release profile: debug = {debug:?}"
    );
    assert!(
        release.contains("strip = true"),
        "the binary a user installs is stripped"
    );
    let bench = section("profile.bench");
    assert!(
        bench.contains("debug = 1") || bench.contains("debug = \"line-tables-only\""),
        "benches keep line tables"
    );
}

/// An 80 KB block-style YAML plan nested 40,000 deep used to overflow the stack and abort
/// the process; empty plans and a NUL byte used to pass as a plan with fewer faults.
#[test]
fn plan_check_refuses_deep_empty_and_binary_plans_without_crashing() {
    let dir = tmp();
    let cases = [
        (
            "deep.yaml",
            format!("faults:\n  - kind: error\n    arguments:\n      x:\n        {}1\n", "- ".repeat(41_000)),
            "deep.yaml:5:129: syntax error: nested too deeply: more than 64 levels of mappings and lists",
        ),
        (
            "deep.json",
            format!("{{\"faults\": {}{}}}", "[".repeat(41_000), "]".repeat(41_000)),
            "deep.json:1:",
        ),
        (
            "deep.toml",
            format!("faults = []\nx = {}{}\n", "[".repeat(41_000), "]".repeat(41_000)),
            "deep.toml:2:",
        ),
        (
            "empty.yaml",
            "# nothing yet\n".to_string(),
            "empty.yaml:1:1: the plan is empty; write `faults: []` for a plan with no faults",
        ),
        (
            "nul.yaml",
            "faults:\n  - kind: drop\n\0\0\0\0".to_string(),
            "nul.yaml:3:1: syntax error: a NUL byte (U+0000) is not allowed",
        ),
    ];
    for (name, text, expected) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, text).expect("write");
        let (code, out, err) = run(&["plan", "check", &p.display().to_string()]);
        assert_eq!(code, 1, "{name}: {out}{err}");
        assert!(err.contains(expected), "{name}: {err}");
        assert!(!err.contains("overflow"), "{name}: {err}");
    }
}

/// `proxy --admin` without `--plan` starts from the plan with no faults (an empty plan *text*
/// is refused as truncated, but no plan at all is not an empty text).
#[test]
fn proxy_with_an_admin_api_and_no_plan_starts() {
    let mut cmd = vec![
        brownout().to_string(),
        "proxy".into(),
        "stdio".into(),
        "--quiet".into(),
        "--admin".into(),
        "127.0.0.1:0".into(),
        "--".into(),
    ];
    cmd.extend(fixture());
    let mut w = Wire::spawn(&cmd);
    w.send(&tool_call(1, "echo", serde_json::json!({"message": "hi"})));
    let v = w
        .recv_json(10_000)
        .unwrap_or_else(|| panic!("no answer: {}", w.stderr_text()));
    assert_eq!(v["id"], 1, "{v}");
    assert!(v.get("error").is_none(), "{v}");
    assert!(
        w.stderr_text().contains("admin API on"),
        "{}",
        w.stderr_text()
    );
}

#[test]
fn both_proxies_take_seed_and_json() {
    for proxy in ["stdio", "http"] {
        let (code, out, err) = run(&["proxy", proxy, "--help"]);
        assert_eq!(code, 0, "{err}");
        for flag in ["--seed <N>", "--json"] {
            assert!(out.contains(flag), "proxy {proxy} lacks {flag}: {out}");
        }
    }
}

/// A fault a relay cannot perform is refused when the plan loads on it (naming the fault,
/// its kind and the relay), never started and counted as injected: a process fault with no
/// process behind `--upstream`, a stream shape on the stdio front.
#[test]
fn a_fault_the_relay_cannot_perform_is_refused_at_load() {
    let dir = tempfile::tempdir().expect("tmp");
    let kill = dir.path().join("kill.yaml");
    std::fs::write(
        &kill,
        "faults:\n  - {id: kill-it, kind: process, action: kill, at_ms: 100}\n",
    )
    .expect("write");
    let (code, _, err) = run(&[
        "proxy",
        "stdio",
        "--plan",
        kill.to_str().expect("utf-8"),
        "--upstream",
        "http://127.0.0.1:9/mcp",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("fault `kill-it` (kind `process`) cannot run on `proxy stdio --upstream`")
            && err.contains("signal the server process"),
        "{err}"
    );
    let slow = dir.path().join("slow.yaml");
    std::fs::write(
        &slow,
        "faults:\n  - {id: slow, kind: slow_stream, gap_ms: 100}\n",
    )
    .expect("write");
    let mut args = vec![
        "proxy".to_string(),
        "stdio".into(),
        "--plan".into(),
        slow.to_str().expect("utf-8").into(),
        "--".into(),
    ];
    args.extend(fixture());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, _, err) = run(&args);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("fault `slow` (kind `slow_stream`) cannot run on `proxy stdio -- CMD`"),
        "{err}"
    );
    assert!(
        !err.contains("relaying"),
        "the server is not started: {err}"
    );
}

/// A server command that cannot run stops both proxies at start with exit 2 and its name
/// (`proxy http -- CMD` starts servers only per session, so it would otherwise listen with a
/// server it can never run).
#[test]
fn a_server_command_that_cannot_run_is_refused_at_start() {
    for proxy in ["stdio", "http"] {
        let (code, _, err) = run(&["proxy", proxy, "--", "/nonexistent/brownout-server"]);
        assert_eq!(code, 2, "proxy {proxy}: {err}");
        assert!(
            err.contains("cannot run the server command `/nonexistent/brownout-server`"),
            "proxy {proxy}: {err}"
        );
    }
}

/// `proxy http --upstream` says at start when the server takes no connection, as
/// `proxy stdio --upstream` does, and keeps relaying.
#[test]
fn proxy_http_reports_an_unreachable_upstream_at_start() {
    use std::io::BufRead;
    let port = common::http::free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut child = Command::new(brownout())
        .args([
            "proxy",
            "http",
            "--upstream",
            &url,
            "--listen",
            "127.0.0.1:0",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start brownout");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut seen = Vec::new();
    let found = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) if l.contains("unreachable") => break Some(l),
            Ok(l) => seen.push(l),
            Err(_) => break None,
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    let line = found.unwrap_or_else(|| panic!("no report of the unreachable upstream: {seen:?}"));
    assert!(line.contains(&url), "{line}");
}

/// The fixture answers with the request's id as written (`1e2`, a 23-digit integer), so a
/// relay's routing by id is tested against a server that keeps ids.
#[test]
fn the_fixture_keeps_ids_as_written() {
    use std::io::Write;
    let mut child = Command::new(brownout())
        .arg("fixture")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start the fixture");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(
            b"{\"jsonrpc\":\"2.0\",\"id\":1e2,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"id\":12345678901234567890123,\"method\":\"ping\"}\n",
        )
        .expect("write");
    drop(stdin);
    let out = child.wait_with_output().expect("output");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\"id\":1e2,"), "{text}");
    assert!(text.contains("\"id\":12345678901234567890123,"), "{text}");
}

/// An https:// upstream was taken and every call then failed with "scheme is not http" (the
/// build has no TLS): it is refused at start, saying so and what to do instead.
#[test]
fn an_https_upstream_is_refused_at_start_saying_why() {
    for front in ["stdio", "http"] {
        let (code, _, err) = run(&["proxy", front, "--upstream", "https://127.0.0.1:9/mcp"]);
        assert_eq!(code, 2, "{front}: {err}");
        assert!(
            err.contains("https:// upstreams are not supported") && err.contains("no TLS"),
            "{front}: {err}"
        );
    }
}
