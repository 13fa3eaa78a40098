//! What the wider searches add to `brownout search`'s report: for adaptive seeds, the rounds,
//! the seeds used and the precision reached (or, when a budget ran out, the precision
//! achieved and which budget); for three to five dimensions, the barely-violating point
//! nearest the origin of the normalised space and a map of the boundary — the sampled points
//! nearest ρ = 0 as a Markdown table, every sample in the JSON.

use super::{wide::Multi, Found, Problem, SearchArgs};
use serde_json::{json, Value};

fn values(p: &Problem, v: &[f64]) -> String {
    p.marks
        .iter()
        .zip(v)
        .map(|(m, x)| {
            let pc = if m.percent { "%" } else { "" };
            format!("{} {}{pc}", m.key, brownout_core::human::sig(*x, 4))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The adaptive searches' part of the JSON, per segment (in the segment's values).
pub fn adaptive_json(f: &Found) -> Vec<Value> {
    f.adaptive
        .iter()
        .zip(&f.segments)
        .map(|(o, (seg, _))| {
            let scale = seg
                .from
                .iter()
                .zip(&seg.to)
                .map(|(a, b)| (b - a).abs())
                .fold(0.0, f64::max);
            json!({
                "seeds": o.seeds.len(),
                "rounds": o.rounds.iter().map(|r| json!({
                    "seeds": r.seeds, "evals": r.evals,
                    "median": r.median.map(|t| seg.at(t)),
                    "interval": r.interval.map(|(x, y)| [seg.at(x), seg.at(y)]),
                })).collect::<Vec<_>>(),
                "half_width": o.half_width.map(|h| h * scale),
                "reached": o.reached,
                "stopped": o.stopped,
                "non_monotone": o.non_monotone,
                "checked": o.checked,
                "timed_out": o.timed_out,
            })
        })
        .collect()
}

/// Print the adaptive search's lines under a segment's.
pub fn adaptive_lines(p: &Problem, a: &SearchArgs, f: &Found, k: usize) {
    let (Some(o), Some((seg, _))) = (f.adaptive.get(k), f.segments.get(k)) else {
        return;
    };
    let scale = (seg.to[0] - seg.from[0]).abs();
    let unit = if p.marks.len() == 1 {
        p.marks[0].key.clone()
    } else {
        "of the ray".into()
    };
    let goal = a.wide.precision.unwrap_or(0.0);
    let half = o
        .half_width
        .map(|h| if p.marks.len() == 1 { h * scale } else { h });
    let half = half.map_or("—".into(), |h| {
        format!("±{}", brownout_core::human::sig(h, 3))
    });
    match (o.reached, o.stopped) {
        (true, _) => println!(
            "adaptive seeds: {} seeds in {} rounds; median known to {half} ({unit}; asked ±{goal})",
            o.seeds.len(),
            o.rounds.len()
        ),
        (false, why) => println!(
            "adaptive seeds: {} seeds in {} rounds; stopped by {} before ±{goal} ({unit}): achieved {half}{}",
            o.seeds.len(),
            o.rounds.len(),
            why.unwrap_or("the budget"),
            if o.timed_out { " (cut by time: not reproducible)" } else { "" }
        ),
    }
    if o.non_monotone > 0 {
        println!(
            "  {} of the {} seeds checked (the first round's) cross more than once; a seed's crossing is the one bisection found",
            o.non_monotone,
            o.checked
        );
    }
}

/// A median ρ for the map: a value at the simulator's clamp (−99) is said as one.
fn rho_cell(rho: f64) -> String {
    if rho <= -99.0 {
        "≤ −99 (clamped)".into()
    } else {
        format!("{rho:+.4}")
    }
}

/// The samples nearest ρ = 0: those whose share of breaching seeds is nearest ½, then the
/// smallest |ρ|.
fn map_rows(m: &Multi, n: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..m.outcome.samples.len()).collect();
    let key = |i: &usize| {
        let s = &m.outcome.samples[*i];
        ((s.breaching - 0.5).abs(), s.rho.abs())
    };
    idx.sort_by(|a, b| {
        let (x, y) = (key(a), key(b));
        x.0.total_cmp(&y.0).then(x.1.total_cmp(&y.1))
    });
    idx.truncate(n);
    idx
}

/// Three to five dimensions as JSON.
pub fn multi_json(p: &Problem, f: &Found, m: &Multi) -> Value {
    let o = &m.outcome;
    json!({
        "input": p.file,
        "dimensions": p.marks.iter().map(|m| json!({
            "key": m.key, "lo": m.lo, "hi": m.hi,
            "unit": if m.percent { "%" } else { "" },
            "line": m.line, "col": m.col,
        })).collect::<Vec<_>>(),
        "method": o.method,
        "seeds": m.seeds,
        "nearest": o.nearest.map(|i| json!({
            "values": p.denormalise(&o.samples[i].x),
            "normalised": o.samples[i].x,
            "distance": o.samples[i].norm(),
        })),
        "barely": f.barely.as_ref().map(|b| json!({
            "values": b.values,
            "breaching": b.breaching,
            "margin_at_breach": b.margin_at_breach,
            "rho": b.rho,
            "rho_seed": b.rho_seed,
            "checked": b.checked,
        })),
        "map": o.samples.iter().map(|s| json!({
            "values": p.denormalise(&s.x),
            "normalised": s.x,
            "breaching": s.breaching,
            "rho": s.rho,
        })).collect::<Vec<_>>(),
        "trace": o.trace,
        "stopped": o.stopped,
        "timed_out": o.timed_out,
        "evals": o.evals,
        "elapsed_ms": f.elapsed.as_secs_f64() * 1000.0,
    })
}

/// Three to five dimensions as text, with the boundary's map as a Markdown table.
pub fn multi_text(p: &Problem, f: &Found, m: &Multi) {
    let o = &m.outcome;
    println!(
        "search: {} ({} dimensions, {} seed(s) a point, {}: {} points, {} simulations in {:.2}s)",
        p.file,
        p.marks.len(),
        m.seeds.len(),
        o.method,
        o.samples.len(),
        o.evals,
        f.elapsed.as_secs_f64()
    );
    let Some(i) = o.nearest else {
        println!(
            "no crossing: {}",
            match o.stopped {
                "no crossing" => "the strongest corner holds, or the weakest already breaches",
                "time" => "no result: the --time budget ran out before a breaching point was found",
                _ => "no breaching point found within the budget",
            }
        );
        return;
    };
    let s = &o.samples[i];
    if let Some(b) = f.barely.as_ref().filter(|b| !b.checked) {
        println!(
            "barely violating (nearest the weakest corner, normalised distance {:.4}): {} — {:.0}% of the seeds breach, median ρ {} (the map's); not checked: the --time budget ran out before its confirming runs",
            s.norm(),
            values(p, &b.values),
            b.breaching * 100.0,
            rho_cell(s.rho),
        );
    } else if let Some(b) = &f.barely {
        println!(
            "barely violating (nearest the weakest corner, normalised distance {:.4}): {} — {:.0}% of the seeds breach, median ρ {} (the map's); ρ of the whole run {} on seed {}",
            s.norm(),
            values(p, &b.values),
            b.breaching * 100.0,
            rho_cell(s.rho),
            super::output::rho_words(b.rho),
            b.rho_seed
        );
    }
    if o.timed_out {
        println!("(cut by time: not reproducible)");
    }
    let rows = map_rows(m, 12);
    println!(
        "\nboundary map: the {} sampled points nearest ρ = 0 (of {}; all in --json)\n",
        rows.len(),
        o.samples.len()
    );
    let head: Vec<String> = p.marks.iter().map(|m| m.key.clone()).collect();
    println!(
        "| {} | breaching | ρ (lower median; a breaching seed's at its first breach) |",
        head.join(" | ")
    );
    println!("|{}---:|---:|", "---:|".repeat(head.len()));
    for r in rows {
        let s = &o.samples[r];
        let v: Vec<String> = p
            .denormalise(&s.x)
            .iter()
            .zip(&p.marks)
            .map(|(x, m)| {
                let pc = if m.percent { "%" } else { "" };
                format!("{}{pc}", brownout_core::human::sig(*x, 4))
            })
            .collect();
        println!(
            "| {} | {:.0}% | {} |",
            v.join(" | "),
            s.breaching * 100.0,
            rho_cell(s.rho)
        );
    }
    println!();
}
