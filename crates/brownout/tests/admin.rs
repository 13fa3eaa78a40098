//! Live fault control of a running stdio relay through its admin API and `brownout faults`,
//! with every change observed from the client's side of the relay.

#[path = "common/admin_api.rs"]
mod admin_api;
mod common;
use admin_api::*;
use common::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

#[test]
fn faults_are_added_listed_expired_removed_and_cleared_on_a_running_relay() {
    let dir = tmp();
    let (mut w, url) = relay_with_admin(dir.path(), "faults: []\n", &[]);
    assert!(echo(&mut w, 1).get("result").is_some());

    // Add with a TTL: the client sees the fault at once, and no more after it expires.
    let (code, out, err) = faults(&[
        "add",
        "--admin",
        &url,
        "--ttl",
        "1s",
        "{id: no-echo, kind: error, phase: request, tools: [echo], code: -32042}",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("added no-echo"), "{out}");
    let (_, listed, _) = faults(&["list", "--admin", &url, "--json"]);
    let listed: Value = serde_json::from_str(&listed).expect("json");
    assert_eq!(listed["faults"][0]["id"], "no-echo");
    assert!(listed["faults"][0]["expires_in_s"]
        .as_f64()
        .is_some_and(|s| s <= 1.0));
    assert_eq!(echo(&mut w, 2)["error"]["code"], -32042);
    let until = Instant::now() + Duration::from_secs(10);
    while !w.stderr_text().contains("fault `no-echo` expired") {
        assert!(Instant::now() < until, "{}", w.stderr_text());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(echo(&mut w, 3).get("result").is_some());

    // A fault with a typo is refused with the key named, and nothing changes.
    let (code, _, err) = faults(&["add", "--admin", &url, "{kind: latency, added_msec: 5}"]);
    assert_eq!(code, 1);
    assert!(err.contains("added_msec"), "{err}");
    // An id that would rewrite the relay's terminal, or that no URL can name, is refused.
    for (id, said) in [("\\e]0;pwned\\a\\e[2J", "U+001B"), ("..", "path step")] {
        let f = format!("{{id: \"{id}\", kind: latency, tools: [x], added_ms: 1}}");
        let (code, _, err) = faults(&["add", "--admin", &url, &f]);
        assert_eq!(code, 1, "{err}");
        assert!(err.contains(said), "{err}");
    }
    assert!(!w.stderr_text().contains('\u{1b}'), "{}", w.stderr_text());

    // Add two, remove one by id, clear the rest.
    for f in [
        "{id: a, kind: error, phase: request, tools: [echo], code: -32001}",
        "{id: b, kind: latency, tools: [fetch_logs], added_ms: 1}",
    ] {
        assert_eq!(faults(&["add", "--admin", &url, f]).0, 0);
    }
    assert_eq!(echo(&mut w, 4)["error"]["code"], -32001);
    let (code, out, _) = faults(&["rm", "--admin", &url, "a"]);
    assert_eq!((code, out.trim()), (0, "removed a"));
    assert!(echo(&mut w, 5).get("result").is_some());
    assert_eq!(faults(&["rm", "--admin", &url, "a"]).0, 1);
    let (code, out, _) = faults(&["list", "--admin", &url]);
    assert_eq!(code, 0);
    assert!(out.contains("b ") && !out.contains("a "), "{out}");
    assert_eq!(faults(&["clear", "--admin", &url]).0, 0);
    let (_, out, _) = faults(&["list", "--admin", &url]);
    assert!(out.contains("no faults"), "{out}");
}

#[test]
fn put_plan_replaces_atomically_and_an_invalid_plan_changes_nothing() {
    let dir = tmp();
    let plan = "faults:\n  - {id: e1, kind: error, phase: request, tools: [echo], code: -32011}\n";
    let (mut w, url) = relay_with_admin(dir.path(), plan, &[]);
    assert_eq!(echo(&mut w, 1)["error"]["code"], -32011);
    let (status, body) = http(
        &url,
        "PUT",
        "/plan",
        "faults:\n  - {kind: error, probability: 1.5}\n",
    );
    assert_eq!(status, 422, "{body}");
    assert!(
        body.contains("plan.yaml:2:") && body.contains("probability"),
        "{body}"
    );
    assert_eq!(echo(&mut w, 2)["error"]["code"], -32011);
    let (status, body) = http(
        &url,
        "PUT",
        "/plan",
        "faults:\n  - {id: e2, kind: error, phase: request, tools: [echo], code: -32022}\n",
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(echo(&mut w, 3)["error"]["code"], -32022);
    let (status, body) = http(&url, "GET", "/status", "");
    assert_eq!(status, 200);
    let v: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(v["faults"], 1);
    assert!(
        v["summary"]["calls"].as_u64().is_some_and(|n| n >= 3),
        "{v}"
    );
    assert!(v["uptime_s"].as_f64().is_some());
}

#[test]
fn a_token_is_required_when_set_and_never_echoed() {
    let dir = tmp();
    let (w, url) = relay_with_admin(
        dir.path(),
        "faults: []\n",
        &["--admin-token", "s3cret-t0ken"],
    );
    let (code, _, err) = faults(&["list", "--admin", &url]);
    assert_eq!(code, 1, "{err}");
    let (code, _, err) = faults(&["list", "--admin", &url, "--token", "wrong"]);
    assert_eq!(code, 1, "{err}");
    let (code, out, err) = faults(&["list", "--admin", &url, "--token", "s3cret-t0ken"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("no faults"));
    assert!(!w.stderr_text().contains("s3cret-t0ken"));
}

#[test]
fn beyond_loopback_without_a_token_is_refused_before_the_server_starts() {
    let dir = tmp();
    let marker = dir.path().join("started");
    let server = vec![
        "sh".to_string(),
        "-c".into(),
        format!("touch {}; cat", marker.display()),
    ];
    let mut cmd = through(dir.path(), "faults: []\n", &server);
    cmd.insert(3, "--admin".into());
    cmd.insert(4, "0.0.0.0:0".into());
    let mut w = Wire::spawn(&cmd);
    assert_ne!(w.wait(10).code(), Some(0));
    assert!(
        w.stderr_text().contains("beyond loopback"),
        "{}",
        w.stderr_text()
    );
    assert!(!marker.exists());
}

/// F27: `faults list --fleet … --admin …` listed the fleet and ignored --admin without a
/// word; `--admin-port` alone asked for --admin; `--fleet ""` blamed --admin. Each is
/// refused now (exit 2), naming the flags at fault.
#[test]
fn faults_list_refuses_conflicting_fleet_flags_by_name() {
    let refused = |args: &[&str], env: Option<&str>, says: &[&str]| {
        let mut cmd = std::process::Command::new(brownout());
        cmd.arg("faults").arg("list").args(args);
        cmd.env_remove("BROWNOUT_ADMIN")
            .env_remove("BROWNOUT_ADMIN_TOKEN");
        if let Some(a) = env {
            cmd.env("BROWNOUT_ADMIN", a);
        }
        let out = cmd.output().expect("brownout faults list");
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?} listed something");
        for s in says {
            assert!(err.contains(s), "{args:?}: `{s}` not in {err}");
        }
        err
    };
    refused(
        &["--fleet", "127.0.0.1:9", "--admin", "127.0.0.1:9"],
        None,
        &["--fleet", "cannot be used with", "--admin"],
    );
    refused(
        &[
            "--fleet",
            "127.0.0.1:9",
            "--fleet-dns",
            "relays.test",
            "--admin-port",
            "9",
        ],
        None,
        &["cannot be used with"],
    );
    refused(
        &["--fleet", "127.0.0.1:9", "--admin-port", "9"],
        None,
        &["--admin-port", "cannot be used with", "--fleet"],
    );
    let err = refused(&["--admin-port", "9901"], None, &["--fleet-dns"]);
    assert!(!err.contains("--admin <"), "asks for --admin: {err}");
    refused(&["--fleet", ""], None, &["--fleet: an empty address"]);
    refused(&[], None, &["say which relay", "BROWNOUT_ADMIN", "--fleet"]);
    // BROWNOUT_ADMIN from the environment is not a conflict next to --fleet: the fleet is
    // listed (its one relay not reached: exit 2, a table on stdout).
    let out = std::process::Command::new(brownout())
        .args(["faults", "list", "--fleet", "127.0.0.1:9"])
        .env("BROWNOUT_ADMIN", "127.0.0.1:10")
        .env_remove("BROWNOUT_ADMIN_TOKEN")
        .output()
        .expect("brownout faults list");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("http://127.0.0.1:9") && !table.contains("127.0.0.1:10"),
        "{table}"
    );
}

/// `faults clear --fleet`: every relay's faults removed at once, seen from each relay's
/// client; a relay not reached is named, the others are still cleared, and the exit code
/// says not every relay was.
#[test]
fn faults_clear_on_a_fleet_removes_every_relays_faults_and_names_one_not_reached() {
    let dir = tmp();
    let plan = "faults:\n  - {id: e1, kind: error, phase: request, tools: [echo], code: -32011}\n  - {id: e2, kind: latency, tools: [nothing], added_ms: 1}\n";
    let (d1, d2) = (dir.path().join("1"), dir.path().join("2"));
    std::fs::create_dir_all(&d1).expect("dir");
    std::fs::create_dir_all(&d2).expect("dir");
    let (mut w1, a1) = relay_with_admin(&d1, plan, &[]);
    let (mut w2, a2) = relay_with_admin(&d2, plan, &[]);
    assert_eq!(echo(&mut w1, 1)["error"]["code"], -32011);
    assert_eq!(echo(&mut w2, 1)["error"]["code"], -32011);
    let dead = "127.0.0.1:9";
    let (code, out, err) = faults(&["clear", "--fleet", &format!("{a1},{dead},{a2}")]);
    assert_eq!(code, 2, "one relay was not reached: {out}{err}");
    assert!(
        out.contains(&format!("{a1}  removed 2 faults"))
            && out.contains(&format!("{a2}  removed 2 faults")),
        "{out}"
    );
    assert!(
        out.contains("http://127.0.0.1:9  NOT REACHED")
            && out.contains("4 faults removed; 1 relay NOT cleared"),
        "{out}"
    );
    // Both relays' clients see the faults gone.
    assert!(echo(&mut w1, 2).get("result").is_some());
    assert!(echo(&mut w2, 2).get("result").is_some());
    // Every relay reached: exit 0, and --json says what each removed.
    let (code, out, err) = faults(&["clear", "--fleet", &format!("{a1},{a2}"), "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["relays"][0]["removed"], 0, "{v:#}");
    assert_eq!(v["relays"][1]["reachable"], true, "{v:#}");
    // The flags are checked as for `faults list`.
    let (code, _, err) = faults(&["clear", "--fleet", &a1, "--admin", &a2]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot be used with"), "{err}");
}

#[test]
fn an_unreachable_admin_api_exits_2() {
    let (code, _, err) = faults(&["list", "--admin", "http://127.0.0.1:9"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot reach"), "{err}");
}

#[test]
fn metrics_show_calls_injections_and_live_eta_per_tool() {
    let dir = tmp();
    let plan = "seed: 3\nfaults:\n  - {id: drift, kind: schema_drift, tools: [get_incident], mutation: retype, path: /severity, every_nth: 2}\n";
    let (mut w, url) = relay_with_admin(dir.path(), plan, &[]);
    w.send(r#"{"jsonrpc":"2.0","id":100,"method":"tools/list"}"#);
    assert!(w.recv_json(5000).is_some());
    for i in 1..=8 {
        w.send(&tool_call(i, "get_incident", json!({"id": "INC-1"})));
        assert!(w.recv_json(5000).is_some());
    }
    let (status, text) = http(&url, "GET", "/metrics", "");
    assert_eq!(status, 200);
    let value = |line_start: &str| -> f64 {
        text.lines()
            .find(|l| l.starts_with(line_start))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no `{line_start}` in\n{text}"))
    };
    // Every second call drifted: the client got 8 answers, 4 of them schema-invalid.
    assert_eq!(
        value(r#"brownout_calls_total{method="tools/call",tool="get_incident",outcome="ok"}"#),
        8.0
    );
    assert_eq!(
        value(r#"brownout_injections_total{fault="drift",kind="schema_drift"}"#),
        4.0
    );
    assert_eq!(
        value(r#"brownout_tool_availability{tool="get_incident"}"#),
        1.0
    );
    assert_eq!(
        value(r#"brownout_tool_correctness{tool="get_incident"}"#),
        0.5
    );
    assert_eq!(value(r#"brownout_tool_eta{tool="get_incident"}"#), 0.5);
    assert_eq!(
        value(r#"brownout_schema_violations_total{tool="get_incident"}"#),
        4.0
    );
    assert_eq!(
        value(
            r#"brownout_call_latency_seconds_bucket{le="+Inf",method="tools/call",tool="get_incident"}"#
        ),
        8.0
    );
    assert_eq!(value("brownout_faults_active"), 1.0);
    assert!(text.trim_end().ends_with("# EOF"), "{text}");
}

/// The same live control on the HTTP relay: a fault added from the CLI acts on the next
/// HTTP client's calls, expires by its TTL, and `/metrics` shows live ETA per tool.
#[test]
fn the_http_relay_is_steered_live_and_shows_eta() {
    use common::http::{brownout_http, py_http, python_http};
    let (_server, direct) = python_http(&["--json-response"]);
    let (relay, url) = brownout_http(&["--upstream", &direct, "--admin", "127.0.0.1:0"]);
    let admin = relay
        .stderr_text()
        .lines()
        .find_map(|l| l.strip_prefix("brownout: admin API on "))
        .map(|s| s.trim().to_string())
        .expect("admin address printed");
    let calls = json!([
        {"op": "call_tool", "name": "add", "arguments": {"a": 1, "b": 1}},
        {"op": "call_tool", "name": "add", "arguments": {"a": 2, "b": 2}},
    ]);
    let before = py_http(&url, &[], calls.clone());
    assert_eq!(before["ops"][0]["ok"], true, "{before}");
    let (code, out, err) = faults(&[
        "add",
        "--admin",
        &admin,
        "--ttl",
        "3s",
        "{id: live, kind: error, tools: [add], code: -32070, message: live fault}",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    // Raw HTTP right away (a Python client's start-up could outlast a short TTL on a busy
    // machine): two calls, both hit.
    let during = raw_add_calls(&url, 2);
    for answer in &during {
        assert_eq!(answer["error"]["code"], -32070, "{answer}");
    }
    let (code, out, _) = faults(&["list", "--admin", &admin, "--json"]);
    assert_eq!(code, 0);
    assert!(out.contains("\"live\""), "{out}");
    let (status, metrics) = http(&admin, "GET", "/metrics", "");
    assert_eq!(status, 200);
    let eta = metrics
        .lines()
        .find(|l| l.starts_with(r#"brownout_tool_eta{tool="add"}"#))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no ETA for add: {metrics}"));
    assert!((eta - 0.5).abs() < 1e-9, "2 of 4 calls failed: ETA {eta}");
    // The fault leaves by itself.
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, out, _) = faults(&["list", "--admin", &admin, "--json"]);
        if !out.contains("\"live\"") {
            break;
        }
        assert!(Instant::now() < until, "the fault did not expire: {out}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let after = py_http(&url, &[], calls);
    assert_eq!(
        after["ops"][0]["ok"], true,
        "the fault expired by its TTL: {after}"
    );
}

/// A renewal after a fault's lease ran out answered 200 and brought it back when the sweep
/// had not removed it yet, and 404 ("no such fault") when it had: whether a lapse showed
/// depended on timing. It answers 410 "lapsed" either way now, and the fault is gone.
#[test]
fn a_renewal_after_the_lease_ran_out_answers_that_it_lapsed() {
    let dir = tmp();
    let (_w, url) = relay_with_admin(dir.path(), "faults: []\n", &[]);
    let (code, body) = http(&url, "POST", "/faults?ttl=1ms", "{id: brief, kind: drop}");
    assert_eq!(code, 201, "{body}");
    // Wait until the lease has run out (listed with no time left, or swept).
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, listed) = http(&url, "GET", "/faults", "");
        let v: Value = serde_json::from_str(&listed).unwrap_or_default();
        let left = v["faults"]
            .as_array()
            .and_then(|f| f.iter().find(|f| f["id"] == "brief"))
            .map(|f| f["expires_in_s"].as_f64().unwrap_or(1.0));
        if left.is_none_or(|l| l <= 0.0) {
            break;
        }
        assert!(Instant::now() < until, "the lease never ran out: {listed}");
        std::thread::sleep(Duration::from_millis(5));
    }
    let (code, body) = http(&url, "PUT", "/faults/brief/lease?ttl=30s", "");
    assert_eq!(code, 410, "{body}");
    assert!(body.contains("lapsed"), "{body}");
    assert!(fault_ids(&url).is_empty(), "the lapsed fault came back");
    assert_eq!(http(&url, "PUT", "/faults/never/lease?ttl=5s", "").0, 404);
}

/// Leases (issue 23 §2): `PUT /faults/{id}/lease` pushes a fault's expiry out without
/// touching its state, for ids holding `/`, `?`, `#` or `%` too (percent-encoded).
#[test]
fn a_lease_is_renewed_without_resetting_the_fault() {
    let dir = tmp();
    let (mut w, url) = relay_with_admin(dir.path(), "faults: []\n", &[]);
    let (code, body) = http(
        &url,
        "POST",
        "/faults?ttl=2s",
        "{id: \"lease/one?#%\", kind: error, phase: request, tools: [echo], code: -32042, max_injections: 1}",
    );
    assert_eq!(code, 201, "{body}");
    assert_eq!(echo(&mut w, 1)["error"]["code"], -32042);
    assert!(
        echo(&mut w, 2).get("result").is_some(),
        "one injection per session"
    );
    let (code, body) = http(
        &url,
        "PUT",
        "/faults/lease%2Fone%3F%23%25/lease?ttl=30s",
        "",
    );
    assert_eq!(code, 200, "{body}");
    let v: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(v["id"], "lease/one?#%");
    // Past the first lease: still there, and its count went on (no second injection).
    // A deliberate period (the test's subject): the 2 s the first lease had must pass.
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(fault_ids(&url), vec!["lease/one?#%".to_string()]);
    assert!(
        echo(&mut w, 3).get("result").is_some(),
        "the renewal reset the fault"
    );
    assert_eq!(http(&url, "PUT", "/faults/nope/lease?ttl=5s", "").0, 404);
    assert_eq!(
        http(&url, "PUT", "/faults/lease%2Fone%3F%23%25/lease", "").0,
        422
    );
    // Deleting by the encoded id removes exactly that fault.
    assert_eq!(
        http(&url, "DELETE", "/faults/lease%2Fone%3F%23%25", "").0,
        200
    );
    assert!(fault_ids(&url).is_empty());
}
