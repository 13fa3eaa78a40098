//! The `experiment_file` fuzz target: libFuzzer drives [`check::run`] (checks/experiment_file.rs).
#![no_main]

#[path = "../checks/experiment_file.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::run(data));
