//! The `stdio_framing` fuzz target: libFuzzer drives [`check::run`] (checks/stdio_framing.rs).
#![no_main]

#[path = "../checks/stdio_framing.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::run(data));
