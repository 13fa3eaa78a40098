//! The `sse_parser` fuzz target: libFuzzer drives [`check::run`] (checks/sse_parser.rs).
#![no_main]

#[path = "../checks/sse_parser.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::run(data));
