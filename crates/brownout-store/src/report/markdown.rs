//! The Markdown report: verdict first, then the hypothesis, stages, gates, the breach,
//! recovery (MTTD/MTTR), injections, rollbacks and what the client saw.

use super::md_text::{code, fenced, text};
use super::view::{self, arr, f, obj, s};
use serde_json::Value;
use std::fmt::Write;

/// Journal text in a table cell or prose (see [`super::md_text`]).
fn cell(x: &str) -> String {
    text(x)
}

/// The report.
pub fn render(j: &Value) -> String {
    let mut o = String::new();
    let (verdict, pass) = view::verdict(j);
    let (start, length) = view::when(j);
    let _ = writeln!(o, "# {} {}\n", if pass { "✓" } else { "✗" }, cell(&verdict));
    let _ = writeln!(o, "**{}**\n", cell(&view::title(j)));
    let reason = s(j, "reason");
    if !reason.is_empty() {
        let lines: Vec<String> = reason.lines().map(cell).collect();
        let _ = writeln!(o, "> {}\n", lines.join("\n> "));
    }
    let _ = writeln!(
        o,
        "Run {} · status {} · started {start} · {length} · file {} · seed {} · brownout {}\n",
        code(&crate::store::ingest::run_id(j)),
        code(s(j, "status")),
        code(s(j, "file")),
        cell(&j.get("seed").map_or_else(|| "—".into(), Value::to_string)),
        cell(s(j, "brownout_version")),
    );
    if let Some(r) = obj(j, "refusal") {
        let _ = writeln!(
            o,
            "## Refusal\n\n{}\n",
            fenced(&serde_json::to_string_pretty(r).unwrap_or_default(), "json")
        );
    }
    hypothesis(&mut o, j);
    baselines(&mut o, j);
    stages(&mut o, j);
    super::silent::section(&mut o, j);
    super::fleet::section(&mut o, j);
    gates(&mut o, j);
    breach_and_recovery(&mut o, j);
    detection(&mut o, j);
    super::estimate::section(&mut o, j);
    injections(&mut o, j);
    rollbacks(&mut o, j);
    client(&mut o, j);
    o
}

