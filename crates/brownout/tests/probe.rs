//! `brownout probe`: every failure reason from a real situation (a closed port, a server
//! that exits, a hung server, a 503, garbage bytes, a drifted schema and a hidden tool
//! through the relay's faults), passing probes against real peers, and header values never
//! printed.

mod common;
mod probe_support;

use common::http::{brownout_http, free_port, plan_file, python_http};
use common::{brownout, everything, fixture, python_server, through, tmp};
use probe_support::{failure, probe, scripted};

fn with_server<'a>(args: &[&'a str], server: &'a [String]) -> Vec<&'a str> {
    let mut v = args.to_vec();
    v.push("--");
    v.extend(server.iter().map(String::as_str));
    v
}

#[test]
fn a_closed_port_is_connection_refused() {
    let url = format!("http://127.0.0.1:{}/mcp", free_port());
    let (lines, code, _) = probe(&[&url]);
    assert_eq!(failure(&lines), "connection_refused");
    assert_eq!(lines[0]["failure_reason"]["reason"], "connection_refused");
    assert_eq!(code, 1);
}

#[test]
fn a_stdio_server_that_exits_is_process_exited_with_its_status() {
    let server = [
        "sh".to_string(),
        "-c".into(),
        "echo 'db: connection lost' >&2; exit 3".into(),
    ];
    let (lines, code, _) = probe(&with_server(&[], &server));
    assert_eq!(failure(&lines), "process_exited(3)");
    let detail = lines[0]["detail"].as_str().unwrap_or("");
    assert!(detail.contains("db: connection lost"), "{detail}");
    assert_eq!(lines[0]["failure_reason"]["status"], 3);
    assert_eq!(code, 1);
}

#[test]
fn a_hung_server_times_out_in_the_phase_it_hangs() {
    let server = ["sleep".to_string(), "30".into()];
    let (lines, _, _) = probe(&with_server(&["--timeout", "1s"], &server));
    assert_eq!(failure(&lines), "timeout(initialize)");
    // Over HTTP: a server that accepts and never answers.
    let (url, _) = scripted(|_, _| None);
    let (lines, code, _) = probe(&[&format!("{url}/mcp"), "--timeout", "1s"]);
    assert_eq!(failure(&lines), "timeout(initialize)");
    assert_eq!(code, 1);
}

#[test]
fn a_503_is_http_status_with_the_code() {
    let (url, _) = scripted(|_, _| Some((503, "text/plain", "down".into())));
    let (lines, _, _) = probe(&[&format!("{url}/mcp")]);
    assert_eq!(failure(&lines), "http_status(503)");
    assert_eq!(lines[0]["failure_reason"]["code"], 503);
}

