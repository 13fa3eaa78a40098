//! Plan loading: every error named with line, column and key; formats; mcp-chaos plans.

use super::*;
use crate::faults::*;

fn errors(text: &str, file: &str) -> Vec<String> {
    match Plan::from_str_named(text, file) {
        Ok(_) => Vec::new(),
        Err(e) => e.to_string().lines().map(String::from).collect(),
    }
}

#[test]
fn a_good_plan_compiles() {
    let p = Plan::from_str_named(
        "seed: 42\nfaults:\n  - id: slow-logs\n    kind: latency\n    tools: [\"fetch_*\"]\n    probability: 0.3\n    added_ms: 4000\n    jitter_ms: 1500\n",
        "p.yaml",
    )
    .expect("valid plan");
    assert_eq!(p.seed, 42);
    assert_eq!(p.faults[0].id, "slow-logs");
    assert!(p.faults[0].select.tool_matches(Some("fetch_logs")));
    assert!(!p.faults[0].select.tool_matches(Some("echo")));
    assert_eq!(p.faults[0].effect.kind(), "latency");
}

#[test]
fn every_error_is_reported_with_position_and_key() {
    let text = "seed: 1\nfaults:\n  - kind: latency\n    addded_ms: 5\n  - kind: latncy\n  - kind: error\n    probability: 1.5\n  - kind: latency\n    added_ms: -3\n  - kind: drop\n    tools: [\"a[\"]\n";
    let errs = errors(text, "plan.yaml");
    assert_eq!(errs.len(), 5, "{errs:#?}");
    assert!(errs[0].starts_with("plan.yaml:4:5: `faults[0].addded_ms`: unknown key `addded_ms` (did you mean `added_ms`?)"), "{}", errs[0]);
    assert!(
        errs[1].starts_with(
            "plan.yaml:5:11: `faults[1].kind`: unknown kind `latncy` (did you mean `latency`?)"
        ),
        "{}",
        errs[1]
    );
    assert!(
        errs[2].starts_with("plan.yaml:7:18: `faults[2].probability`"),
        "{}",
        errs[2]
    );
    assert!(
        errs[3].starts_with("plan.yaml:9:15: `faults[3].added_ms`"),
        "{}",
        errs[3]
    );
    assert!(
        errs[4].starts_with("plan.yaml:11:13: `faults[4].tools[0]`: bad glob"),
        "{}",
        errs[4]
    );
}

#[test]
fn top_level_typos_and_syntax_errors() {
    let errs = errors("sed: 1\nfaults: []\n", "p.yaml");
    assert_eq!(
        errs,
        vec!["p.yaml:1:1: `sed`: unknown key `sed` (did you mean `seed`?)"]
    );
    let errs = errors("faults:\n  - kind: [\n", "p.yaml");
    assert!(
        errs[0].starts_with("p.yaml:") && errs[0].contains("syntax error"),
        "{errs:?}"
    );
    let errs = errors("faults:\n  - probability: 0.5\n", "p.yaml");
    assert!(errs[0].contains("missing `kind`"), "{errs:?}");
}

#[test]
fn json_and_toml_plans() {
    let j = Plan::from_str_named(
        r#"{"seed": 3, "faults": [{"kind": "error", "code": -32001, "tool_error": false}]}"#,
        "p.json",
    )
    .expect("json");
    assert!(j.faults[0].id.starts_with("error-"), "{}", j.faults[0].id);
    let errs = errors(
        "{\"faults\": [\n  {\"kind\": \"drop\", \"probabilty\": 1}\n]}",
        "p.json",
    );
    assert!(
        errs[0].starts_with("p.json:2:20: `faults[0].probabilty`"),
        "{errs:?}"
    );
    let t = Plan::from_str_named(
        "seed = 9\n[[faults]]\nkind = \"timeout\"\nhold_ms = 100\nthen = \"deliver\"\n",
        "p.toml",
    )
    .expect("toml");
    assert_eq!(t.seed, 9);
    let errs = errors(
        "[[faults]]\nkind = \"timeout\"\nthen = \"later\"\n",
        "p.toml",
    );
    assert!(
        errs[0].starts_with("p.toml:3:8: `faults[0].then`"),
        "{errs:?}"
    );
}

