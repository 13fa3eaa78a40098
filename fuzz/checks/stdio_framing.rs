//! Stdio framing: any byte stream, read as lines under a small size limit, never panics;
//! every frame is within the limit or reported oversized with at most its prefix.
//!
//! Shared by the fuzz target `fuzz_targets/stdio_framing.rs` and the corpus replay test
//! `crates/brownout/tests/fuzz_corpus.rs` (stable toolchain, every `scripts/test`).

use brownout_relay::relay::framing::{Frame, LineReader};

/// One input: returns normally, or panics on a defect.
pub fn run(data: &[u8]) {
    let Some((&limit, input)) = data.split_first() else {
        return;
    };
    // Small limits reach the oversized path; the first byte picks one.
    let max = usize::from(limit) + 1;
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime");
    rt.block_on(async {
        // A small buffer splits lines across reads, as a pipe does.
        let buf = tokio::io::BufReader::with_capacity(7, input);
        let mut reader = LineReader::new(buf, max);
        while let Ok(Some(frame)) = reader.next().await {
            match frame {
                Frame::Line(l) => assert!(l.len() <= max && !l.contains(&b'\n')),
                Frame::Oversized { size, prefix, .. } => {
                    assert!(size > max);
                    assert!(prefix.len() <= size);
                }
            }
        }
    });
}
