//! Reports from a journal (read as JSON): [`markdown`] for a pull request or a post-mortem,
//! [`html`] (one self-contained file, charts drawn by [`charts`]), [`junit`] for CI, and the
//! journal itself as JSON. [`view`] reads the journal's fields the reports share;
//! [`trend_html`] is the HTML page of an experiment's trend across runs.

pub mod charts;
mod error;
pub mod estimate;
pub mod fleet;
pub mod html;
pub mod junit;
pub mod markdown;
mod md_text;
pub mod silent;
pub mod trend_html;
pub mod view;

pub use error::ReportError;
use serde_json::Value;

/// A report format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Markdown: verdict first, for a pull request or a post-mortem.
    Md,
    /// One self-contained HTML file with SVG charts.
    Html,
    /// The journal itself.
    Json,
    /// JUnit XML: a test case per gate, steady-state probe and stage.
    Junit,
}

/// A journal's report in a format.
pub fn render(journal: &Value, format: Format) -> Result<String, ReportError> {
    Ok(match format {
        Format::Md => markdown::render(journal),
        Format::Html => html::render(journal)?,
        Format::Json => serde_json::to_string_pretty(journal)? + "\n",
        Format::Junit => junit::render(journal)?,
    })
}