#[test]
fn semantic_checks() {
    let errs = errors(
        "faults:\n  - kind: latency\n    distribution: normal\n    mean_ms: 5\n",
        "p.yaml",
    );
    assert!(errs[0].contains("stddev_ms"), "{errs:?}");
    let errs = errors(
        "faults:\n  - kind: drop\n    window: {start: '10%'}\n",
        "p.yaml",
    );
    assert!(errs[0].contains("duration"), "{errs:?}");
    assert!(errors(
        "duration: 60s\nfaults:\n  - kind: drop\n    window: {start: '10%', duration: '50%'}\n",
        "p.yaml"
    )
    .is_empty());
    let errs = errors(
        "faults:\n  - {id: a, kind: drop}\n  - {id: a, kind: drop}\n",
        "p.yaml",
    );
    assert!(errs[0].contains("duplicate fault id"), "{errs:?}");
    // Ids reach terminals and admin URLs: no escapes, no `..`, bounded.
    let errs = errors(
        "faults:\n  - {id: \"\\e]0;pwned\\a\\e[2J\", kind: drop}\n",
        "p.yaml",
    );
    assert!(errs[0].contains("U+001B"), "{errs:?}");
    let errs = errors("faults:\n  - {id: '..', kind: drop}\n", "p.yaml");
    assert!(errs[0].contains("path step"), "{errs:?}");
    let errs = errors("faults:\n  - {id: \"a\\u202Eb\", kind: drop}\n", "p.yaml");
    assert!(errs[0].contains("U+202E"), "{errs:?}");
    // Review G3: characters that do not print as themselves (a bidi mark, invisible joiners,
    // tag characters, a soft hyphen, a line separator, a no-break space) and spaces at
    // either end: two faults could look like one, and removing the visible one leaves the
    // other acting.
    for (c, shown) in [
        ("\\u061C", "U+061C"),
        ("\\u2060", "U+2060"),
        ("\\u00AD", "U+00AD"),
        ("\\U000E0041", "U+E0041"),
        ("\\u180E", "U+180E"),
        ("\\u2028", "U+2028"),
        ("\\u00A0", "U+00A0"),
        ("\\u3164", "U+3164"),
        ("\\uFE0F", "U+FE0F"),
    ] {
        let errs = errors(
            &format!("faults:\n  - {{id: \"search{c}down\", kind: drop}}\n"),
            "p.yaml",
        );
        assert!(
            errs.len() == 1 && errs[0].contains(shown),
            "{shown}: {errs:?}"
        );
    }
    for id in [" ", "down ", " down"] {
        let errs = errors(
            &format!("faults:\n  - {{id: \"{id}\", kind: drop}}\n"),
            "p.yaml",
        );
        assert!(
            errs.len() == 1 && errs[0].contains("space"),
            "`{id}`: {errs:?}"
        );
    }
    assert!(errors("faults:\n  - {id: 'search down', kind: drop}\n", "p.yaml").is_empty());
    assert!(errors("faults:\n  - {id: '障害-α.1', kind: drop}\n", "p.yaml").is_empty());
    let long = format!("faults:\n  - {{id: {}, kind: drop}}\n", "x".repeat(257));
    assert!(errors(&long, "p.yaml")[0].contains("257 characters"));
    assert!(errors("faults:\n  - {id: 'fehler-ä.1', kind: drop}\n", "p.yaml").is_empty());
    let errs = errors(
        "faults:\n  - kind: error\n    arguments: {env: {regex: '('}}\n",
        "p.yaml",
    );
    assert!(errs[0].contains("bad regex"), "{errs:?}");
}

