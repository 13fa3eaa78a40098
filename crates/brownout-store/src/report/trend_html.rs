//! The HTML trend report (`journal trend --html FILE`): one self-contained page with the
//! pass rate, the drifts, a chart of MTTR and the worst stage p99 run by run (SVG, drawn by
//! `plotters`) and the runs as a table.

use super::error::ReportError;
use super::html::{esc, STYLE};
use crate::store::trend::Trend;
use plotters::prelude::*;

fn e<E: std::fmt::Display>(x: E) -> ReportError {
    ReportError::Chart(x.to_string())
}

fn chart(t: &Trend) -> Result<String, ReportError> {
    let series = [
        ("MTTR (ms)", RGBColor(20, 140, 60), points(t, |r| r.mttr_ms)),
        (
            "worst stage p99 (ms)",
            RGBColor(170, 40, 160),
            points(t, |r| r.stage_p99_ms),
        ),
    ];
    let y_max = series
        .iter()
        .flat_map(|s| s.2.iter().map(|p| p.1))
        .fold(1.0_f64, f64::max)
        * 1.15;
    let x_max = (t.runs.len().max(2) - 1) as f64;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 320)).into_drawing_area();
        root.fill(&WHITE).map_err(e)?;
        let mut c = ChartBuilder::on(&root)
            .caption("Run by run (oldest left)", ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)
            .map_err(e)?;
        c.configure_mesh()
            .x_desc("run")
            .y_desc("milliseconds")
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(e)?;
        for (label, color, pts) in series {
            if pts.is_empty() {
                continue;
            }
            c.draw_series(LineSeries::new(pts, color.stroke_width(2)))
                .map_err(e)?
                .label(label)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                });
        }
        c.configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(110, 110, 110))
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(e)?;
        root.present().map_err(e)?;
    }
    Ok(svg)
}

fn points(t: &Trend, get: fn(&crate::store::trend::TrendRun) -> Option<f64>) -> Vec<(f64, f64)> {
    t.runs
        .iter()
        .enumerate()
        .filter_map(|(k, r)| get(r).map(|v| (k as f64, v)))
        .collect()
}

/// The page.
pub fn render(t: &Trend) -> Result<String, ReportError> {
    let ok = t.drifts.is_empty();
    let mut o = String::new();
    o.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    o.push_str(&format!(
        "<title>Trend — {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        esc(&t.experiment)
    ));
    o.push_str(&format!(
        "<div class=\"verdict{}\" id=\"verdict\">{}<small>{} · {} runs · pass rate {}</small></div>\n",
        if ok { " pass" } else { "" },
        if ok { "No drift" } else { "Drift found" },
        esc(&t.experiment),
        t.runs.len(),
        t.pass_rate.map_or_else(|| "—".into(), |p| format!("{:.0} %", p * 100.0)),
    ));
    if !ok {
        o.push_str("<ul id=\"drifts\">\n");
        for d in &t.drifts {
            o.push_str(&format!("<li>{}</li>\n", esc(&d.message)));
        }
        o.push_str("</ul>\n");
    }
    o.push_str("<figure id=\"chart-trend\">\n");
    o.push_str(&chart(t)?);
    o.push_str("\n</figure>\n<table>\n<tr><th>run</th><th>started</th><th>status</th><th>MTTR</th><th>worst stage p99</th><th>worst stage errors</th></tr>\n");
    let ms = |x: Option<f64>| x.map_or_else(|| "—".into(), |v| format!("{v:.0} ms"));
    for r in &t.runs {
        o.push_str(&format!(
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            esc(&r.run_id),
            super::view::utc(r.started_unix_ms),
            esc(&r.status),
            ms(r.mttr_ms),
            ms(r.stage_p99_ms),
            r.stage_error_rate.map_or_else(|| "—".into(), |x| format!("{:.2} %", x * 100.0)),
        ));
    }
    o.push_str("</table>\n</body>\n</html>\n");
    Ok(o)
}
