//! Gate expressions (`p99_ms < 800 over 30s`, …): any text parses or gives an error.
//!
//! Shared by the fuzz target `fuzz_targets/gate_expr.rs` and the corpus replay test
//! `crates/brownout/tests/fuzz_corpus.rs` (stable toolchain, every `scripts/test`).

/// One input: returns normally, or panics on a defect.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(gate) = brownout_core::slo::Gate::parse(text) {
        let _ = gate.limit();
        let _ = gate.show(Some(1.0));
        let _ = gate.sustain_ms();
    }
    let _ = brownout_experiment::experiment::gates::parse(text);
}
