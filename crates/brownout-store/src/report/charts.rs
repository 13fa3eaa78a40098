//! The HTML report's charts, drawn as SVG by `plotters`: the error rate second by second
//! with the stages as bands, each error-rate gate's limit as a line, the breach and the
//! removal of the faults marked and the recovery (MTTR) as a band; and the latency
//! percentiles with each latency gate's limit.

use super::error::ReportError;
use super::view::{arr, f, obj, s};
use plotters::prelude::*;
use serde_json::Value;

const W: u32 = 900;
const H: u32 = 320;
const BANDS: [RGBColor; 4] = [
    RGBColor(230, 240, 255),
    RGBColor(255, 240, 225),
    RGBColor(235, 250, 235),
    RGBColor(245, 235, 250),
];
const GREY: RGBColor = RGBColor(110, 110, 110);
const ERR: RGBColor = RGBColor(200, 40, 40);
const P50: RGBColor = RGBColor(40, 110, 200);
const P95: RGBColor = RGBColor(220, 130, 20);
const P99: RGBColor = RGBColor(170, 40, 160);
const GATE: RGBColor = RGBColor(200, 0, 0);
const FIXED: RGBColor = RGBColor(20, 140, 60);

fn e<E: std::fmt::Display>(x: E) -> ReportError {
    ReportError::Chart(x.to_string())
}

/// The run's spans: (label, start s, end s) for the baseline and each stage.
fn spans(j: &Value) -> Vec<(String, f64, f64)> {
    let mut out = Vec::new();
    if let Some(b) = obj(j, "baseline") {
        if let (Some(a), Some(z)) = (f(b, "start_ms"), f(b, "end_ms")) {
            out.push(("baseline".to_string(), a / 1000.0, z / 1000.0));
        }
    }
    for x in arr(j, "stages") {
        if let (Some(a), Some(z)) = (f(x, "start_ms"), f(x, "end_ms")) {
            let share = f(x, "share").unwrap_or(0.0) * 100.0;
            out.push((
                format!("{} {share:.0}%", s(x, "stage")),
                a / 1000.0,
                z / 1000.0,
            ));
        }
    }
    out
}

/// A point per span of the series: (t s, value) for an SLI key of `slis`, drawn at the
/// middle of the span it sums up (a journal without `width_ms` has 1-second spans).
fn points(j: &Value, key: &str, scale: f64) -> Vec<(f64, f64)> {
    arr(j, "series")
        .iter()
        .filter_map(|x| {
            let width = f(x, "width_ms").unwrap_or(1000.0);
            let t = (f(x, "t_ms")? + width / 2.0) / 1000.0;
            let v = x.get("slis").and_then(|l| f(l, key))?;
            Some((t, v * scale))
        })
        .collect()
}

/// Gates whose text starts with one of `heads`: (text, limit in the chart's unit).
fn gate_limits(j: &Value, latency: bool) -> Vec<(String, f64)> {
    arr(j, "gates")
        .iter()
        .filter_map(|g| {
            let text = s(g, "gate");
            let is_latency =
                text.starts_with('p') && text[1..].starts_with(|c: char| c.is_ascii_digit());
            let limit = f(g, "limit")?;
            if latency && is_latency {
                Some((text.to_string(), limit))
            } else if !latency && text.starts_with("error_rate") {
                Some((text.to_string(), limit * 100.0))
            } else {
                None
            }
        })
        .collect()
}

/// Markers in seconds: (breach, faults removed, recovered).
fn marks(j: &Value) -> (Option<f64>, Option<f64>, Option<f64>) {
    let breach = obj(j, "breach")
        .and_then(|b| f(b, "at_ms"))
        .map(|x| x / 1000.0);
    let rec = obj(j, "recovery");
    let left = rec
        .and_then(|r| f(r, "faults_left_ms"))
        .or_else(|| obj(j, "breach").and_then(|b| f(b, "last_fault_left_ms")))
        .map(|x| x / 1000.0);
    let back = match (left, rec.and_then(|r| f(r, "mttr_ms"))) {
        (Some(l), Some(m)) => Some(l + m / 1000.0),
        _ => None,
    };
    (breach, left, back)
}

/// The probes' detection and recovery spans, in seconds: (label, from, to, colour).
fn probe_spans(j: &Value) -> Vec<(&'static str, f64, f64, RGBColor)> {
    let Some(d) = obj(j, "detection") else {
        return Vec::new();
    };
    let span = |a: &str, z: &str| match (f(d, a), f(d, z)) {
        (Some(a), Some(z)) if z >= a => Some((a / 1000.0, z / 1000.0)),
        _ => None,
    };
    let mut out = Vec::new();
    if let Some((a, z)) = span("faults_applied_ms", "first_failure_ms") {
        out.push(("probes: time to detect (MTTD)", a, z, GATE));
    }
    if let Some((a, z)) = span("recovery_from_ms", "first_pass_ms") {
        out.push(("probes: time to recover", a, z, FIXED));
    }
    out
}

