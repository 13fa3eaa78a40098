//! Experiment files: any text, as YAML, JSON or TOML, loads or gives errors; never panics.
#![no_main]

use brownout_experiment::experiment::load::load_text;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, input)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(input) else {
        return;
    };
    let file = match pick % 3 {
        0 => "fuzz.yaml",
        1 => "fuzz.json",
        _ => "fuzz.toml",
    };
    // Files an experiment names (a workload, a plan) are looked for in a folder that
    // does not exist: the fuzzer exercises parsing and checking, not the disk.
    if let Err(errors) = load_text(text, file, Path::new("/nonexistent/brownout-fuzz")) {
        let _ = errors.to_string();
    }
});
