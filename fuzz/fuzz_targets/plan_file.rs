//! The `plan_file` fuzz target: libFuzzer drives [`check::run`] (checks/plan_file.rs).
#![no_main]

#[path = "../checks/plan_file.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::run(data));
