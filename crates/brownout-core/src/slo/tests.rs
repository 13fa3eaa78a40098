//! Grammar unit tests and window property tests.

use super::*;

#[test]
fn the_brief_examples_parse_and_print_back() {
    for text in [
        "error_rate < 1% over 10s",
        "p99 < 800ms over 10s",
        "eta{tool=\"get_incident\"} >= 99% over 20s",
        "p95 <= 1.5s over 500 calls min 50 calls for 3s",
    ] {
        let g = Gate::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(g.to_string(), text);
    }
}
