//! Grammar tests: every SLI, units, scopes, windows, errors with columns and suggestions,
//! serde from YAML, JSON and TOML.

use super::*;

fn parse(text: &str) -> Gate {
    Gate::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn err(text: &str) -> GateError {
    match Gate::parse(text) {
        Ok(g) => panic!("{text} parsed as {g}"),
        Err(e) => e,
    }
}

#[test]
fn the_brief_examples_parse_and_print_back() {
    for text in [
        "error_rate < 1% over 10s",
        "p99 < 800ms over 10s",
        "eta{tool=\"get_incident\"} >= 99% over 20s",
        "p95 <= 1.5s over 500 calls min 50 calls for 3s",
    ] {
        let g = parse(text);
        assert_eq!(g.to_string(), text);
        assert_eq!(parse(&g.to_string()), g);
    }
    let g = parse("p95 <= 1.5s over 500 calls min 50 calls for 3s");
    assert_eq!(g.sli, Sli::Percentile(950_000));
    assert_eq!(g.cmp, Cmp::Le);
    assert_eq!(g.limit(), 1500.0);
    assert_eq!(g.window, Window::Count { n: 500 });
    assert_eq!(g.min_samples(), 50);
    assert_eq!(g.sustain_ms(), 3000.0);
}

#[test]
fn every_sli_parses_with_its_kind() {
    for name in SLI_NAMES {
        let value = match name {
            "mean" | "max" | "p50" | "p90" | "p95" | "p99" | "p999" => "250ms",
            "amplification" | "propagated" => "1.5",
            "target_rss" => "512MB",
            _ => "5%",
        };
        let noun = if name.starts_with("target_") {
            "readings"
        } else if name.starts_with("task") || name == "blast_radius" {
            "tasks"
        } else if matches!(name, "silent_rate" | "safe_rate" | "propagated") {
            "results"
        } else {
            "calls"
        };
        let text = format!("{name} < {value} over 100 {noun}");
        let g = parse(&text);
        assert_eq!(g.to_string(), text);
    }
    assert_eq!(parse("amplification <= 1.5x over 10s").limit(), 1.5);
    assert_eq!(parse("task_success >= 99% over 10s").sli, Sli::TaskSuccess);
    assert_eq!(parse("silent_rate < 1% over 10s").sli, Sli::SilentRate);
}

#[test]
fn silent_rates_count_what_became_of_changed_results() {
    use crate::slo::TaintMark;
    let mut w = GateWatch::new(vec![
        parse("silent_rate < 10% over 10s min 4 results"),
        parse("safe_rate >= 50% over 10s min 4 results"),
        parse(r#"propagated{tool="get_*"} < 1 over 10s"#),
    ]);
    for i in 0..4 {
        w.observe_taint(f64::from(i), Some("get_incident"), TaintMark::Altered);
    }
    w.observe_taint(5.0, Some("get_incident"), TaintMark::Noticed);
    w.observe_taint(5.0, Some("get_incident"), TaintMark::Noticed);
    // Calls do not move silent-failure gates.
    w.observe_call(&CallObservation {
        at_ms: 5.0,
        method: "tools/call".into(),
        tool: Some("get_incident".into()),
        outcome: crate::event::Outcome::Error,
        latency_ms: 1.0,
        correct: false,
        timed_out: false,
        attempts: 1,
    });
    let s = w.evaluate(6.0);
    assert_eq!(s[0].value, Some(0.0));
    assert_eq!(s[1].value, Some(0.5));
    assert_eq!(s[2].value, Some(0.0));
    w.observe_taint(7.0, Some("get_incident"), TaintMark::Propagated);
    let s = w.evaluate(8.0);
    assert_eq!(s[0].value, Some(0.25));
    assert_ne!(s[0].status, GateStatus::Holding);
    assert_eq!(s[2].value, Some(1.0));
    // Another tool's results are outside the scoped gate.
    w.observe_taint(8.0, Some("search"), TaintMark::Propagated);
    assert_eq!(w.evaluate(9.0)[2].value, Some(1.0));
}

#[test]
fn percentiles_take_any_rank_and_print_canonically() {
    for (text, ppm, canonical) in [
        ("p50", 500_000, "p50"),
        ("p75", 750_000, "p75"),
        ("p999", 999_000, "p999"),
        ("p99.9", 999_000, "p999"),
        ("p9999", 999_900, "p9999"),
        ("p99.95", 999_500, "p9995"),
        ("p12.5", 125_000, "p12.5"),
        ("p100", 1_000_000, "p100"),
        ("p1", 10_000, "p1"),
    ] {
        let g = parse(&format!("{text} < 1s over 10s"));
        assert_eq!(g.sli, Sli::Percentile(ppm), "{text}");
        assert_eq!(g.sli.to_string(), canonical);
    }
    for bad in ["p0", "p123", "p101", "p99.99999"] {
        let e = err(&format!("{bad} < 1s over 10s"));
        assert_eq!(e.column, 1, "{bad}: {e}");
    }
}

#[test]
fn values_carry_units() {
    assert_eq!(parse("error_rate < 1% over 10s").limit(), 0.01);
    assert_eq!(parse("error_rate < 0.01 over 10s").limit(), 0.01);
    assert_eq!(parse("availability >= 99.5% over 10s").limit(), 0.995);
    assert_eq!(parse("p99 < 800ms over 10s").limit(), 800.0);
    assert_eq!(parse("p99 < 1.5s over 10s").limit(), 1500.0);
    assert_eq!(parse("mean < 2m over 1h").limit(), 120_000.0);
    assert_eq!(
        parse("max < 1s over 250ms").window,
        Window::Time { ms: 250.0 }
    );
    assert_eq!(parse("timeouts == 0 over 1m").limit(), 0.0);
    assert_eq!(parse("timeouts == 0 over 1m").cmp, Cmp::Eq);
    for (cmp, c) in [
        ("<", Cmp::Lt),
        ("<=", Cmp::Le),
        (">", Cmp::Gt),
        (">=", Cmp::Ge),
    ] {
        assert_eq!(parse(&format!("eta {cmp} 99% over 10s")).cmp, c);
    }
}

#[test]
fn values_show_in_their_unit() {
    assert_eq!(
        parse("error_rate < 1% over 10s").show(Some(0.004_21)),
        "0.421%"
    );
    assert_eq!(
        parse("p99 < 1s over 10s").show(Some(812.345_67)),
        "812.3457ms"
    );
    assert_eq!(parse("amplification < 2 over 10s").show(Some(1.25)), "1.25");
    assert_eq!(parse("eta > 99% over 10s").show(None), "—");
}

#[test]
fn defaults_min_samples_and_sustain() {
    let g = parse("error_rate < 1% over 10s");
    assert_eq!(g.min_samples(), DEFAULT_MIN_SAMPLES);
    assert_eq!(g.sustain_ms(), 0.0);
    // A count window smaller than the default minimum is its own minimum.
    assert_eq!(parse("error_rate < 1% over 5 calls").min_samples(), 5);
    // `min` and `for` come in either order; `min` may leave out its noun.
    let g = parse("error_rate<1%over 10s for 2s min 7");
    assert_eq!((g.min_samples(), g.sustain_ms()), (7, 2000.0));
    assert_eq!(g.to_string(), "error_rate < 1% over 10s min 7 calls for 2s");
}

#[test]
fn scopes_match_tools_and_methods_by_glob() {
    let g = parse(r#"error_rate{tool="search_*"} < 1% over 10s"#);
    assert!(g.scope.matches("tools/call", Some("search_incidents")));
    assert!(!g.scope.matches("tools/call", Some("get_incident")));
    assert!(!g.scope.matches("tools/list", None));
    let g = parse(r#"p99{tool="get_incident", method="tools/call"} < 1s over 10s"#);
    assert_eq!(
        g.to_string(),
        r#"p99{method="tools/call", tool="get_incident"} < 1s over 10s"#
    );
    assert!(g.scope.matches("tools/call", Some("get_incident")));
    assert!(!g.scope.matches("tools/other", Some("get_incident")));
    let g = parse(r#"availability{method="resources/*"} > 90% over 10s"#);
    assert!(g.scope.matches("resources/read", None));
    let g = parse(r#"eta{tool="a\"b"} > 90% over 10s"#);
    assert_eq!(g.scope.tool.as_deref(), Some("a\"b"));
    assert_eq!(parse(&g.to_string()), g);
}

#[test]
fn errors_point_at_the_column_and_suggest() {
    let cases: [(&str, usize, &str, Option<&str>); 22] = [
        (
            "eror_rate < 1% over 10s",
            1,
            "unknown SLI",
            Some("error_rate"),
        ),
        ("latency < 1s over 10s", 1, "unknown SLI", None),
        ("error_rate < 5 over 10s", 14, "fraction", Some("5%")),
        ("error_rate < 150% over 10s", 14, "more than 100", None),
        ("error_rate < 1ms over 10s", 14, "ratio", None),
        ("p99 < 800 over 10s", 7, "latency", Some("800ms")),
        ("p99 < 800sec over 10s", 7, "unit of time", Some("s")),
        ("amplification < 2% over 10s", 17, "plain number", None),
        ("error_rate < 1%", 16, "needs a window", None),
        ("error_rate < 1% ovr 10s", 17, "window", Some("over")),
        ("error_rate < 1% over 10", 24, "names what it counts", None),
        (
            "error_rate < 1% over 10 tasks",
            25,
            "counts calls",
            Some("calls"),
        ),
        (
            "task_success > 99% over 10 calls",
            28,
            "counts tasks",
            Some("tasks"),
        ),
        (
            "error_rate = 1% over 10s",
            12,
            "not a comparator",
            Some("=="),
        ),
        ("error_rate 1% over 10s", 12, "comparator", None),
        (
            r#"eta{tol="x"} > 99% over 10s"#,
            5,
            "unknown scope",
            Some("tool"),
        ),
        (r#"eta{tool=x} > 99% over 10s"#, 10, "quoted name", None),
        (r#"eta{tool="x} > 99% over 10s"#, 10, "closing", None),
        (
            r#"task_success{tool="x"} > 99% over 10s"#,
            13,
            "tasks",
            None,
        ),
        (
            "error_rate < 1% over 100 calls min 200 calls",
            36,
            "never trip",
            None,
        ),
        ("error_rate < 1% over 10s for 3", 30, "duration", None),
        (
            "error_rate < 1% over 10s fro 3s",
            26,
            "unexpected",
            Some("for"),
        ),
    ];
    for (text, col, words, suggestion) in cases {
        let e = err(text);
        assert_eq!(e.column, col, "{text}: {e}");
        assert!(e.message.contains(words), "{text}: {e}");
        assert_eq!(e.suggestion.as_deref(), suggestion, "{text}: {e}");
    }
    let e = err("eror_rate < 1% over 10s");
    assert_eq!(
        e.to_string(),
        "column 1: unknown SLI `eror_rate`: one of error_rate, availability, correctness, eta, \
         tcsr, timeouts, amplification, mean, max, p50, p90, p95, p99, p999, task_success, \
         blast_radius, silent_rate, safe_rate, propagated, target_rss, target_cpu, or pNN (did \
         you mean `error_rate`?)"
    );
    assert!(err("").message.contains("ends"));
    assert!(err("error_rate < 1% over 10s min 5 min 6")
        .message
        .contains("twice"));
    assert!(err("error_rate < 1% over 0s").message.contains("between"));
    assert!(err("error_rate < 1% over 2000000 calls")
        .message
        .contains("at most"));
}

#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema, Debug)]
struct Doc {
    gates: Vec<Gate>,
}

#[test]
fn gates_deserialize_from_strings_in_any_format() {
    let json: Doc =
        serde_json::from_str(r#"{"gates": ["error_rate < 1% over 10s", "p99 < 800ms over 10s"]}"#)
            .expect("json");
    assert_eq!(json.gates[1].limit(), 800.0);
    let toml: Doc =
        toml::from_str("gates = [\"eta{tool=\\\"x\\\"} >= 99% over 20s\"]\n").expect("toml");
    assert_eq!(toml.gates[0].scope.tool.as_deref(), Some("x"));
    let back = serde_json::to_string(&json).expect("serializes");
    assert_eq!(
        back,
        r#"{"gates":["error_rate < 1% over 10s","p99 < 800ms over 10s"]}"#
    );
    let bad = serde_json::from_str::<Doc>(r#"{"gates": ["eror_rate < 1% over 10s"]}"#)
        .expect_err("a bad gate fails");
    assert!(
        bad.to_string().contains("did you mean `error_rate`"),
        "{bad}"
    );
    let schema = schemars::schema_for!(Doc);
    let v = serde_json::to_value(&schema).expect("schema");
    assert_eq!(v.pointer("/$defs/Gate/type"), Some(&"string".into()), "{v}");
}

#[test]
fn the_issue_yaml_lists_gates_unquoted() {
    let text = r#"gates:                                           # SLO gates
  - error_rate < 1% over 10s
  - p99 < 800ms over 10s
  - eta{tool="get_incident"} >= 99% over 20s
"#;
    let node = crate::plan::source::parse(text, crate::plan::source::Format::Yaml).expect("yaml");
    let doc: Doc = serde_json::from_value(node.to_json()).expect("gates");
    let texts: Vec<String> = doc.gates.iter().map(Gate::to_string).collect();
    assert_eq!(
        texts,
        [
            "error_rate < 1% over 10s",
            "p99 < 800ms over 10s",
            "eta{tool=\"get_incident\"} >= 99% over 20s"
        ]
    );
}

/// A limit or span in seconds is its exact milliseconds: `8.024s` is 8024 ms, not
/// 8023.999… (8.024 × 1000 in floating point).
#[test]
fn seconds_are_exact_milliseconds() {
    let g = parse("p99 < 8.024s over 1.001s for 0.3s");
    assert_eq!(g.limit(), 8024.0);
    assert_eq!(g.sustain_ms(), 300.0);
    assert_eq!(parse("p50 < 0.1m over 10s").limit(), 6000.0);
}

#[test]
fn target_health_gates_read_the_largest_reading_in_their_window() {
    let g = parse("target_rss < 512MB for 5s");
    assert_eq!(g.sli, Sli::TargetRss);
    assert_eq!(g.limit(), 512e6);
    assert_eq!(g.min_samples(), 1);
    assert_eq!(g.sustain_ms(), 5000.0);
    assert_eq!(
        parse("target_rss <= 1GiB over 2s").limit(),
        1024.0 * 1024.0 * 1024.0
    );
    let cpu = parse("target_cpu < 80%");
    assert_eq!(cpu.limit(), 0.8);
    assert_eq!(cpu.to_string(), "target_cpu < 80% over 1s");
    let e = Gate::parse("target_rss < 512 over 5s").expect_err("no unit");
    assert!(e.to_string().contains("512MB"), "{e}");
    assert!(Gate::parse("target_cpu{tool=\"x\"} < 80%").is_err());
    let mut w = GateWatch::new(vec![g, cpu]);
    // Calls do not feed them.
    w.observe_call(&CallObservation {
        at_ms: 0.0,
        method: "tools/call".into(),
        tool: None,
        outcome: crate::event::Outcome::Ok,
        latency_ms: 1e12,
        timed_out: false,
        correct: true,
        attempts: 1,
    });
    assert_eq!(w.evaluate(100.0)[0].status, GateStatus::Insufficient);
    w.observe_reading(200.0, Sli::TargetRss, 100e6);
    w.observe_reading(300.0, Sli::TargetCpu, 0.95);
    let s = w.evaluate(400.0);
    assert_eq!(s[0].status, GateStatus::Holding);
    assert_eq!(s[0].value, Some(100e6));
    assert_eq!(s[1].status, GateStatus::Breached, "no `for`: at once");
    w.observe_reading(500.0, Sli::TargetRss, 600e6);
    assert_eq!(w.evaluate(600.0)[0].status, GateStatus::Failing);
    w.observe_reading(5700.0, Sli::TargetRss, 700e6);
    assert_eq!(w.evaluate(5800.0)[0].status, GateStatus::Breached);
}
