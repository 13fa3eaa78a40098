//! The `gate_expr` fuzz target: libFuzzer drives [`check::run`] (checks/gate_expr.rs).
#![no_main]

#[path = "../checks/gate_expr.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::run(data));
