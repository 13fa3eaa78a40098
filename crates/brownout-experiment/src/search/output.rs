//! What `brownout search` prints and writes: the boundary per dimension or ray with its
//! interval, the barely-violating values and their ρ, the file written back (`-o`), and a
//! chart of ρ over the searched space (`--chart`, SVG drawn by plotters).

use super::{Found, Problem, SearchArgs};
use plotters::prelude::*;
use serde_json::{json, Value};
use std::path::Path;

fn fmt_values(p: &Problem, v: &[f64]) -> String {
    p.marks
        .iter()
        .zip(v)
        .map(|(m, x)| {
            if m.percent {
                format!("{} {}%", m.key, brownout_core::human::sig(*x, 4))
            } else {
                format!("{} {}", m.key, brownout_core::human::sig(*x, 4))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The result as JSON (`--json`).
pub fn to_json(p: &Problem, a: &SearchArgs, f: &Found) -> Value {
    let mut doc = found_json(p, a, f);
    let (_, outcome, summary) = outcome(a, f);
    doc["outcome"] = outcome.into();
    doc["summary"] = summary.into();
    doc
}

/// How the search ended: its exit code (0 a boundary, 3 no crossing, 4 no result), the
/// outcome's name (`boundary`, `no_crossing`, `no_result`) and a sentence.
pub fn outcome(a: &SearchArgs, f: &Found) -> (i32, &'static str, String) {
    let found = f.segments.iter().any(|(_, c)| c.boundary.is_some())
        || f.multi
            .as_ref()
            .is_some_and(|m| m.outcome.nearest.is_some());
    let cut = f.multi.as_ref().map_or_else(
        || (0..f.segments.len()).all(|k| unfinished(a, f, k)),
        |m| m.outcome.stopped == "time",
    );
    match (found, cut) {
        (true, _) => (0, "boundary", "a boundary was found".into()),
        (false, true) => (
            super::EXIT_NO_RESULT,
            "no_result",
            "no result: the budget (time, evaluations) ran out before the seeds finished; nothing is known of a boundary (this is not \"no crossing\"): give the search more time or fewer seeds".into(),
        ),
        (false, false) => (
            3,
            "no_crossing",
            "no crossing: over the whole range every seed holds, or breaks at its start".into(),
        ),
    }
}

fn found_json(p: &Problem, a: &SearchArgs, f: &Found) -> Value {
    if let Some(m) = &f.multi {
        return super::output_wide::multi_json(p, f, m);
    }
    let segments: Vec<Value> = f
        .segments
        .iter()
        .map(|(seg, c)| {
            json!({
                "from": seg.from,
                "to": seg.to,
                "method": c.method,
                "monotone": c.monotone,
                "boundary": c.boundary.map(|t| seg.at(t)),
                "interval": c.interval.map(|(x, y)| [seg.at(x), seg.at(y)]),
                "spread": c.spread.map(|sd| seg.from.iter().zip(&seg.to).map(|(a, b)| (b - a).abs() * sd).collect::<Vec<_>>()),
                "barely": c.barely.map(|t| seg.at(t)),
                "always_hold": c.always_hold,
                "always_break": c.always_break,
                "evals": c.evals,
                "cut_short": c.cut_short,
                "seeds": c.seeds.iter().map(|s| json!({
                    "seed": s.seed,
                    "hold": s.hold.map(|t| seg.at(t)),
                    "break": s.brk.map(|t| seg.at(t)),
                    "rho_start": s.rho_start,
                    "rho_end": s.rho_end,
                    "monotone": s.monotone,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let seeds: Vec<u64> = match f.adaptive.first() {
        Some(o) => o.seeds.iter().map(|s| s.seed).collect(),
        None => (0..a.seeds.max(1)).map(|k| a.seed + k).collect(),
    };
    let mut doc = json!({
        "input": p.file,
        "dimensions": p.marks.iter().map(|m| json!({
            "key": m.key, "lo": m.lo, "hi": m.hi,
            "unit": if m.percent { "%" } else { "" },
            "line": m.line, "col": m.col,
        })).collect::<Vec<_>>(),
        "seeds": seeds,
        "segments": segments,
        "barely": f.barely.as_ref().map(|b| json!({
            "values": b.values,
            "breaching": b.breaching,
            "margin_at_breach": b.margin_at_breach,
            "rho": b.rho,
            "rho_seed": b.rho_seed,
            "checked": b.checked,
        })),
        "evals": f.segments.iter().map(|(_, c)| c.evals).sum::<u64>(),
        "elapsed_ms": f.elapsed.as_secs_f64() * 1000.0,
    });
    if !f.adaptive.is_empty() {
        doc["adaptive"] = super::output_wide::adaptive_json(f).into();
    }
    doc
}

/// The chart's error when its simulations did not finish within `--time`.
const BUDGET_SPENT: &str = "the --time budget ran out";

/// Print the result, write the file and the chart; the exit code.
pub fn report(p: &Problem, a: &SearchArgs, f: &Found) -> anyhow::Result<i32> {
    if a.json {
        // With --live, one document with both comes at the end.
        if !a.live {
            println!("{}", serde_json::to_string_pretty(&to_json(p, a, f))?);
        }
    } else if let Some(m) = &f.multi {
        super::output_wide::multi_text(p, f, m);
    } else {
        let evals: u64 = f.segments.iter().map(|(_, c)| c.evals).sum();
        println!(
            "search: {} ({} dimension(s), {} seed(s), {evals} simulations in {:.2}s)",
            p.file,
            p.marks.len(),
            f.adaptive
                .iter()
                .map(|o| o.seeds.len() as u64)
                .max()
                .unwrap_or(a.seeds.max(1)),
            f.elapsed.as_secs_f64()
        );
        for (k, (seg, c)) in f.segments.iter().enumerate() {
            let head = if f.segments.len() > 1 {
                format!("ray to {}: ", fmt_values(p, &seg.to))
            } else {
                String::new()
            };
            match (c.boundary, c.interval) {
                (Some(b), Some((x, y))) => println!(
                    "{head}boundary {} (95% interval over seeds {} … {}; seed-to-seed sd {:.1}% of the range; {}{})",
                    fmt_values(p, &seg.at(b)),
                    fmt_values(p, &seg.at(x)),
                    fmt_values(p, &seg.at(y)),
                    c.spread.unwrap_or(0.0) * 100.0,
                    c.method,
                    if c.monotone || !f.adaptive.is_empty() { "" } else { ": NOT monotone, the majority of seeds decides" }
                ),
                _ if unfinished(a, f, k) => println!(
                    "{head}no result: the budget (--time, --max-evals) ran out before the seeds finished ({} of {} did, none crossing)",
                    finished(f, k),
                    a.seeds
                ),
                _ => println!(
                    "{head}no crossing: {} seed(s) hold over the whole range, {} break at its start",
                    c.always_hold, c.always_break
                ),
            }
            if !f.adaptive.is_empty() {
                super::output_wide::adaptive_lines(p, a, f, k);
            } else if c.cut_short && c.boundary.is_some() {
                println!(
                    "{head}(the budget ran out before every seed's bracket narrowed to --tol)"
                );
            }
        }
        if let Some(b) = f.barely.as_ref().filter(|b| !b.checked) {
            println!(
                "barely violating: {} — not checked: the --time budget ran out before its confirming runs (the bisection's point)",
                fmt_values(p, &b.values)
            );
        } else if let Some(b) = &f.barely {
            println!(
                "barely violating: {} — {:.0}% of the seeds breach, margin at the breach {}; \
                 ρ of the whole run {} on seed {}",
                fmt_values(p, &b.values),
                b.breaching * 100.0,
                b.margin_at_breach
                    .map_or("—".into(), |m| format!("{m:+.4}")),
                rho_words(b.rho),
                b.rho_seed,
            );
        }
    }
    if let (Some(out), Some(b)) = (&a.out, &f.barely) {
        let mut text = p.written(&b.values);
        if p.experiment {
            // Its paths are the experiment folder's: said from the output's folder.
            let to = out.parent().unwrap_or(Path::new(""));
            let (rebased, kept) = super::paths::rebase(&text, &p.file, &p.dir, to);
            for k in kept {
                eprintln!(
                    "brownout search: {} names `{k}`, relative to {}; rewrite it for {}",
                    p.file,
                    p.dir.display(),
                    out.display()
                );
            }
            text = rebased;
            text = format!(
                "# Written by `brownout search` from {}: the barely-violating values.\n{text}",
                p.file
            );
        }
        std::fs::write(out, text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", out.display()))?;
        if !a.json {
            println!("written: {}", out.display());
        }
    }
    if let (Some(_), Some(_)) = (&a.chart, &f.multi) {
        eprintln!("brownout search: --chart draws one or two dimensions; the map is in the report and --json");
    } else if let Some(path) = &a.chart {
        // The chart's simulations count in --time: drawn only if they all finish in it.
        match chart(p, a, f) {
            Ok(svg) => std::fs::write(path, svg)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?,
            Err(e) if e == BUDGET_SPENT => eprintln!(
                "brownout search: --chart not drawn: the --time budget ran out ({} not written)",
                path.display()
            ),
            Err(e) => anyhow::bail!("the chart: {e}"),
        }
    }
    Ok(outcome(a, f).0)
}

/// Segment `k`'s seeds that finished (both ends measured).
fn finished(f: &Found, k: usize) -> usize {
    match f.adaptive.get(k) {
        Some(o) => o.seeds.len(),
        None => f.segments.get(k).map_or(0, |(_, c)| c.seeds.len()),
    }
}

/// Segment `k` found no boundary because the budget ran out before its seeds finished (not
/// because the range has no crossing).
pub fn unfinished(a: &SearchArgs, f: &Found, k: usize) -> bool {
    let Some((_, c)) = f.segments.get(k) else {
        return false;
    };
    if c.boundary.is_some() {
        return false;
    }
    match f.adaptive.get(k) {
        Some(o) => o.seeds.is_empty(),
        None => c.cut_short && (c.seeds.len() as u64) < a.seeds,
    }
}

/// ρ in words: a value at the simulator's clamp (−99) is said as a clamp, not a number.
pub fn rho_words(rho: f64) -> String {
    if rho.is_nan() {
        "not measured (the budget ran out)".into()
    } else if rho <= -99.0 {
        "≤ −99 (clamped: the breach escalates, a cliff, not a slope)".into()
    } else if rho < -1.0 {
        format!("{rho:+.4} (the breach escalates: a cliff, not a slope)")
    } else {
        format!("{rho:+.4}")
    }
}

/// One dimension: ρ on a grid of the range (full runs, the first seed) with the boundary
/// marked. Two: the boundary found along each ray, with the holding side labelled.
fn chart(p: &Problem, a: &SearchArgs, f: &Found) -> Result<String, String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let (lo, hi) = (p.lows(), p.highs());
        if p.marks.len() == 1 {
            let n = 24;
            let pts: Vec<(f64, f64)> = (0..=n)
                .map(|k| {
                    let x = lo[0] + (hi[0] - lo[0]) * f64::from(k) / f64::from(n);
                    (x, p.rho(&[x], a.seed, true))
                })
                .collect();
            if pts.iter().any(|(_, r)| r.is_nan()) {
                return Err(BUDGET_SPENT.into());
            }
            let pts: Vec<(f64, f64)> = pts.into_iter().map(|(x, r)| (x, r.max(-2.0))).collect();
            let (ymin, ymax) = pts
                .iter()
                .fold((-0.2f64, 0.2f64), |(a, b), (_, y)| (a.min(*y), b.max(*y)));
            let mut c = ChartBuilder::on(&root)
                .caption(
                    format!("ρ over {} (seed {})", p.marks[0].key, a.seed),
                    ("sans-serif", 18),
                )
                .margin(10)
                .x_label_area_size(36)
                .y_label_area_size(50)
                .build_cartesian_2d(lo[0]..hi[0], ymin * 1.1..ymax * 1.1)
                .map_err(|x| e(&x))?;
            c.configure_mesh()
                .x_desc(p.marks[0].key.as_str())
                .y_desc("ρ (> 0 held, < 0 breached)")
                .draw()
                .map_err(|x| e(&x))?;
            c.draw_series(LineSeries::new(
                vec![(lo[0], 0.0), (hi[0], 0.0)],
                BLACK.stroke_width(1),
            ))
            .map_err(|x| e(&x))?;
            c.draw_series(LineSeries::new(pts, BLUE.stroke_width(2)))
                .map_err(|x| e(&x))?
                .label("ρ")
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLUE.stroke_width(2)));
            if let Some((seg, c2)) = f.segments.first() {
                if let Some(b) = c2.boundary {
                    let x = seg.at(b)[0];
                    c.draw_series(LineSeries::new(
                        vec![(x, ymin), (x, ymax)],
                        RED.stroke_width(2),
                    ))
                    .map_err(|x| e(&x))?
                    .label("boundary (median over seeds)")
                    .legend(|(x, y)| {
                        PathElement::new(vec![(x, y), (x + 16, y)], RED.stroke_width(2))
                    });
                }
            }
            c.configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()
                .map_err(|x| e(&x))?;
        } else {
            let mut c = ChartBuilder::on(&root)
                .caption(
                    "where ρ crosses 0 (boundary per ray, median over seeds)",
                    ("sans-serif", 18),
                )
                .margin(10)
                .x_label_area_size(36)
                .y_label_area_size(60)
                .build_cartesian_2d(lo[0]..hi[0], lo[1]..hi[1])
                .map_err(|x| e(&x))?;
            c.configure_mesh()
                .x_desc(p.marks[0].key.as_str())
                .y_desc(p.marks[1].key.as_str())
                .draw()
                .map_err(|x| e(&x))?;
            let pts: Vec<(f64, f64)> = f
                .segments
                .iter()
                .filter_map(|(seg, c)| c.boundary.map(|t| seg.at(t)))
                .map(|v| (v[0], v[1]))
                .collect();
            c.draw_series(LineSeries::new(pts.clone(), RED.stroke_width(2)))
                .map_err(|x| e(&x))?;
            c.draw_series(pts.iter().map(|p| Circle::new(*p, 4, RED.filled())))
                .map_err(|x| e(&x))?;
            c.draw_series(std::iter::once(Text::new(
                "holds (ρ > 0)",
                (
                    lo[0] + (hi[0] - lo[0]) * 0.03,
                    lo[1] + (hi[1] - lo[1]) * 0.08,
                ),
                ("sans-serif", 14).into_font(),
            )))
            .map_err(|x| e(&x))?;
            c.draw_series(std::iter::once(Text::new(
                "breaches (ρ < 0)",
                (
                    lo[0] + (hi[0] - lo[0]) * 0.7,
                    lo[1] + (hi[1] - lo[1]) * 0.92,
                ),
                ("sans-serif", 14).into_font(),
            )))
            .map_err(|x| e(&x))?;
        }
        root.present().map_err(|x| e(&x))?;
    }
    Ok(svg)
}

/// Print the live confirmation; the exit code (0 a live boundary; 3 none bracketed; 4 a
/// run could not give a verdict).
pub fn live(p: &Problem, a: &SearchArgs, f: &Found, l: &super::live::Live) -> anyhow::Result<i32> {
    let key = &p.marks[0].key;
    if a.json {
        let mut doc = to_json(p, a, f);
        doc["live"] = serde_json::to_value(l)?;
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        for r in &l.runs {
            println!(
                "live {key} {:.5}: {} ({}){}",
                r.value,
                r.status,
                if r.breached { "breached" } else { "held" },
                r.run_id
                    .as_deref()
                    .map_or(String::new(), |id| format!(", run {id}"))
            );
        }
        match (l.boundary, l.hold, l.brk) {
            (Some(b), Some(h), Some(k)) => println!(
                "live boundary {key} {b:.5} (held at {h:.5}, breached at {k:.5}); simulated {:.5}; residual {:+.5}",
                l.simulated,
                l.residual.unwrap_or(0.0)
            ),
            _ => println!(
                "no live boundary bracketed in {} run(s){}",
                l.runs.len(),
                l.stopped.as_deref().map_or(String::new(), |s| format!(": {s}"))
            ),
        }
    }
    Ok(match (l.boundary, &l.stopped) {
        (Some(_), _) => 0,
        (None, Some(s)) if s.contains("not a verdict") || s.contains("journal") => 4,
        _ => 3,
    })
}
