//! Gate expressions (`p99_ms < 800 over 30s`, …): any text parses or gives an error.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(gate) = brownout_core::slo::Gate::parse(text) {
        let _ = gate.limit();
        let _ = gate.show(Some(1.0));
        let _ = gate.sustain_ms();
    }
    let _ = brownout_experiment::experiment::gates::parse(text);
});