#[test]
fn default_ids_come_from_content_and_coexist() {
    let p = Plan::from_str_named(
        "faults:\n  - kind: drop\n  - kind: error\n  - kind: drop\n    probability: 0.5\n  - kind: drop\n",
        "p.yaml",
    )
    .expect("two unnamed faults of one kind coexist");
    let ids: Vec<&str> = p.faults.iter().map(|f| f.id.as_str()).collect();
    assert!(
        ids[0].starts_with("drop-") && ids[1].starts_with("error-"),
        "{ids:?}"
    );
    assert_ne!(ids[0], ids[2], "different content, different ids");
    assert_eq!(
        ids[3],
        format!("{}-2", ids[0]),
        "an identical copy is numbered"
    );
    // Inserting a fault first renames nobody.
    let q = Plan::from_str_named(
        "faults:\n  - kind: drop\n    probability: 0.1\n  - kind: drop\n  - kind: error\n",
        "p.yaml",
    )
    .expect("valid");
    assert_eq!(q.faults[1].id, ids[0]);
    assert_eq!(q.faults[2].id, ids[1]);
}

#[test]
fn mcp_chaos_plans_load_unchanged() {
    let text = include_str!("../../../../examples/mcp-chaos-plan.yaml");
    let p =
        Plan::from_str_named(text, "examples/mcp-chaos-plan.yaml").expect("mcp-chaos plan loads");
    let kinds: Vec<&str> = p.faults.iter().map(|f| f.effect.kind()).collect();
    assert_eq!(
        kinds,
        vec![
            "latency",
            "schema_drift",
            "partial_result",
            "registry",
            "error",
            "registry",
            "error",
            "error"
        ]
    );
    // error_injection's `rate` is the probability, answered as mcp-chaos's proxy does.
    let e = &p.faults[4];
    assert!((e.select.probability - 0.02).abs() < 1e-12);
    let Some(err) = e.effect.downcast::<error::ErrorFault>() else {
        panic!("error")
    };
    assert_eq!(err.code, Some(-32000));
    // latency jitter: uniform [0, 1500] in mcp-chaos is 4750 ± 750 here.
    let Some(l) = p.faults[0].effect.downcast::<latency::Latency>() else {
        panic!("latency")
    };
    assert_eq!((l.added_ms, l.jitter_ms), (Some(4750.0), Some(750.0)));
    // burst_error and server_degradation are correlated errors.
    assert!(p.faults[6].correlation.is_some() && p.faults[7].correlation.is_some());
    // drop_tool without tools drops nothing, as in mcp-chaos.
    assert!(!p.faults[5].select.tool_matches(Some("anything")));
    let errs = errors(
        "faults:\n  - type: error_injection\n    rat: 0.1\n",
        "p.yaml",
    );
    assert!(errs[0].contains("unknown key `rat`"), "{errs:?}");
}

#[test]
fn the_http_kinds_parse() {
    let p = Plan::from_str_named(
        "faults:\n  - {id: auth, kind: http_status, status: 401, headers: {WWW-Authenticate: Bearer}, body: denied}\n  - {id: lb, kind: connection, mode: drop_stream, after_bytes: 64}\n  - {id: slow, kind: slow_stream, gap_ms: 25}\n  - {id: thin, kind: bandwidth, bytes_per_sec: 512}\n  - {id: gone, kind: session_expiry, after_calls: 3}\n  - {id: busy, kind: rate_limit, rate: 1}\n",
        "p.yaml",
    )
    .expect("valid plan");
    let Some(h) = p.faults[0].effect.downcast::<http_status::HttpStatus>() else {
        panic!("http_status")
    };
    assert_eq!(h.status, 401);
    assert_eq!(
        h.headers.get("WWW-Authenticate").map(String::as_str),
        Some("Bearer")
    );
    assert_eq!(h.body.as_deref(), Some("denied"));
    let Some(c) = p.faults[1].effect.downcast::<connection::Connection>() else {
        panic!("connection")
    };
    assert_eq!(c.mode, crate::faults::connection::Mode::DropStream);
    assert_eq!((c.after_events, c.after_bytes), (None, Some(64)));
    let Some(s) = p.faults[2].effect.downcast::<slow_stream::SlowStream>() else {
        panic!("slow_stream")
    };
    assert!((s.gap_ms - 25.0).abs() < 1e-12);
    let Some(b) = p.faults[3].effect.downcast::<bandwidth::Bandwidth>() else {
        panic!("bandwidth")
    };
    assert_eq!(b.bytes_per_sec, 512);
    assert_eq!(p.faults[4].effect.kind(), "session_expiry");
    // Default methods: tools/call for the others, every method for session_expiry.
    for f in &p.faults {
        let every = f.effect.kind() == "session_expiry";
        assert!(f.select.method_matches("tools/call"));
        assert_eq!(f.select.method_matches("resources/read"), every, "{}", f.id);
        assert_eq!(f.direction, crate::select::Direction::ToServer, "{}", f.id);
    }
}