fn hypothesis(o: &mut String, j: &Value) {
    let probes = view::probes(j);
    if probes.is_empty() {
        return;
    }
    let _ = writeln!(o, "## Steady-state hypothesis\n");
    let _ = writeln!(
        o,
        "| when | tool | tolerance | success | p95 | met | misses |\n|---|---|---|---|---|---|---|"
    );
    for (m, p) in probes {
        let tol = p.get("tolerance").map(|t| {
            t.as_object()
                .map(|m| {
                    m.iter()
                        .filter(|(_, v)| !v.is_null())
                        .map(|(k, v)| match v.as_str() {
                            Some(t) => format!("{k} {t}"),
                            None => format!("{k} {v}"),
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default()
        });
        let misses: Vec<&str> = arr(p, "misses").iter().filter_map(Value::as_str).collect();
        let _ = writeln!(
            o,
            "| {m} | {} | {} | {:.1} % of {} | {} | {} | {} |",
            code(s(p, "tool")),
            cell(&tol.unwrap_or_default()),
            f(p, "success_pct").unwrap_or(0.0),
            arr(p, "samples").len(),
            view::opt_ms(p.get("latency").and_then(|l| f(l, "p95_ms"))),
            if p.get("met").and_then(Value::as_bool) == Some(true) {
                "yes"
            } else {
                "**no**"
            },
            cell(&misses.join("; ")),
        );
    }
    o.push('\n');
}

/// Tolerances learnt from past runs, and the runs they came from.
fn baselines(o: &mut String, j: &Value) {
    if arr(j, "baselines").is_empty() {
        return;
    }
    let _ = writeln!(o, "## Tolerances from history\n");
    for b in arr(j, "baselines") {
        let runs: Vec<&str> = arr(b, "runs").iter().filter_map(Value::as_str).collect();
        let _ = match (
            b.get("bound").and_then(Value::as_str),
            b.get("note").and_then(Value::as_str),
        ) {
            (Some(bound), None) => writeln!(
                o,
                "- {} {} **{}** from history ({}, {} run(s): {})",
                code(s(b, "tool")),
                cell(s(b, "stat")),
                cell(bound),
                cell(s(b, "rule")),
                runs.len(),
                cell(&runs.join(", "))
            ),
            (bound, note) => writeln!(
                o,
                "- {} {}: no bound from history ({}); {}",
                code(s(b, "tool")),
                cell(s(b, "stat")),
                cell(note.unwrap_or("none")),
                bound.map_or("not checked".to_string(), |b| format!(
                    "{} as written",
                    cell(b)
                ))
            ),
        };
    }
    o.push('\n');
}

fn slis_row(x: &Value) -> String {
    let z = Value::Null;
    let l = x.get("slis").unwrap_or(&z);
    format!(
        "{} | {} | {} | {} | {}",
        l.get("calls").map_or_else(|| "—".into(), Value::to_string),
        view::pct(f(l, "error_rate")),
        view::opt_ms(f(l, "p50_ms")),
        view::opt_ms(f(l, "p95_ms")),
        view::opt_ms(f(l, "p99_ms")),
    )
}

fn stages(o: &mut String, j: &Value) {
    let st = arr(j, "stages");
    if st.is_empty() && obj(j, "baseline").is_none() {
        return;
    }
    let _ = writeln!(o, "## Stages\n");
    let _ = writeln!(o, "| stage | sessions | from | to | promoted | calls | errors | p50 | p95 | p99 |\n|---|---|---|---|---|---|---|---|---|---|");
    if let Some(b) = obj(j, "baseline") {
        let _ = writeln!(
            o,
            "| baseline | 0 % | {} | {} | — | {} |",
            view::opt_ms(f(b, "start_ms")),
            view::opt_ms(f(b, "end_ms")),
            slis_row(b)
        );
    }
    for x in st {
        let _ = writeln!(
            o,
            "| {} | {:.0} % | {} | {} | {} | {} |",
            cell(s(x, "stage")),
            f(x, "share").unwrap_or(0.0) * 100.0,
            view::opt_ms(f(x, "start_ms")),
            view::opt_ms(f(x, "end_ms")),
            if x.get("completed").and_then(Value::as_bool) == Some(true) {
                "yes"
            } else {
                "**no**"
            },
            slis_row(x)
        );
    }
    o.push('\n');
}

fn gates(o: &mut String, j: &Value) {
    let g = arr(j, "gates");
    if g.is_empty() {
        return;
    }
    let _ = writeln!(o, "## SLO gates\n");
    let _ = writeln!(
        o,
        "| gate | held | worst | first breach | breaches | at the end |\n|---|---|---|---|---|---|"
    );
    for x in g {
        let gate = s(x, "gate");
        let breached = x.get("breached").and_then(Value::as_bool) == Some(true);
        // Plain words, not emoji: every font has them (an emoji rendered as a
        // missing-glyph box in Chromium), and "breached" next to "holding" reads as what
        // it is: the gate breached, then held again once the faults left.
        let end = match (breached, s(x, "status")) {
            (true, "holding") => "holding again".to_string(),
            (_, st) => st.to_string(),
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} |",
            code(gate),
            if breached { "**no** (breached)" } else { "yes" },
            view::gate_value(gate, f(x, "worst")),
            view::opt_ms(f(x, "first_breach_ms")),
            x.get("breaches")
                .map_or_else(|| "0".into(), Value::to_string),
            cell(&end),
        );
    }
    o.push('\n');
}

fn breach_and_recovery(o: &mut String, j: &Value) {
    if let Some(b) = obj(j, "breach") {
        let gate = s(b, "gate");
        let _ = writeln!(o, "## Breach\n");
        let _ = writeln!(
            o,
            "{} breached at {} in stage **{}**: {} against a limit of {} over {} samples. \
             The last fault left at {} (abort latency **{}**).\n",
            code(gate),
            view::opt_ms(f(b, "at_ms")),
            cell(s(b, "stage")),
            view::gate_value(gate, f(b, "value")),
            view::gate_value(gate, f(b, "limit")),
            b.get("samples")
                .map_or_else(|| "—".into(), Value::to_string),
            view::opt_ms(f(b, "last_fault_left_ms")),
            view::opt_ms(f(b, "abort_latency_ms")),
        );
        let w = arr(b, "window");
        if !w.is_empty() {
            let _ = writeln!(
                o,
                "| gate at the breach | value | limit | samples | status |\n|---|---|---|---|---|"
            );
            for g in w {
                let gate = s(g, "gate");
                let _ = writeln!(
                    o,
                    "| {} | {} | {} | {} | {} |",
                    code(gate),
                    view::gate_value(gate, f(g, "value")),
                    view::gate_value(gate, f(g, "limit")),
                    g.get("samples")
                        .map_or_else(|| "—".into(), Value::to_string),
                    cell(s(g, "status"))
                );
            }
            o.push('\n');
        }
    }
    if let Some(r) = obj(j, "recovery") {
        let _ = writeln!(o, "## Recovery\n");
        if let (Some(b), Some(first)) = (obj(j, "breach"), arr(j, "stages").last()) {
            // MTTD: from the stage that broke starting to the gate's breach.
            if let (Some(at), Some(st)) = (f(b, "at_ms"), f(first, "start_ms")) {
                let _ = writeln!(
                    o,
                    "- MTTD (stage start → breach detected): **{}**",
                    view::ms(at - st)
                );
            }
        }
        let _ = writeln!(
            o,
            "- faults removed at {}",
            view::opt_ms(f(r, "faults_left_ms"))
        );
        let _ = writeln!(
            o,
            "- MTTR: **{}**{}",
            view::opt_ms(f(r, "mttr_ms")),
            f(r, "within_ms").map_or_else(String::new, |w| format!(" (bound {})", view::ms(w)))
        );
        let _ = writeln!(
            o,
            "- recovered: {}\n",
            if r.get("recovered").and_then(Value::as_bool) == Some(true) {
                "yes"
            } else {
                "**no**"
            }
        );
    }
}

/// MTTD/MTTR from the `during: true` probes, over the run and per stage.
fn detection(o: &mut String, j: &Value) {
    let rows: Vec<(String, &Value)> = obj(j, "detection")
        .map(|_| ("whole run".to_string(), &j["detection"]))
        .into_iter()
        .chain(arr(j, "stages").iter().filter_map(|st| {
            obj(st, "detection")
                .map(|_| (format!("stage {}", cell(s(st, "stage"))), &st["detection"]))
        }))
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "## Detection and recovery (probes)\n\n| span | samples | failed | time to detect | time to alert | time to recover | to recovery notice | reasons |\n|---|---|---|---|---|---|---|---|"
    );
    for (span, d) in rows {
        let reasons: Vec<String> = d
            .get("reasons")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| format!("{k} ×{v}")).collect())
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "| {span} | {} | {} | {} | {} | {} | {} | {} |",
            d.get("samples")
                .map_or_else(|| "—".into(), Value::to_string),
            d.get("failures")
                .map_or_else(|| "—".into(), Value::to_string),
            view::opt_ms(f(d, "ttd_ms")),
            view::opt_ms(f(d, "tta_ms")),
            view::opt_ms(f(d, "ttr_ms")),
            view::opt_ms(f(d, "ttrn_ms")),
            cell(&reasons.join(", ")),
        );
    }
    o.push('\n');
}

