//! Every fuzz target's committed corpus (fuzz/corpus/<target>/), replayed through the same
//! check the fuzzer runs (fuzz/checks/<target>.rs), on the stable toolchain with debug
//! assertions: what the long fuzzer runs found stays covered in every `scripts/test`, with no
//! nightly toolchain and no fuzz build (fuzz/README.md says why the fuzzer itself is opt-in).
//! A crash the fuzzer finds gets its own regression test beside the code it broke.

use std::path::PathBuf;

#[path = "../../../fuzz/checks/experiment_file.rs"]
mod experiment_file;
#[path = "../../../fuzz/checks/gate_expr.rs"]
mod gate_expr;
#[path = "../../../fuzz/checks/jsonrpc_classify.rs"]
mod jsonrpc_classify;
#[path = "../../../fuzz/checks/plan_file.rs"]
mod plan_file;
#[path = "../../../fuzz/checks/sse_parser.rs"]
mod sse_parser;
#[path = "../../../fuzz/checks/stdio_framing.rs"]
mod stdio_framing;

/// Run `check` over every input of `target`'s corpus; the number of inputs.
fn replay(target: &str, check: fn(&[u8])) -> usize {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a corpus entry").path())
        .collect();
    inputs.sort();
    for input in &inputs {
        let data = std::fs::read(input).unwrap_or_else(|e| panic!("{}: {e}", input.display()));
        let outcome = std::panic::catch_unwind(|| check(&data));
        assert!(
            outcome.is_ok(),
            "{target}: the input {} fails its check",
            input.display()
        );
    }
    assert!(
        !inputs.is_empty(),
        "{target}: an empty corpus at {}",
        dir.display()
    );
    inputs.len()
}

#[test]
fn stdio_framing_corpus() {
    replay("stdio_framing", stdio_framing::run);
}

#[test]
fn sse_parser_corpus() {
    replay("sse_parser", sse_parser::run);
}

#[test]
fn plan_file_corpus() {
    replay("plan_file", plan_file::run);
}

#[test]
fn experiment_file_corpus() {
    replay("experiment_file", experiment_file::run);
}

#[test]
fn gate_expr_corpus() {
    replay("gate_expr", gate_expr::run);
}

#[test]
fn jsonrpc_classify_corpus() {
    replay("jsonrpc_classify", jsonrpc_classify::run);
}

/// The replay itself can fail: a check that panics on an input is reported, with the input.
#[test]
fn a_failing_check_is_reported() {
    let caught = std::panic::catch_unwind(|| replay("gate_expr", |_| panic!("a defect")));
    assert!(caught.is_err());
}
