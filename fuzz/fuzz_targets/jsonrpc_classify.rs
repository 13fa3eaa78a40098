//! The `jsonrpc_classify` fuzz target: libFuzzer drives [`check::run`] (checks/jsonrpc_classify.rs).
#![no_main]

#[path = "../checks/jsonrpc_classify.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::run(data));
