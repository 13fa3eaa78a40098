//! Plan files: any text, as YAML, JSON or TOML, loads or gives errors; never panics.
//!
//! Shared by the fuzz target `fuzz_targets/plan_file.rs` and the corpus replay test
//! `crates/brownout/tests/fuzz_corpus.rs` (stable toolchain, every `scripts/test`).

use brownout_core::plan::source::Format;
use brownout_core::Plan;

/// One input: returns normally, or panics on a defect.
pub fn run(data: &[u8]) {
    let Some((&pick, input)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(input) else {
        return;
    };
    let (file, format) = match pick % 3 {
        0 => ("fuzz.yaml", Format::Yaml),
        1 => ("fuzz.json", Format::Json),
        _ => ("fuzz.toml", Format::Toml),
    };
    if let Err(errors) = Plan::from_str_format(text, file, format) {
        let _ = errors.to_string();
    }
}