#[test]
fn garbage_bytes_are_a_protocol_error() {
    let (url, _) = scripted(|_, _| Some((200, "application/json", "\u{1}garbage{{".into())));
    let (lines, _, _) = probe(&[&format!("{url}/mcp")]);
    assert_eq!(failure(&lines), "protocol_error");
    let server = [
        "sh".to_string(),
        "-c".into(),
        "read l; echo 'not json at all'; sleep 5".into(),
    ];
    let (lines, _, _) = probe(&with_server(&[], &server));
    assert_eq!(failure(&lines), "protocol_error");
    // JSON, but not JSON-RPC 2.0.
    let (url, _) =
        scripted(|_, _| Some((200, "application/json", r#"{"id":1,"result":{}}"#.into())));
    let (lines, _, _) = probe(&[&format!("{url}/mcp")]);
    assert_eq!(failure(&lines), "protocol_error");
}

#[test]
fn a_wrong_protocol_version_is_a_protocol_error() {
    let (url, _) = scripted(|_, _| {
        Some((200, "application/json", r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"1999-01-01","capabilities":{},"serverInfo":{"name":"x","version":"0"}}}"#.into()))
    });
    let (lines, _, _) = probe(&[&format!("{url}/mcp")]);
    assert_eq!(failure(&lines), "protocol_error");
    assert!(lines[0]["detail"]
        .as_str()
        .unwrap_or("")
        .contains("1999-01-01"));
}

#[test]
fn a_drifted_schema_through_the_relay_is_schema_invalid() {
    let dir = tmp();
    let plan = plan_file(
        dir.path(),
        "faults:\n  - {kind: schema_drift, tools: [get_weather], mutation: retype}\n",
    );
    let mut args = vec!["--plan", plan.as_str(), "--"];
    let server = python_server();
    args.extend(server.iter().map(String::as_str));
    let (_g, url) = brownout_http(&args);
    let (lines, _, _) = probe(&[
        &url,
        "--call",
        "get_weather",
        "--arguments",
        r#"{"city":"Oslo"}"#,
    ]);
    assert_eq!(failure(&lines), "schema_invalid");
}

#[test]
fn a_tool_hidden_by_the_registry_fault_is_tool_missing() {
    let dir = tmp();
    let relay = through(
        dir.path(),
        "faults:\n  - {kind: registry, action: hide, tools: [echo]}\n",
        &fixture(),
    );
    let (lines, _, _) = probe(&with_server(
        &["--call", "echo", "--arguments", r#"{"message":"hi"}"#],
        &relay,
    ));
    assert_eq!(failure(&lines), "tool_missing");
}

#[test]
fn tool_errors_jsonrpc_errors_and_initialize_refusals() {
    let server = fixture();
    let (lines, _, _) = probe(&with_server(&["--call", "echo"], &server));
    assert_eq!(failure(&lines), "tool_error");
    let dir = tmp();
    let relay = through(
        dir.path(),
        "faults:\n  - {kind: error, tools: [echo], code: -32050, message: injected}\n",
        &fixture(),
    );
    let (lines, _, _) = probe(&with_server(
        &["--call", "echo", "--arguments", r#"{"message":"hi"}"#],
        &relay,
    ));
    assert_eq!(failure(&lines), "jsonrpc_error(-32050)");
    let dir = tmp();
    let relay = through(
        dir.path(),
        "faults:\n  - {kind: error, methods: [initialize], code: -32001, message: no}\n",
        &fixture(),
    );
    let (lines, _, _) = probe(&with_server(&[], &relay));
    assert_eq!(failure(&lines), "initialize_failed(-32001)");
}

#[test]
fn expectations_on_the_result_pass_or_are_unexpected_content() {
    let server = fixture();
    let base = ["--call", "echo", "--arguments", r#"{"message":"hello"}"#];
    let mut ok = base.to_vec();
    ok.extend(["--expect", "$.content[0].text ~ /hello/"]);
    let (lines, code, _) = probe(&with_server(&ok, &server));
    assert_eq!((failure(&lines).as_str(), code), ("ok", 0), "{lines:?}");
    let mut bad = base.to_vec();
    bad.extend(["--expect", "$.content[0].text=goodbye"]);
    let (lines, code, _) = probe(&with_server(&bad, &server));
    assert_eq!((failure(&lines).as_str(), code), ("unexpected_content", 1));
}

#[test]
fn real_peers_pass_over_every_transport() {
    // server-everything over stdio.
    let (lines, code, out) = probe(&with_server(&["--timeout", "30s"], &everything()));
    assert_eq!((failure(&lines).as_str(), code), ("ok", 0), "{out}");
    let phases: Vec<&str> = lines[0]["phases"]
        .as_array()
        .map(|a| a.iter().filter_map(|p| p["phase"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        phases,
        ["spawn", "initialize", "initialized", "tools_list", "close"]
    );
    // The Python SDK over streamable HTTP, with a structured call checked against its schema.
    let (_g, url) = python_http(&[]);
    let (lines, code, out) = probe(&[
        &url,
        "--call",
        "add",
        "--arguments",
        r#"{"a":2,"b":3}"#,
        "--expect",
        "$.structuredContent.result == 5",
    ]);
    assert_eq!((failure(&lines).as_str(), code), ("ok", 0), "{out}");
    // And over legacy HTTP+SSE.
    let (_g, url) = python_http(&["--transport", "sse"]);
    let (lines, code, out) = probe(&[&url, "--transport", "sse"]);
    assert_eq!((failure(&lines).as_str(), code), ("ok", 0), "{out}");
}

#[test]
fn count_runs_that_many_and_the_exit_code_follows_the_last() {
    let (url, _) = scripted(|n, _| {
        Some(if n == 0 {
            (503, "text/plain", String::new())
        } else {
            (200, "application/json", r#"{"status":"ok"}"#.into())
        })
    });
    let health = format!("{url}/health");
    let (lines, code, _) = probe(&[
        "--kind",
        "http",
        &health,
        "--count",
        "2",
        "--interval",
        "50ms",
    ]);
    assert_eq!(
        lines.iter().filter(|l| l.get("phases").is_some()).count(),
        2
    );
    assert_eq!(lines[0]["failure"], "http_status(503)");
    assert_eq!(code, 0);
}

#[test]
fn http_probes_judge_status_and_body() {
    let (url, _) = scripted(|_, _| {
        Some((
            503,
            "application/json",
            r#"{"status":"degraded","reason":"database_unreachable"}"#.into(),
        ))
    });
    let health = format!("{url}/health");
    let (lines, code, _) = probe(&[
        "--kind",
        "http",
        &health,
        "--status",
        "503",
        "--expect",
        "$.reason == \"database_unreachable\"",
    ]);
    assert_eq!((failure(&lines).as_str(), code), ("ok", 0));
    let (lines, _, _) = probe(&[
        "--kind",
        "http",
        &health,
        "--status",
        "503",
        "--expect",
        "$.reason == \"other\"",
    ]);
    assert_eq!(failure(&lines), "unexpected_content");
    let (lines, _, _) = probe(&["--kind", "http", &health]);
    assert_eq!(failure(&lines), "http_status(503)");
}

#[test]
fn command_probes_judge_exit_code_and_stdout() {
    let (lines, code, _) = probe(&[
        "--kind",
        "command",
        "--expect",
        "~ /hel+o/",
        "--",
        "echo",
        "hello",
    ]);
    assert_eq!((failure(&lines).as_str(), code), ("ok", 0));
    let (lines, _, _) = probe(&["--kind", "command", "--", "sh", "-c", "exit 4"]);
    assert_eq!(failure(&lines), "exit_status(4)");
}

#[test]
fn header_values_are_sent_and_never_printed() {
    let secret = "Bearer s3cr3t-t0ken-value";
    // A server that wants the header and echoes it back in its refusal.
    let (url, _) = scripted(|_, req| {
        let saw = req
            .to_ascii_lowercase()
            .contains("authorization: bearer s3cr3t-t0ken-value");
        Some((
            401,
            "text/plain",
            if saw {
                "bad token Bearer s3cr3t-t0ken-value".into()
            } else {
                "no token".into()
            },
        ))
    });
    let header = format!("Authorization: {secret}");
    for extra in [&[][..], &["--kind", "http"][..]] {
        let mut args = vec![url.as_str(), "--header", header.as_str()];
        args.extend(extra);
        let (lines, _, all) = probe(&args);
        assert_eq!(failure(&lines), "http_status(401)");
        assert!(!all.contains("s3cr3t"), "{all}");
    }
    // The human output too, and errors.
    let out = std::process::Command::new(brownout())
        .args(["probe", "--kind", "http", &url, "--header", &header])
        .output()
        .expect("run");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        all.contains("FAIL http_status(401)") && all.contains("***"),
        "{all}"
    );
    assert!(!all.contains("s3cr3t"), "{all}");
}

#[test]
fn https_is_tls_in_this_build() {
    let url = format!("https://127.0.0.1:{}/mcp", free_port());
    let (lines, code, _) = probe(&[&url]);
    assert_eq!((failure(&lines).as_str(), code), ("tls", 1));
}

#[test]
fn sli_probes_read_a_running_relays_status() {
    let server = fixture();
    let mut args = vec!["--admin", "127.0.0.1:0", "--"];
    args.extend(server.iter().map(String::as_str));
    let (g, url) = brownout_http(&args);
    let admin = common::http::admin_url(&g);
    // Two probes through the relay make its calls.
    let (lines, _, out) = probe(&[&url, "--count", "2", "--interval", "10ms"]);
    assert_eq!(failure(&lines), "ok", "{out}");
    let (lines, code, out) = probe(&["--kind", "sli", &admin, "--expect", "calls >= 4"]);
    assert_eq!((failure(&lines).as_str(), code), ("ok", 0), "{out}");
    let (lines, _, _) = probe(&["--kind", "sli", &admin, "--expect", "error_rate > 50%"]);
    assert_eq!(failure(&lines), "sli_breached");
    assert!(
        lines[0]["detail"]
            .as_str()
            .unwrap_or("")
            .contains("the relay says 0"),
        "{lines:?}"
    );
    let (_, code, out) = probe(&["--kind", "sli", &admin, "--expect", "eror_rate < 1%"]);
    assert_eq!(code, 2);
    assert!(out.contains("did you mean `error_rate`"), "{out}");
}
