//! The admin API's own safety: cross-site requests, slow clients, out-of-range TTLs, empty,
//! truncated and huge plans, the seed in force — each seen from outside, the relay living on.

#[path = "common/admin_api.rs"]
mod admin_api;
mod common;
use admin_api::*;
use common::*;
use serde_json::Value;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// A web page can send a `text/plain` POST to loopback without a preflight, and make its
/// own host name resolve to 127.0.0.1: neither may steer the relay.
#[test]
fn cross_site_requests_and_untyped_bodies_are_refused() {
    let dir = tmp();
    let (mut w, url) = relay_with_admin(dir.path(), ONE_FAULT, &[]);
    let addr = url.trim_start_matches("http://").to_string();
    let host = format!("Host: {addr}");
    let fault = r#"{"id": "evil", "kind": "error", "tools": ["*"], "code": -32666}"#;

    // The classic cross-site form post: text/plain, foreign Origin.
    let (status, body) = raw(
        &url,
        "POST",
        "/faults",
        &[
            &host,
            "Origin: https://evil.example",
            "Content-Type: text/plain",
        ],
        fault,
    );
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("evil.example"), "{body}");
    // DNS rebinding: the page's own name, now pointing at loopback.
    let (status, body) = raw(
        &url,
        "POST",
        "/faults",
        &["Host: evil.example", "Content-Type: application/json"],
        fault,
    );
    assert_eq!(status, 421, "{body}");
    // Even from loopback, a body must say what it is.
    for ct in [
        "Content-Type: text/plain",
        "Content-Type: application/x-www-form-urlencoded",
    ] {
        let (status, body) = raw(&url, "POST", "/faults", &[&host, ct], fault);
        assert_eq!(status, 415, "{ct}: {body}");
        assert!(body.contains("application/json"), "{body}");
    }
    let (status, body) = raw(&url, "POST", "/faults", &[&host], fault);
    assert_eq!(status, 415, "{body}");
    let (status, body) = raw(
        &url,
        "PUT",
        "/plan",
        &[&host, "Content-Type: text/plain"],
        "faults: []\n",
    );
    assert_eq!(status, 415, "{body}");
    assert_eq!(fault_ids(&url), ["e1"]);
    assert_eq!(echo(&mut w, 1)["error"]["code"], -32011);
    // A foreign Origin cannot even read.
    let (status, _) = raw(
        &url,
        "GET",
        "/faults",
        &[&host, "Origin: https://evil.example"],
        "",
    );
    assert_eq!(status, 403);

    // What a local tool sends passes: JSON as JSON, plans as YAML, TOML or JSON, a loopback
    // Origin too.
    let (status, body) = raw(
        &url,
        "POST",
        "/faults",
        &[
            &host,
            "Origin: http://localhost:3000",
            "Content-Type: application/json; charset=utf-8",
        ],
        r#"{"id": "j", "kind": "latency", "tools": ["fetch_logs"], "added_ms": 1}"#,
    );
    assert_eq!(status, 201, "{body}");
    let (status, body) = raw(
        &url,
        "POST",
        "/faults",
        &[&host, "Content-Type: application/json"],
        "{id: not-json, kind: latency, added_ms: 1}",
    );
    assert_eq!(status, 422, "YAML labelled JSON: {body}");
    let (status, body) = raw(
        &url,
        "PUT",
        "/plan",
        &[&host, "Content-Type: application/toml"],
        "[[faults]]\nid = \"t\"\nkind = \"error\"\nphase = \"request\"\ntools = [\"echo\"]\ncode = -32033\n",
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(echo(&mut w, 2)["error"]["code"], -32033);
    let (status, body) = raw(
        &url,
        "PUT",
        "/plan",
        &[&host, "Content-Type: application/json"],
        r#"{"faults": [{"id": "j2", "kind": "error", "phase": "request", "tools": ["echo"], "code": -32044}]}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(echo(&mut w, 3)["error"]["code"], -32044);
}

/// A TTL too large for a `Duration` or an `Instant` is refused with a reason; the relay
/// lives on.
#[test]
fn out_of_range_ttls_are_refused_and_the_relay_lives() {
    let dir = tmp();
    let (mut w, url) = relay_with_admin(dir.path(), ONE_FAULT, &[]);
    let fault = "{id: t, kind: latency, tools: [fetch_logs], added_ms: 1}";
    for ttl in [
        "1000000000000000000000000000000",
        "10000000000000000000s",
        "99999999999h",
        "1e30",
        "-5s",
        "NaN",
    ] {
        let (status, body) = http(&url, "POST", &format!("/faults?ttl={ttl}"), fault);
        assert_eq!(status, 422, "ttl={ttl}: {body}");
        assert!(body.contains("ttl"), "{body}");
    }
    let (status, body) = http(&url, "POST", "/faults?ttl=99999999999h", fault);
    assert!(status == 422 && body.contains("out of range"), "{body}");
    assert_eq!(fault_ids(&url), ["e1"]);
    assert_eq!(echo(&mut w, 1)["error"]["code"], -32011);
    // The CLI says so before it asks the relay, with exit 2 (bad input).
    let (code, _, err) = faults(&["add", "--admin", &url, "--ttl", "1e30", fault]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("ttl"), "{err}");
    let (code, _, err) = faults(&[
        "add",
        "--admin",
        &url,
        "--ttl",
        "10000000000000000000000",
        fault,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("out of range"), "{err}");
    assert_eq!(fault_ids(&url), ["e1"]);
}

/// An empty body, `null` or `{}` is not "no faults": the running plan stays, and only
/// `faults: []` clears it. An unknown `?format=` is refused, naming the formats.
#[test]
fn empty_plans_and_unknown_formats_keep_the_running_plan() {
    let dir = tmp();
    let (mut w, url) = relay_with_admin(dir.path(), ONE_FAULT, &[]);
    for body in ["", "null", "{}", "\n", "# nothing\n", "seed: 3\n"] {
        let (status, said) = http(&url, "PUT", "/plan", body);
        assert_eq!(status, 422, "{body:?}: {said}");
        assert!(said.contains("faults: []"), "{said}");
        assert_eq!(fault_ids(&url), ["e1"], "after {body:?}");
    }
    for body in ["", "null", "{}"] {
        let (status, said) = raw(
            &url,
            "PUT",
            "/plan",
            &[
                &format!("Host: {}", url.trim_start_matches("http://")),
                "Content-Type: application/json",
            ],
            body,
        );
        assert_eq!(status, 422, "JSON {body:?}: {said}");
    }
    let (status, said) = http(&url, "POST", "/faults", "");
    assert_eq!(status, 422, "{said}");
    let (status, said) = http(&url, "PUT", "/plan?format=xml", "faults: []\n");
    assert_eq!(status, 400, "{said}");
    assert!(
        said.contains("xml") && said.contains("yaml") && said.contains("toml"),
        "{said}"
    );
    assert_eq!(fault_ids(&url), ["e1"]);
    assert_eq!(echo(&mut w, 1)["error"]["code"], -32011);
    // Saying so clears it.
    let (status, said) = http(&url, "PUT", "/plan", "faults: []\n");
    assert_eq!(status, 200, "{said}");
    assert!(fault_ids(&url).is_empty());
    assert!(echo(&mut w, 2).get("result").is_some());
}

/// 80 KB of block-style nesting: refused as a plan (422), not a stack overflow; the relay
/// lives. (Needs the plan parser's nesting cap from brownout-core.)
#[test]
fn a_deeply_nested_plan_is_refused_and_the_relay_lives() {
    let dir = tmp();
    let (mut w, url) = relay_with_admin(dir.path(), ONE_FAULT, &[]);
    // `- - - - …`: block sequences nested 40,000 deep in 80 KB.
    let deep = format!("faults:\n{}x\n", "- ".repeat(40_000));
    let (status, said) = http(&url, "PUT", "/plan", &deep);
    assert_eq!(status, 422, "{said}");
    assert_eq!(fault_ids(&url), ["e1"]);
    assert_eq!(echo(&mut w, 1)["error"]["code"], -32011);
}

/// Slowloris: a client that trickles its headers, sends none at all, or never finishes its
/// body is cut off (within a generous bound), and the API keeps answering others meanwhile.
#[test]
fn slow_clients_are_cut_off_and_others_are_served() {
    let dir = tmp();
    let (_w, url) = relay_with_admin(dir.path(), ONE_FAULT, &[]);
    let addr = url.trim_start_matches("http://").to_string();
    // What each slow client sends before it stalls.
    let stalls = [
        String::new(),
        format!("GET /status HTTP/1.1\r\nHost: {addr}\r\nX-Slow: a"),
        format!(
            "POST /faults HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/yaml\r\nContent-Length: 100\r\n\r\n{{kind: lat"
        ),
    ];
    let (wrote, written) = std::sync::mpsc::channel();
    let slow: Vec<_> = stalls
        .into_iter()
        .map(|sent| {
            let addr = addr.clone();
            let wrote = wrote.clone();
            std::thread::spawn(move || {
                let mut s = std::net::TcpStream::connect(&addr).expect("connect");
                s.write_all(sent.as_bytes()).expect("write");
                let _ = wrote.send(());
                s.set_read_timeout(Some(Duration::from_secs(60)))
                    .expect("timeout");
                let start = Instant::now();
                let mut got = Vec::new();
                // EOF (or a reset) ends the read; a timeout means the server kept it open.
                let result = s.read_to_end(&mut got);
                let timed_out = result.as_ref().is_err_and(|e| {
                    matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    )
                });
                (
                    sent,
                    timed_out,
                    start.elapsed(),
                    String::from_utf8_lossy(&got).to_string(),
                )
            })
        })
        .collect();
    // Meanwhile (every slow client connected and half-way through its request) the API
    // answers.
    for _ in 0..slow.len() {
        written
            .recv_timeout(Duration::from_secs(30))
            .expect("a slow client connected");
    }
    let (status, body) = http(&url, "GET", "/status", "");
    assert_eq!(status, 200, "{body}");
    for t in slow {
        let (sent, timed_out, took, got) = t.join().expect("thread");
        assert!(
            !timed_out,
            "a client that sent {sent:?} was kept for {took:?}: {got}"
        );
        if sent.contains("Content-Length") {
            assert!(got.contains(" 408 "), "{got}");
        }
    }
    assert_eq!(fault_ids(&url), ["e1"]);
}

/// A large plan is parsed and compiled off the relay's thread and outside the engine's
/// lock: calls keep being answered while `PUT /plan` works (before, every call waited for
/// the whole compile).
#[test]
fn a_large_plan_does_not_stop_traffic_while_it_compiles() {
    let dir = tmp();
    let (mut w, url) = relay_with_admin(dir.path(), ONE_FAULT, &[]);
    let mut plan = String::from(
        "faults:\n  - {id: e2, kind: error, phase: request, tools: [echo], code: -32022}\n",
    );
    // As large as a plan may be: the error fault and 999 more.
    for i in 0..999 {
        plan.push_str(&format!(
            "  - {{id: f{i}, kind: latency, tools: [nothing_{i}], added_ms: 5}}\n"
        ));
    }
    let too_large = format!("{plan}  - {{id: one_more, kind: drop}}\n");
    let put = {
        let url = url.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            let (status, body) = http(&url, "PUT", "/plan", &plan);
            (status, body, start.elapsed())
        })
    };
    let mut slowest = Duration::ZERO;
    let mut id = 100;
    while !put.is_finished() {
        let start = Instant::now();
        echo(&mut w, id);
        slowest = slowest.max(start.elapsed());
        id += 1;
        std::thread::sleep(Duration::from_millis(10));
    }
    let (status, body, took) = put.join().expect("PUT");
    assert_eq!(status, 200, "{body}");
    assert_eq!(echo(&mut w, 1)["error"]["code"], -32022);
    // One fault more is refused whole, naming the cap; the plan in force stays.
    let (status, body) = http(&url, "PUT", "/plan", &too_large);
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("at most 1000"), "{body}");
    assert_eq!(echo(&mut w, 2)["error"]["code"], -32022);
    // Only meaningful when the compile took a while on this machine.
    if took > Duration::from_secs(1) {
        assert!(
            slowest < took / 2,
            "a call waited {slowest:?} while the plan took {took:?}"
        );
    }
}

/// `GET /faults` shows the seed in force: `--seed` over the plan's own.
#[test]
fn the_listed_seed_is_the_one_in_force() {
    let dir = tmp();
    let (mut w, url) = relay_with_admin(
        dir.path(),
        "seed: 1\nfaults:\n  - {id: slow, kind: latency, added_ms: 1}\n",
        &["--seed", "99"],
    );
    let (code, body) = http(&url, "GET", "/faults", "");
    assert_eq!(code, 200, "{body}");
    let v: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(v["seed"], 99, "{v}");
    w.close_stdin();
    let _ = w.wait(10);
}
