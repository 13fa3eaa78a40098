//! JSON-RPC classification: any bytes give a message or `Invalid`, never a panic; the
//! one-pass reader says of every input what the serde_json reader says
//! (`jsonrpc::reference::agree`); an argument read along a pointer from the text is the one
//! `Value::pointer` finds in the parsed arguments; and the top-level id finder can read
//! any input.
//!
//! Shared by the fuzz target `fuzz_targets/jsonrpc_classify.rs` and the corpus replay test
//! `crates/brownout/tests/fuzz_corpus.rs` (stable toolchain, every `scripts/test`).

use brownout_core::jsonrpc::{classify, reference, top_level_id, Message};

/// Pointers a selector's argument condition may follow (unescaped tokens: `~0` is `~`,
/// `~1` is `/`).
const POINTERS: &[&str] = &["", "/a", "/0", "/a/0", "/a/b", "/message", "/~0/~1", "/"];

/// One input: returns normally, or panics on a defect.
pub fn run(data: &[u8]) {
    let _ = format!("{:?}", classify(data));
    if let Err(e) = reference::agree(data) {
        panic!("the two JSON-RPC readers disagree on {data:?}:\n{e}");
    }
    if let Message::Single(v) = classify(data) {
        // The text is read only when `params` is an object.
        if v.params.is_some_and(|p| p.starts_with('{')) {
            let whole = v.tool_arguments();
            for pointer in POINTERS {
                let tokens: Vec<String> = pointer
                    .split('/')
                    .skip(1)
                    .map(|t| t.replace("~1", "/").replace("~0", "~"))
                    .collect();
                let parsed = whole.as_ref().and_then(|w| w.pointer(pointer));
                let read = v.argument(&tokens);
                if read.as_ref() != parsed {
                    panic!("argument {pointer:?} of {data:?}: read {read:?}, parsed {parsed:?}");
                }
            }
        }
    }
    let _ = top_level_id(data);
}