#[test]
fn a_typo_in_each_http_kind_names_the_key() {
    for (kind, keys, typo, fix) in [
        ("http_status", "stauts: 401", "stauts", "status"),
        ("http_status", "header: {}", "header", "headers"),
        ("connection", "mdoe: refuse", "mdoe", "mode"),
        (
            "connection",
            "after_event: 2",
            "after_event",
            "after_events",
        ),
        ("slow_stream", "gapms: 5", "gapms", "gap_ms"),
        (
            "bandwidth",
            "bytes_per_sec: 5, bytes_per_second: 5",
            "bytes_per_second",
            "bytes_per_sec",
        ),
        (
            "session_expiry",
            "after_call: 5",
            "after_call",
            "after_calls",
        ),
    ] {
        let errs = errors(
            &format!("faults:\n  - {{kind: {kind}, {keys}}}\n"),
            "p.yaml",
        );
        assert_eq!(errs.len(), 1, "{kind}: {errs:#?}");
        assert!(
            errs[0].contains(&format!(
                "`faults[0].{typo}`: unknown key `{typo}` (did you mean `{fix}`?)"
            )),
            "{kind}: {errs:?}"
        );
    }
}

#[test]
fn http_kinds_check_their_values() {
    for (fault, key) in [
        ("{kind: http_status, status: 600}", "status"),
        ("{kind: http_status, status: 99}", "status"),
        ("{kind: http_status, headers: {'Bad Name': x}}", "headers"),
        ("{kind: connection, mode: hangup}", "mode"),
        (
            "{kind: connection, mode: reset, after_events: 2}",
            "after_events",
        ),
        ("{kind: slow_stream, gap_ms: -1}", "gap_ms"),
        ("{kind: bandwidth, bytes_per_sec: 0}", "bytes_per_sec"),
    ] {
        let errs = errors(&format!("faults:\n  - {fault}\n"), "p.yaml");
        assert_eq!(errs.len(), 1, "{fault}: {errs:#?}");
        assert!(
            errs[0].contains(&format!("`faults[0].{key}")),
            "{fault}: {errs:?}"
        );
    }
    let errs = errors("faults:\n  - {kind: bandwidth}\n", "p.yaml");
    assert!(errs[0].contains("bytes_per_sec"), "{errs:?}");
}

/// Every YAML example in the plan reference loads (a list of faults is read as `faults:`).
#[test]
fn the_examples_in_the_plan_reference_are_valid_plans() {
    let doc = include_str!("../../../../docs/plans.md");
    let mut blocks = 0;
    let mut lines = doc.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        if line.trim() != "```yaml" {
            continue;
        }
        let body: Vec<&str> = lines
            .by_ref()
            .map(|(_, l)| l)
            .take_while(|l| l.trim() != "```")
            .collect();
        let body = body.join("\n");
        let text = if body.trim_start().starts_with("- ") {
            format!("faults:\n{body}\n")
        } else {
            format!("{body}\n")
        };
        if let Err(e) = Plan::from_str_named(&text, "plans.md") {
            panic!("the example at docs/plans.md:{} does not load:\n{e}", n + 1);
        }
        blocks += 1;
    }
    assert!(blocks >= 14, "only {blocks} examples found");
}

