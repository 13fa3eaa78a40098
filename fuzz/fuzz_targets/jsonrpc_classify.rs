//! JSON-RPC classification: any bytes give a message or `Invalid`, never a panic, and the
//! top-level id finder agrees it can read any input.
#![no_main]

use brownout_core::jsonrpc::{classify, top_level_id};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = format!("{:?}", classify(data));
    let _ = top_level_id(data);
});
