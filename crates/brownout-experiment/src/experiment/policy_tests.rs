use super::*;
use crate::experiment::load::load_text;

const WORKLOAD: &str = "steps:\n  - calls: [{tool: echo}]\nservers:\n  - name: s\n    tools:\n      echo: {latency: {added_ms: 1}}\n";

fn experiment(extra: &str, labels: &str, method: &str, gates: &str) -> Loaded {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("w.yaml"), WORKLOAD).expect("write");
    let text = format!(
        "title: t\nlabels: {labels}\ntarget: {{command: [brownout, fixture]}}\nload: {{workload: w.yaml}}\nmethod: {method}\nfaults:\n  - {{kind: error, tools: [\"echo\"], probability: 0.5}}\n{extra}gates: {gates}\n"
    );
    load_text(&text, "x.yaml", dir.path()).unwrap_or_else(|e| panic!("{e}"))
}

fn ok_method() -> &'static str {
    "[{stage: a, duration: 1s, sessions: 10%}, {stage: b, duration: 1s, sessions: 25%}]"
}

#[test]
fn a_staging_experiment_with_a_gate_passes() {
    let x = experiment(
        "",
        "{env: staging}",
        ok_method(),
        "[\"error_rate < 1% over 10s\"]",
    );
    assert_eq!(check(&x, &Policy::default()), Ok(()));
}

#[test]
fn production_labels_are_refused_by_name_and_value() {
    for labels in [
        "{env: prod}",
        "{environment: Production}",
        "{cluster: prod-eu}",
        "{namespace: prod-payments}",
    ] {
        let x = experiment("", labels, ok_method(), "[\"error_rate < 1% over 10s\"]");
        let r = check(&x, &Policy::default()).expect_err(labels);
        assert_eq!(r.rule, "production_labels", "{labels}");
    }
    let x = experiment(
        "",
        "{namespace: production-like}",
        ok_method(),
        "[\"error_rate < 1% over 10s\"]",
    );
    assert_eq!(check(&x, &Policy::default()), Ok(()));
}

#[test]
fn an_experiment_without_a_gate_is_refused() {
    let x = experiment("", "{}", ok_method(), "[]");
    assert_eq!(
        check(&x, &Policy::default()).map_err(|r| r.rule),
        Err("numeric_gate".into())
    );
}

#[test]
fn the_ladder_starts_at_the_bottom_and_skips_no_rung() {
    let p = Policy::default();
    assert!(check_ladder(&[0.1, 0.25, 0.25, 0.5, 1.0], &p).is_ok());
    let r = check_ladder(&[0.25], &p).expect_err("first rung");
    assert!(r.detail.contains("bottom rung"), "{r}");
    let r = check_ladder(&[0.1, 0.5], &p).expect_err("skip");
    assert!(r.detail.contains("from 10% to 50%"), "{r}");
    let r = check_ladder(&[0.1, 0.3], &p).expect_err("off the ladder");
    assert!(r.detail.contains("30%"), "{r}");
    assert!(check_ladder(&[0.1, 0.25, 0.1], &p).is_err());
}