#[test]
fn empty_and_faultless_documents_are_refused() {
    let empty = "p.yaml:1:1: the plan is empty; write `faults: []` for a plan with no faults";
    for text in ["", "   \n\n", "# only a comment\n", "null\n", "~", "{}\n"] {
        assert_eq!(errors(text, "p.yaml"), vec![empty], "{text:?}");
    }
    assert_eq!(
        errors("null", "p.json"),
        vec!["p.json:1:1: the plan is empty; write `faults: []` for a plan with no faults"]
    );
    assert_eq!(
        errors("", "p.toml"),
        vec!["p.toml:1:1: the plan is empty; write `faults: []` for a plan with no faults"]
    );
    // Cut short before `faults:` (a half-written file).
    assert_eq!(
        errors("seed: 4\nname: nightly\n", "p.yaml"),
        vec!["p.yaml:1:1: the plan has no `faults` key; write `faults: []` for a plan with no faults"]
    );
    for (text, file) in [
        ("faults: []\n", "p.yaml"),
        ("{\"faults\": []}", "p.json"),
        ("faults = []\n", "p.toml"),
    ] {
        let p = Plan::from_str_named(text, file).expect("an explicit empty plan");
        assert!(p.faults.is_empty());
    }
}

#[test]
fn a_nul_byte_does_not_truncate_a_plan() {
    // YAML would read up to the NUL and install the faults before it.
    let text = "faults:\n  - kind: drop\n\0  - kind: error\n";
    assert_eq!(
        errors(text, "p.yaml"),
        vec!["p.yaml:3:1: syntax error: a NUL byte (U+0000) is not allowed in a text document (is the file binary or cut short?)"]
    );
}

#[test]
fn a_deeply_nested_plan_is_an_error_not_a_crash() {
    // Block style, 80 KB and more: one line of compact nested lists under a fault's argument.
    let text = format!(
        "faults:\n  - kind: error\n    arguments:\n      x:\n        {}1\n",
        "- ".repeat(41_000)
    );
    assert!(text.len() > 80_000);
    let errs = errors(&text, "deep.yaml");
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].starts_with("deep.yaml:5:")
            && errs[0].ends_with(
                "syntax error: nested too deeply: more than 64 levels of mappings and lists"
            ),
        "{errs:?}"
    );
}

/// Every message names the key, what it accepts (every value, or the type and range) and,
/// for a typo, the likely fix; errors print top to bottom.
#[test]
fn typical_mistakes_get_messages_that_say_what_is_allowed() {
    let text = "faults:
  - kind: latency
    distribution: gauss
    window: {start: 5 minutes, strt: 2}
    probability: 1.5
    correlation: {mode: burts}
    direction: to_srv
  - kind: timeout
    then: later
    tools: fetch_logs
  - kind: error
    code: \"-32000\"
  - probability: 0.5
  - kind: latncy
  - kind: drop
    zzzzzzz: 1
";
    let kinds = crate::faults::kind_names().join(", ");
    let expected = vec![
        "p.yaml:3:19: `faults[0].distribution`: unknown value `gauss`; expected one of `fixed`, `uniform`, `normal`, `pareto`".to_string(),
        "p.yaml:4:21: `faults[0].window.start`: expected a number ≥ 0 or a string such as \"500ms\", \"30s\", \"2m\", \"1h\", \"25%\", got \"5 minutes\"".into(),
        "p.yaml:4:32: `faults[0].window.strt`: unknown key `strt` (did you mean `start`?)".into(),
        "p.yaml:5:18: `faults[0].probability`: expected a number from 0 to 1, got 1.5".into(),
        "p.yaml:6:25: `faults[0].correlation.mode`: unknown value `burts`; expected one of `burst`, `episodes` (did you mean `burst`?)".into(),
        "p.yaml:7:16: `faults[0].direction`: unknown value `to_srv`; expected one of `to_server`, `to_client` (did you mean `to_server`?)".into(),
        "p.yaml:9:11: `faults[1].then`: unknown value `later`; expected one of `drop`, `deliver`".into(),
        "p.yaml:10:12: `faults[1].tools`: expected a list of strings, got \"fetch_logs\" (a list of one is written [\"fetch_logs\"])".into(),
        "p.yaml:12:11: `faults[2].code`: expected an integer, got \"-32000\" (write the number without quotes: -32000)".into(),
        format!("p.yaml:13:16: `faults[3]`: missing `kind` (or `type`), one of {kinds}"),
        format!("p.yaml:14:11: `faults[4].kind`: unknown kind `latncy` (did you mean `latency`?); known kinds: {kinds}"),
        "p.yaml:16:5: `faults[5].zzzzzzz`: unknown key `zzzzzzz`; known keys: id, kind, description, enabled, direction, methods, tools, servers, arguments, probability, sessions, after_calls, every_nth, max_injections, window, correlation".into(),
    ];
    assert_eq!(errors(text, "p.yaml"), expected);
}

