//! JSON-RPC classification: any bytes give a message or `Invalid`, never a panic, and the
//! top-level id finder agrees it can read any input.
//!
//! Shared by the fuzz target `fuzz_targets/jsonrpc_classify.rs` and the corpus replay test
//! `crates/brownout/tests/fuzz_corpus.rs` (stable toolchain, every `scripts/test`).

use brownout_core::jsonrpc::{classify, top_level_id};

/// One input: returns normally, or panics on a defect.
pub fn run(data: &[u8]) {
    let _ = format!("{:?}", classify(data));
    let _ = top_level_id(data);
}
