//! brownout's record layer: the journal store and what is drawn from journals.
//!
//! - [`store`]: the journal store (SQLite, PostgreSQL);
//! - [`report`]: reports from a journal (Markdown, HTML, JUnit, JSON);
//! - [`keep`]: what a run does with its journal (`--store`, `--no-store`, `--report`).
//!
//! May use: `brownout-core` (docs/architecture.md).

pub mod keep;
pub mod report;
pub mod store;