fn injections(o: &mut String, j: &Value) {
    let mut rows = Vec::new();
    for x in arr(j, "stages") {
        if let Some(m) = x.get("injections").and_then(Value::as_object) {
            for (fault, n) in m {
                rows.push(format!(
                    "| {} | {} | {} |",
                    cell(s(x, "stage")),
                    code(fault),
                    n
                ));
            }
        }
    }
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "## Injections\n\n| stage | fault | injected |\n|---|---|---|\n{}\n",
        rows.join("\n")
    );
}

fn rollbacks(o: &mut String, j: &Value) {
    let r = arr(j, "rollbacks");
    if r.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "## Rollbacks\n\n| action | at | took | ok | detail |\n|---|---|---|---|---|"
    );
    for x in r {
        let took = match (f(x, "start_ms"), f(x, "end_ms")) {
            (Some(a), Some(b)) => view::ms(b - a),
            _ => "—".into(),
        };
        let _ = writeln!(
            o,
            "| {} | {} | {took} | {} | {} |",
            code(s(x, "action")),
            view::opt_ms(f(x, "start_ms")),
            if x.get("ok").and_then(Value::as_bool) == Some(true) {
                "yes"
            } else {
                "**no**"
            },
            cell(s(x, "detail"))
        );
    }
    o.push('\n');
}

fn client(o: &mut String, j: &Value) {
    let series = arr(j, "series");
    if series.is_empty() {
        return;
    }
    let _ = writeln!(o, "## What the client saw\n");
    let _ = writeln!(o, "| phase | seconds | calls | errors | worst span's error rate | worst span's p99 |\n|---|---|---|---|---|---|");
    let mut order: Vec<String> = Vec::new();
    let mut acc: std::collections::HashMap<String, (f64, u64, u64, f64, f64)> = Default::default();
    for x in series {
        let ph = s(x, "phase").to_string();
        let z = Value::Null;
        let l = x.get("slis").unwrap_or(&z);
        if !acc.contains_key(&ph) {
            order.push(ph.clone());
        }
        let e = acc.entry(ph).or_default();
        e.0 += f(x, "width_ms").unwrap_or(1000.0) / 1000.0;
        e.1 += l.get("calls").and_then(Value::as_u64).unwrap_or(0);
        e.2 += l.get("errors").and_then(Value::as_u64).unwrap_or(0);
        e.3 = e.3.max(f(l, "error_rate").unwrap_or(0.0));
        e.4 = e.4.max(f(l, "p99_ms").unwrap_or(0.0));
    }
    for ph in order {
        let (n, c, e, er, p99) = acc[&ph];
        let _ = writeln!(
            o,
            "| {} | {} | {c} | {e} | {:.2} % | {} |",
            cell(&ph),
            brownout_core::human::sig(n, 3),
            er * 100.0,
            view::ms(p99)
        );
    }
    o.push('\n');
}
