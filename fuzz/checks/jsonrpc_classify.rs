//! JSON-RPC classification: any bytes give a message or `Invalid`, never a panic; the
//! one-pass reader says of every input what the serde_json reader says
//! (`jsonrpc::reference::agree`); and the top-level id finder can read any input.
//!
//! Shared by the fuzz target `fuzz_targets/jsonrpc_classify.rs` and the corpus replay test
//! `crates/brownout/tests/fuzz_corpus.rs` (stable toolchain, every `scripts/test`).

use brownout_core::jsonrpc::{classify, reference, top_level_id};

/// One input: returns normally, or panics on a defect.
pub fn run(data: &[u8]) {
    let _ = format!("{:?}", classify(data));
    if let Err(e) = reference::agree(data) {
        panic!("the two JSON-RPC readers disagree on {data:?}:\n{e}");
    }
    let _ = top_level_id(data);
}
