//! What can go wrong writing a report: its own module, so the renderers ([`super::html`],
//! [`super::junit`], [`super::charts`]) need nothing of the module that picks among them.

/// What can go wrong writing a report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("drawing a chart: {0}")]
    Chart(String),
    #[error("writing XML: {0}")]
    Xml(String),
    #[error("writing JSON: {0}")]
    Json(#[from] serde_json::Error),
}