#[test]
fn caps_on_duration_probability_latency_and_process_faults() {
    let x = experiment(
        "baseline: 31m\n",
        "{}",
        ok_method(),
        "[\"error_rate < 1% over 10s\"]",
    );
    assert_eq!(
        check(&x, &Policy::default()).map_err(|r| r.rule),
        Err("max_duration".into())
    );
    let x = experiment("", "{}", ok_method(), "[\"error_rate < 1% over 10s\"]");
    let strict = Policy {
        max_probability: 0.1,
        ..Policy::default()
    };
    let r = check(&x, &strict).expect_err("probability");
    assert_eq!(r.rule, "max_probability");
    assert!(r.detail.contains("0.5"), "{r}");
    let mut doc = x.plan_doc.clone();
    assert_eq!(
        check_delays(
            &plan(r#"{"kind": "latency", "added_ms": 20000}"#),
            &Policy::default()
        )
        .map_err(|r| r.rule),
        Err("max_added_latency".into())
    );
    doc["faults"][0] = serde_json::json!({"kind": "process", "action": "kill"});
    let killing = plan(r#"{"kind": "process", "action": "kill"}"#);
    assert_eq!(
        check_faults(&doc, &killing, &Policy::default()).map_err(|r| r.rule),
        Err("allow_process_faults".into())
    );
    let lax = Policy {
        allow_process_faults: true,
        ..Policy::default()
    };
    assert_eq!(check_faults(&doc, &killing, &lax), Ok(()));
}

#[test]
fn a_policy_file_is_checked_like_a_plan() {
    let p = Policy::from_str_named(
        "ladder: [\"5%\", \"100%\"]\nmax_probabilty: 0.2\n",
        "p.yaml",
    )
    .expect_err("typo");
    let text = p.to_string();
    assert!(text.starts_with("p.yaml:2:"), "{text}");
    assert!(text.contains("max_probabilty"), "{text}");
    let p = Policy::from_str_named("ladder: [\"5%\", \"100%\"]\n", "p.yaml").expect("valid");
    assert!(check_ladder(&[0.05, 1.0], &p).is_ok());
}

#[test]
fn load_tools_is_a_checked_key_of_exact_names() {
    let p = Policy::from_str_named("load_tools: [transfer_funds]\n", "p.yaml").expect("valid");
    assert_eq!(p.load_tools, vec!["transfer_funds".to_string()]);
    assert!(Policy::default().load_tools.is_empty());
    let e = Policy::from_str_named("load_tool: [transfer_funds]\n", "p.yaml")
        .expect_err("typo")
        .to_string();
    assert!(
        e.starts_with("p.yaml:1:") && e.contains("load_tools"),
        "{e}"
    );
    let e = Policy::from_str_named("load_tools: transfer_funds\n", "p.yaml").expect_err("a list");
    assert!(e.to_string().contains("load_tools"), "{e}");
}

/// A compiled plan of one fault (JSON).
fn plan(f: &str) -> brownout_core::Plan {
    let text = format!("{{\"faults\": [{f}]}}");
    brownout_core::Plan::from_str_format(&text, "p.json", brownout_core::plan::source::Format::Json)
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn an_unbounded_latency_distribution_needs_max_ms() {
    let p = Policy::default();
    let r = check_delays(
        &plan(r#"{"kind": "latency", "distribution": "pareto", "scale_ms": 5, "shape": 0.3}"#),
        &p,
    )
    .expect_err("a Pareto tail passes any cap");
    assert_eq!(r.rule, "max_added_latency");
    assert!(r.detail.contains("max_ms"), "{r}");
    assert!(check_delays(
        &plan(r#"{"kind": "latency", "distribution": "pareto", "scale_ms": 5, "max_ms": 2000}"#),
        &p
    )
    .is_ok());
    assert!(check_delays(&plan(r#"{"kind": "latency", "distribution": "normal", "mean_ms": 50, "stddev_ms": 1e8, "max_ms": 20000}"#), &p).is_err());
}

/// Issue 23 §1: the cap covered only `latency`; every kind that delays is judged now.
#[test]
fn every_kind_that_delays_is_capped() {
    let p = Policy::default();
    for (f, why) in [
        (
            r#"{"kind": "cold_start", "distribution": "pareto", "scale_ms": 5, "shape": 0.3}"#,
            "max_ms",
        ),
        (r#"{"kind": "cold_start", "added_ms": 60000}"#, "1 min"),
        (
            r#"{"kind": "timeout", "hold_ms": 3600000, "then": "deliver"}"#,
            "1 h",
        ),
        (r#"{"kind": "timeout", "hold_ms": 60000}"#, "1 min"),
        (
            r#"{"kind": "slow_stream", "gap_ms": 5000}"#,
            "between events",
        ),
        (r#"{"kind": "bandwidth", "bytes_per_sec": 10}"#, "per KiB"),
        (r#"{"kind": "reorder", "max_hold_ms": 60000}"#, "1 min"),
    ] {
        let r = check_delays(&plan(f), &p).expect_err(f);
        assert_eq!(r.rule, "max_added_latency", "{f}");
        assert!(r.detail.contains(why), "{f}: {r}");
    }
    for f in [
        r#"{"kind": "cold_start", "added_ms": 500}"#,
        r#"{"kind": "timeout", "hold_ms": 2000, "then": "deliver"}"#,
        r#"{"kind": "timeout"}"#,
        r#"{"kind": "slow_stream", "gap_ms": 100}"#,
        r#"{"kind": "bandwidth", "bytes_per_sec": 65536}"#,
        r#"{"kind": "error"}"#,
    ] {
        assert_eq!(check_delays(&plan(f), &p), Ok(()), "{f}");
    }
    // The answer the paced kinds are judged on is the operator's.
    let small = Policy {
        capped_answer: AnswerSize { events: 1, kib: 1 },
        ..Policy::default()
    };
    assert_eq!(
        check_delays(&plan(r#"{"kind": "slow_stream", "gap_ms": 5000}"#), &small),
        Ok(())
    );
}

/// Every kind declares its delay: a plan of each kind's example compiles and is judged.
#[test]
fn every_kind_declares_its_delay() {
    for k in brownout_core::faults::KINDS {
        let mut f: serde_json::Value = serde_json::from_str(k.example).expect("example");
        f["kind"] = k.name.into();
        let pl = plan(&f.to_string());
        let d = pl.faults[0].effect.max_added_delay();
        assert!(d.on_answer(10.0, 64.0).is_some(), "{}: {d:?}", k.name);
    }
}

/// Issue 23 §2: a rollback's timeout is capped (`100h` passed before).
#[test]
fn a_rollback_timeout_is_capped() {
    let x = experiment(
        "rollbacks: [{command: [\"true\"], timeout: 100h}]\n",
        "{}",
        ok_method(),
        "[\"error_rate < 1% over 10s\"]",
    );
    let r = check(&x, &Policy::default()).expect_err("100h");
    assert_eq!(r.rule, "max_rollback_timeout");
    assert!(r.detail.contains("100 h"), "{r}");
    let x = experiment(
        "rollbacks: [{command: [\"true\"], timeout: 5m}]\n",
        "{}",
        ok_method(),
        "[\"error_rate < 1% over 10s\"]",
    );
    assert_eq!(check(&x, &Policy::default()), Ok(()));
}