struct Line<'a> {
    label: &'a str,
    color: RGBColor,
    points: Vec<(f64, f64)>,
}

/// One chart as an SVG document.
fn chart(
    j: &Value,
    caption: &str,
    y_label: &str,
    lines: Vec<Line>,
    limits: Vec<(String, f64)>,
) -> Result<String, ReportError> {
    let mut svg = String::new();
    let spans = spans(j);
    let (breach, left, back) = marks(j);
    let x_end = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0 + 1.0))
        .chain(spans.iter().map(|s| s.2))
        .chain(back)
        .fold(1.0_f64, f64::max);
    let y_max = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .chain(limits.iter().map(|l| l.1))
        .fold(0.0_f64, f64::max);
    let y_end = if y_max <= 0.0 { 1.0 } else { y_max * 1.15 };
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(e)?;
        let mut c = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..x_end, 0.0..y_end)
            .map_err(e)?;
        // Stages as bands, drawn first, under the grid and the lines.
        for (k, (label, a, z)) in spans.iter().enumerate() {
            let color = BANDS[k % BANDS.len()];
            c.draw_series(std::iter::once(Rectangle::new(
                [(*a, 0.0), (*z, y_end)],
                color.filled(),
            )))
            .map_err(e)?;
            c.draw_series(std::iter::once(Text::new(
                label.clone(),
                (*a, y_end * 0.97),
                ("sans-serif", 12).into_font().color(&GREY),
            )))
            .map_err(e)?;
        }
        if let (Some(l), Some(b)) = (left, back) {
            c.draw_series(std::iter::once(Rectangle::new(
                [(l, 0.0), (b, y_end * 0.06)],
                FIXED.mix(0.35).filled(),
            )))
            .map_err(e)?
            .label("recovery (MTTR)")
            .legend(|(x, y)| {
                Rectangle::new([(x, y - 4), (x + 16, y + 4)], FIXED.mix(0.35).filled())
            });
        }
        // The probes' time to detect and to recover (docs/journal.md, `detection`).
        for (label, a, z, color) in probe_spans(j) {
            c.draw_series(std::iter::once(Rectangle::new(
                [(a, y_end * 0.07), (z, y_end * 0.12)],
                color.mix(0.45).filled(),
            )))
            .map_err(e)?
            .label(label)
            .legend(move |(x, y)| {
                Rectangle::new([(x, y - 4), (x + 16, y + 4)], color.mix(0.45).filled())
            });
        }
        c.configure_mesh()
            .x_desc("seconds since the start")
            .y_desc(y_label)
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(e)?;
        for l in lines.into_iter().filter(|l| !l.points.is_empty()) {
            let color = l.color;
            c.draw_series(LineSeries::new(l.points, color.stroke_width(2)))
                .map_err(e)?
                .label(l.label)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                });
        }
        for (text, limit) in limits {
            c.draw_series(DashedLineSeries::new(
                vec![(0.0, limit), (x_end, limit)],
                6,
                4,
                GATE.stroke_width(1),
            ))
            .map_err(e)?
            .label(format!("gate: {text}"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], GATE.stroke_width(1)));
        }
        for (t, label, color) in [(breach, "breach", GATE), (left, "faults removed", FIXED)] {
            if let Some(t) = t {
                c.draw_series(LineSeries::new(
                    vec![(t, 0.0), (t, y_end)],
                    color.stroke_width(2),
                ))
                .map_err(e)?
                .label(label)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x + 8, y - 6), (x + 8, y + 6)], color.stroke_width(2))
                });
            }
        }
        c.configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(GREY)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(e)?;
        root.present().map_err(e)?;
    }
    Ok(svg)
}

/// The error-rate chart.
pub fn errors(j: &Value) -> Result<String, ReportError> {
    chart(
        j,
        "Error rate, second by second",
        "errors (%)",
        vec![Line {
            label: "error rate",
            color: ERR,
            points: points(j, "error_rate", 100.0),
        }],
        gate_limits(j, false),
    )
}

/// The latency chart.
pub fn latency(j: &Value) -> Result<String, ReportError> {
    chart(
        j,
        "Latency percentiles, second by second",
        "latency (ms)",
        vec![
            Line {
                label: "p50",
                color: P50,
                points: points(j, "p50_ms", 1.0),
            },
            Line {
                label: "p95",
                color: P95,
                points: points(j, "p95_ms", 1.0),
            },
            Line {
                label: "p99",
                color: P99,
                points: points(j, "p99_ms", 1.0),
            },
        ],
        gate_limits(j, true),
    )
}
