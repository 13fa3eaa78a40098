//! Experiment files: any text, as YAML, JSON or TOML, loads or gives errors; never panics.
//!
//! Shared by the fuzz target `fuzz_targets/experiment_file.rs` and the corpus replay test
//! `crates/brownout/tests/fuzz_corpus.rs` (stable toolchain, every `scripts/test`).

use brownout_experiment::experiment::load::load_text;
use std::path::Path;

/// One input: returns normally, or panics on a defect.
pub fn run(data: &[u8]) {
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
}
