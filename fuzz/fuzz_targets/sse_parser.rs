//! The SSE parser: any byte stream, fed in chunks of any size, never panics, and events
//! stay under the size limit.
#![no_main]

use brownout_relay::relay::sse::Parser;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
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
});
