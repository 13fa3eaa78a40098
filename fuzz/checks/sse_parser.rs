//! The SSE parser: any byte stream, fed in chunks of any size, never panics, and events
//! stay under the size limit.
//!
//! Shared by the fuzz target `fuzz_targets/sse_parser.rs` and the corpus replay test
//! `crates/brownout/tests/fuzz_corpus.rs` (stable toolchain, every `scripts/test`).

use brownout_relay::relay::sse::Parser;

/// One input: returns normally, or panics on a defect.
pub fn run(data: &[u8]) {
    let Some((&split, input)) = data.split_first() else {
        return;
    };
    let step = usize::from(split % 32) + 1;
    let mut parser = Parser::new();
    let mut out = Vec::new();
    for chunk in input.chunks(step) {
        if parser.feed(chunk, 4096, &mut out).is_err() {
            return;
        }
    }
    for ev in &out {
        let _ = ev.encode();
        let _ = ev.carries_message();
    }
    parser.finish();
}