/// A number beyond a 64-bit float reaches the checker as text; the hint must not tell the
/// user to remove quotes that are not there.
#[test]
fn a_number_too_large_is_called_too_large_not_quoted() {
    for (text, file) in [
        ("faults:\n  - {kind: latency, added_ms: 1e400}\n", "p.yaml"),
        (
            "{\"faults\": [{\"kind\": \"latency\", \"added_ms\": 1e400}]}",
            "p.json",
        ),
    ] {
        let errs = errors(text, file);
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].contains("1e400 is too large to be a number here"),
            "{errs:?}"
        );
        assert!(!errs[0].contains("without quotes"), "{errs:?}");
    }
}

#[test]
fn messages_are_the_same_in_json_and_toml_and_at_the_top_level() {
    assert_eq!(
        errors("{\"seed\": -1, \"faults\": {}}", "p.json"),
        vec![
            "p.json:1:10: `seed`: expected an integer ≥ 0, got -1",
            "p.json:1:24: `faults`: expected a list of mappings, got {}",
        ]
    );
    assert_eq!(
        errors(
            "[[faults]]\nkind = \"connection\"\nmode = \"hangup\"\nwindow = {duration = \"1 hour\"}\n",
            "p.toml"
        ),
        vec![
            "p.toml:3:8: `faults[0].mode`: unknown value `hangup`; expected one of `refuse`, `reset`, `stall`, `drop_stream`",
            "p.toml:4:22: `faults[0].window.duration`: expected a number ≥ 0 or a string such as \"500ms\", \"30s\", \"2m\", \"1h\", \"25%\", got \"1 hour\"",
        ]
    );
    assert_eq!(
        errors("faults:\n  - {kind: drop, correlation: {intensity: 0.5}}\n", "p.yaml"),
        vec!["p.yaml:2:31: `faults[0].correlation`: missing required key `mode` (one of `burst`, `episodes`)"]
    );
}

#[test]
fn a_plan_holds_at_most_max_faults() {
    let fault = "  - {kind: latency, added_ms: 1}\n";
    let at_cap = format!("faults:\n{}", fault.repeat(super::MAX_FAULTS));
    assert!(Plan::from_str_named(&at_cap, "p.yaml").is_ok());
    let over = format!("faults:\n{}", fault.repeat(super::MAX_FAULTS + 1));
    let errs = errors(&over, "p.yaml");
    assert_eq!(
        errs,
        vec![format!(
            "p.yaml:1:1: `faults`: {} faults; a plan holds at most {} (merge faults that share a kind: one fault's `tools`, `methods` and `sessions` select many targets)",
            super::MAX_FAULTS + 1,
            super::MAX_FAULTS
        )]
    );
}

/// A plan with a hundred thousand bad keys is checked no further than [`MAX_ERRORS`]
/// (explaining each error costs a "did you mean" search), with a note where checking
/// stopped; a plan past the size cap is refused before parsing.
#[test]
fn errors_are_bounded_and_huge_documents_refused() {
    let mut text = String::from("seed: 1\nfaults:\n");
    for _ in 0..1000 {
        text.push_str("  - kind: error\n");
        for k in 0..100 {
            text.push_str(&format!("    x{k}: {k}\n"));
        }
    }
    let e = Plan::from_str_named(&text, "p.yaml").expect_err("unknown keys");
    assert_eq!(e.errors.len(), MAX_ERRORS + 1, "{}", e.errors.len());
    assert!(
        e.errors
            .iter()
            .any(|x| x.message.contains("checking stopped here after 100 errors")),
        "{e}"
    );
    let huge = format!(
        "seed: 1\nfaults: []\n# {}\n",
        "x".repeat(source::MAX_TEXT_BYTES)
    );
    let e = Plan::from_str_named(&huge, "p.yaml").expect_err("too large");
    assert!(
        e.to_string().contains("over the limit of 4194304 bytes"),
        "{e}"
    );
}
