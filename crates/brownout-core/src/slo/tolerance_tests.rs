//! Tolerance grammar: every form, units shared with the gates, errors with columns, and
//! properties (a range agrees with its two comparisons; `!=` is the negation of `==`).

use super::*;
use proptest::prelude::*;
use serde_json::json;

fn t(s: &str) -> Tolerance {
    Tolerance::parse(s).unwrap_or_else(|e| panic!("`{s}`: {e}"))
}

#[test]
fn comparisons_take_the_gate_units() {
    assert!(t(">= 99%").check_number(0.995));
    assert!(!t(">= 99%").check_number(0.98));
    assert!(t("< 500ms").check_number(499.0));
    assert!(!t("< 500ms").check_number(500.0));
    assert!(t("<= 1.5s").check_number(1500.0));
    assert!(!t("<= 1.5s").check_number(1501.0));
    assert!(t("< 1m").check_number(59_999.0));
    assert!(t("== 200").check_number(200.0));
    assert!(t("200").check_number(200.0));
    assert!(t("!= 0").check_number(3.0));
    assert!(!t("!= 0").check_number(0.0));
    assert!(t("> -1").check_number(0.0));
}

#[test]
fn ranges_are_inclusive() {
    let r = t("200..299");
    assert!(r.check_number(200.0) && r.check_number(299.0) && r.check_number(250.0));
    assert!(!r.check_number(199.0) && !r.check_number(300.0));
    assert!(t("100ms..1s").check_number(1000.0));
    assert!(t("200..=204").check_number(204.0));
}

#[test]
fn regexes_search_text_and_json() {
    assert!(t("~ /^deg/").check_text("degraded"));
    assert!(!t("~ /^deg/").check_text("ok"));
    assert!(t("~ /a\\/b/").check_text("x a/b"));
    assert!(t("$.reason ~ /database/").check_json(&json!({"reason": "database_unreachable"})));
}

#[test]
fn json_paths_select_and_compare() {
    let doc = json!({"status": "degraded", "checks": [{"ok": false}, {"n": 3}], "odd key": 1});
    assert!(t("$.status == \"degraded\"").check_json(&doc));
    assert!(!t("$.status == \"ok\"").check_json(&doc));
    assert!(t("$.status != \"ok\"").check_json(&doc));
    assert!(t("$.checks[0].ok == false").check_json(&doc));
    assert!(t("$.checks[1].n >= 3").check_json(&doc));
    assert!(t("$[\"odd key\"] == 1").check_json(&doc));
    assert!(t("$.status").check_json(&doc));
    assert!(!t("$.missing").check_json(&doc));
    assert!(!t("$.missing == 1").check_json(&doc));
    assert!(t("$.missing != 1").check_json(&doc));
    assert!(t("$.checks[1].n 1..5").check_json(&doc));
    assert!(t("== \"degraded\"").check_json(&json!("degraded")));
    assert!(t("$.status == \"degraded\"").check_text(r#"{"status":"degraded"}"#));
    assert!(!t("$.status == \"degraded\"").check_text("not json"));
}

#[test]
fn strings_compare_whole_text() {
    assert!(t("\"ok\"").check_text(" ok\n"));
    assert!(!t("\"ok\"").check_text("okay"));
    assert!(t("!= \"ok\"").check_text("okay"));
    assert!(t("< 5").check_text("4\n"));
}

#[test]
fn errors_say_where_and_what() {
    let e = |s: &str| {
        Tolerance::parse(s)
            .err()
            .unwrap_or_else(|| panic!("`{s}` parsed"))
    };
    assert_eq!(e("= 3").column, 1);
    assert!(e("= 3").message.contains("=="));
    assert!(e("< 5parsecs").message.contains("not a unit"));
    assert_eq!(e("< 5parsecs").column, 4);
    assert!(e("").message.contains("empty"));
    assert!(e("< \"a\"").message.contains("compares numbers"));
    assert!(e("299..200").message.contains("below"));
    assert!(e("1s..5").message.contains("same unit"));
    assert!(e("~ /(/").message.contains("not a regex"));
    assert!(e("~ ok").message.contains("slashes"));
    assert!(e("$. == 1").message.contains("key"));
    assert!(e("< 5 6").message.contains("unexpected"));
    assert!(e("\"open").message.contains("closing"));
}

#[test]
fn serde_round_trips_the_text() {
    let v: Tolerance = serde_json::from_value(json!("< 500ms")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(serde_json::to_value(&v).ok(), Some(json!("< 500ms")));
    let bad = serde_json::from_value::<Tolerance>(json!("<< 5"));
    assert!(bad.is_err_and(|e| e.to_string().contains("<< 5")));
}

proptest! {
    #[test]
    fn a_range_is_its_two_comparisons(lo in -1000i64..1000, len in 0i64..1000, x in -3000i64..3000) {
        let hi = lo + len;
        let r = t(&format!("{lo}..{hi}"));
        let both = t(&format!(">= {lo}")).check_number(x as f64) && t(&format!("<= {hi}")).check_number(x as f64);
        prop_assert_eq!(r.check_number(x as f64), both);
    }

    #[test]
    fn ne_negates_eq(a in -50i64..50, b in -50i64..50) {
        let eq = t(&format!("== {a}")).check_number(b as f64);
        let ne = t(&format!("!= {a}")).check_number(b as f64);
        prop_assert_eq!(eq, !ne);
        prop_assert_eq!(eq, a == b);
    }

    #[test]
    fn units_scale(ms in 1u32..100_000) {
        let s = f64::from(ms) / 1000.0;
        let a = t(&format!("<= {s}s")).check_number(f64::from(ms));
        let b = t(&format!("< {ms}ms")).check_number(f64::from(ms));
        prop_assert!(a);
        prop_assert!(!b);
    }

    #[test]
    fn parsing_never_panics(s in "\\PC{0,24}") {
        let _ = Tolerance::parse(&s);
    }
}
