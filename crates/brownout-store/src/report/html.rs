//! The HTML report: one self-contained file (no script, no network), the verdict, then the
//! charts ([`super::charts`], inline SVG), then the Markdown report's tables rendered by
//! `pulldown-cmark` (raw HTML in the journal's strings is shown as text, never run).
//! Readable in print and in dark mode (`prefers-color-scheme`).

use super::error::ReportError;
use super::{charts, markdown, view};
use pulldown_cmark::{html, Event, Options, Parser};
use serde_json::Value;

pub(crate) const STYLE: &str = r#"
:root { color-scheme: light dark; --fg: #1b1b1b; --bg: #ffffff; --muted: #666; --line: #ddd; --pass: #17803d; --fail: #b3261e; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e8e8e8; --bg: #16181c; --muted: #aaa; --line: #3a3d44; --pass: #5fd38d; --fail: #ff8a80; }
  figure svg { filter: invert(0.88) hue-rotate(180deg); }
}
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); max-width: 960px; margin: 2rem auto; padding: 0 1rem; }
.verdict { border-left: 8px solid var(--fail); padding: .6rem 1rem; font-size: 1.4rem; font-weight: 700; }
.verdict.pass { border-color: var(--pass); }
.verdict small { display: block; font-size: .95rem; font-weight: 400; color: var(--muted); }
figure { margin: 1.5rem 0; }
figure svg { width: 100%; height: auto; }
figcaption { color: var(--muted); font-size: .9rem; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: .9rem; }
th, td { border: 1px solid var(--line); padding: .25rem .5rem; text-align: left; vertical-align: top; }
code { font-size: .9em; }
blockquote { margin: 0; padding-left: 1rem; border-left: 3px solid var(--line); color: var(--muted); }
@media print {
  :root { --fg: #000; --bg: #fff; }
  body { margin: 0; max-width: none; }
  figure svg { filter: none; }
  figure, table { break-inside: avoid; }
}
"#;

pub(crate) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// Markdown to HTML, with any raw HTML turned into text.
pub(crate) fn md_to_html(md: &str) -> String {
    let parser = Parser::new_ext(md, Options::ENABLE_TABLES).map(|ev| match ev {
        Event::Html(t) | Event::InlineHtml(t) => Event::Text(t),
        ev => ev,
    });
    let mut out = String::new();
    html::push_html(&mut out, parser);
    out
}

/// The page.
pub fn render(j: &Value) -> Result<String, ReportError> {
    let (verdict, pass) = view::verdict(j);
    let title = view::title(j);
    let (start, length) = view::when(j);
    let md = markdown::render(j);
    // The Markdown's first line is the verdict, shown here as the banner instead.
    let body = md.split_once('\n').map_or("", |x| x.1);
    let has_series = !view::arr(j, "series").is_empty();
    let mut o = String::new();
    o.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    o.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    o.push_str(&format!(
        "<title>{} — {}</title>\n",
        esc(&verdict),
        esc(&title)
    ));
    o.push_str(&format!("<style>{STYLE}</style>\n</head>\n<body>\n"));
    o.push_str(&format!(
        "<div class=\"verdict{}\" id=\"verdict\">{}<small>{} · {start} · {length}</small></div>\n",
        if pass { " pass" } else { "" },
        esc(&verdict),
        esc(&title),
    ));
    if has_series {
        o.push_str("<section id=\"charts\">\n");
        o.push_str("<figure id=\"chart-errors\">\n");
        o.push_str(&charts::errors(j)?);
        o.push_str("\n<figcaption>Shaded bands: the baseline and each stage (share of sessions faulted). Dashed: each error-rate gate's limit. Red line: the breach; green line: the last fault removed; green band: recovery (MTTR).</figcaption>\n</figure>\n");
        o.push_str("<figure id=\"chart-latency\">\n");
        o.push_str(&charts::latency(j)?);
        o.push_str("\n<figcaption>Latency percentiles of each second's calls; dashed: each latency gate's limit.</figcaption>\n</figure>\n");
        o.push_str("</section>\n");
    } else {
        o.push_str(
            "<p id=\"no-charts\">No per-second series in this journal: nothing to chart.</p>\n",
        );
    }
    o.push_str("<section id=\"details\">\n");
    o.push_str(&md_to_html(body));
    o.push_str("</section>\n</body>\n</html>\n");
    Ok(o)
}

/// A plain page around a Markdown document (the evidence report).
pub fn page(title: &str, md: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{}</body>\n</html>\n",
        esc(title),
        md_to_html(md)
    )
}
