//! Fitting the simulator's server model to calls measured live: per tool a latency
//! distribution and a base error rate, and the server's effective concurrency; written as
//! a workload's `servers:` section. Pure (the observations in, the model out).
//!
//! - **Latency**: the time the client saw per call, at the load's concurrency (so relay and
//!   transport overhead are in it). `fixed` (+ `jitter_ms`) when the spread is small (the
//!   coefficient of variation under 0.15); `pareto` when the tail is heavy (p99 over 3× the
//!   median: scale at the 1st percentile, shape from the median); otherwise `normal`
//!   (mean, standard deviation), each capped at the largest latency seen.
//! - **Errors**: the share of calls that failed (any outcome but a correct answer).
//! - **Concurrency**: the most calls in flight at once (from each call's start and end):
//!   what the server absorbed; a lower bound when the load never filled it.

use brownout_core::event::Outcome;
use brownout_core::slo::CallObservation;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// A fitted latency model, as the simulator's `latency:` keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "distribution", rename_all = "snake_case")]
pub enum Model {
    Fixed {
        added_ms: f64,
        jitter_ms: f64,
    },
    Normal {
        mean_ms: f64,
        stddev_ms: f64,
        max_ms: f64,
    },
    Pareto {
        scale_ms: f64,
        shape: f64,
        max_ms: f64,
    },
}

impl std::fmt::Display for Model {
    /// In words, each figure rounded for people (the JSON keeps full precision).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use brownout_core::human::{ms, num};
        match self {
            Model::Fixed {
                added_ms,
                jitter_ms,
            } => {
                write!(f, "fixed {} ± {}", ms(*added_ms), ms(*jitter_ms))
            }
            Model::Normal {
                mean_ms,
                stddev_ms,
                max_ms,
            } => write!(
                f,
                "normal, mean {}, sd {}, at most {}",
                ms(*mean_ms),
                ms(*stddev_ms),
                ms(*max_ms)
            ),
            Model::Pareto {
                scale_ms,
                shape,
                max_ms,
            } => write!(
                f,
                "pareto, scale {}, shape {}, at most {}",
                ms(*scale_ms),
                num(*shape),
                ms(*max_ms)
            ),
        }
    }
}

/// One tool, measured and fitted.
#[derive(Debug, Clone, Serialize)]
pub struct ToolFit {
    pub tool: String,
    pub calls: u64,
    pub error_rate: f64,
    pub mean_ms: f64,
    pub sd_ms: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub model: Model,
}

/// The fitted server.
#[derive(Debug, Clone, Serialize)]
pub struct Fit {
    pub tools: Vec<ToolFit>,
    /// The most calls in flight at once.
    pub concurrency: u32,
    /// Calls per second over the span measured.
    pub throughput_per_s: f64,
    pub span_s: f64,
}

/// The `q` quantile (nearest rank) of sorted values.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn model(sorted: &[f64], mean: f64, sd: f64) -> Model {
    let (p01, p50, p99, max) = (
        quantile(sorted, 0.01),
        quantile(sorted, 0.5),
        quantile(sorted, 0.99),
        *sorted.last().unwrap_or(&0.0),
    );
    let r = |x: f64| (x * 1000.0).round() / 1000.0;
    if mean <= 0.0 || sd / mean < 0.15 {
        return Model::Fixed {
            added_ms: r(p50),
            jitter_ms: r(sd * 3f64.sqrt()),
        };
    }
    if p99 > 3.0 * p50 && p50 > p01 && p01 > 0.0 {
        let shape = std::f64::consts::LN_2 / (p50 / p01).ln();
        return Model::Pareto {
            scale_ms: r(p01),
            shape: r(shape.clamp(0.5, 20.0)),
            max_ms: r(max),
        };
    }
    Model::Normal {
        mean_ms: r(mean),
        stddev_ms: r(sd),
        max_ms: r(max),
    }
}

/// Fit the calls (of `tools/call`) observed live.
pub fn fit(calls: &[CallObservation]) -> Fit {
    let mut by_tool: BTreeMap<String, Vec<&CallObservation>> = BTreeMap::new();
    for c in calls {
        if let Some(t) = &c.tool {
            by_tool.entry(t.clone()).or_default().push(c);
        }
    }
    let tools = by_tool
        .into_iter()
        .map(|(tool, cs)| {
            let mut lat: Vec<f64> = cs.iter().map(|c| c.latency_ms).collect();
            lat.sort_by(f64::total_cmp);
            let n = lat.len() as f64;
            let mean = lat.iter().sum::<f64>() / n;
            let sd = if lat.len() > 1 {
                (lat.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
            } else {
                0.0
            };
            let errors = cs
                .iter()
                .filter(|c| c.outcome != Outcome::Ok || !c.correct)
                .count();
            ToolFit {
                calls: cs.len() as u64,
                error_rate: errors as f64 / n,
                mean_ms: mean,
                sd_ms: sd,
                p50_ms: quantile(&lat, 0.5),
                p95_ms: quantile(&lat, 0.95),
                p99_ms: quantile(&lat, 0.99),
                max_ms: *lat.last().unwrap_or(&0.0),
                model: model(&lat, mean, sd),
                tool,
            }
        })
        .collect();
    // In flight: +1 at each start, −1 at each end, in time order (ends first at a tie).
    let mut edges: Vec<(f64, i32)> = calls
        .iter()
        .flat_map(|c| [(c.at_ms - c.latency_ms, 1), (c.at_ms, -1)])
        .collect();
    edges.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in &edges {
        now += d;
        most = most.max(now);
    }
    let span_ms = match (edges.first(), edges.last()) {
        (Some(a), Some(b)) => (b.0 - a.0).max(1.0),
        _ => 1.0,
    };
    Fit {
        tools,
        concurrency: most.max(1) as u32,
        throughput_per_s: calls.len() as f64 / (span_ms / 1000.0),
        span_s: span_ms / 1000.0,
    }
}

/// The fitted server as a workload's `servers:` section (YAML).
pub fn servers_yaml(f: &Fit, name: &str) -> String {
    let mut s = String::from("servers:\n");
    let _ = writeln!(s, "  - name: {name}");
    let _ = writeln!(
        s,
        "    # calibrated by brownout: the most calls in flight at once seen was {}",
        f.concurrency
    );
    let _ = writeln!(s, "    concurrency: {}", f.concurrency);
    s.push_str("    tools:\n");
    for t in &f.tools {
        let lat = match &t.model {
            Model::Fixed {
                added_ms,
                jitter_ms,
            } => format!("{{added_ms: {added_ms}, jitter_ms: {jitter_ms}}}"),
            Model::Normal {
                mean_ms,
                stddev_ms,
                max_ms,
            } => format!(
                "{{distribution: normal, mean_ms: {mean_ms}, stddev_ms: {stddev_ms}, max_ms: {max_ms}}}"
            ),
            Model::Pareto {
                scale_ms,
                shape,
                max_ms,
            } => format!(
                "{{distribution: pareto, scale_ms: {scale_ms}, shape: {shape}, max_ms: {max_ms}}}"
            ),
        };
        let err = if t.error_rate > 0.0 {
            format!(", error_rate: {:.6}", t.error_rate)
        } else {
            String::new()
        };
        let _ = writeln!(s, "      {}: {{latency: {lat}{err}}}", yaml_key(&t.tool));
    }
    s
}

/// The fitted server as the simulator's `servers` value (JSON), for a workload in memory.
pub fn servers_json(f: &Fit, name: &str) -> serde_json::Value {
    let tools: serde_json::Map<String, serde_json::Value> = f
        .tools
        .iter()
        .map(|t| {
            let mut lat = serde_json::to_value(&t.model).unwrap_or_default();
            if let Model::Fixed { .. } = t.model {
                if let Some(o) = lat.as_object_mut() {
                    o.remove("distribution");
                }
            }
            let mut m = serde_json::json!({"latency": lat});
            if t.error_rate > 0.0 {
                m["error_rate"] = t.error_rate.into();
            }
            (t.tool.clone(), m)
        })
        .collect();
    serde_json::json!([{"name": name, "concurrency": f.concurrency, "tools": tools}])
}

fn yaml_key(k: &str) -> String {
    if k.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !k.is_empty()
    {
        k.to_string()
    } else {
        format!("{k:?}")
    }
}

/// `text` (a workload) with its top-level `servers:` section replaced by `servers`.
pub fn with_servers(text: &str, servers: &str) -> String {
    let mut out = String::new();
    let mut skipping = false;
    for line in text.lines() {
        let top = !line.starts_with([' ', '\t', '#', '-']) && !line.is_empty();
        if top {
            skipping = line.starts_with("servers:");
        }
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push_str(servers);
    out
}

#[cfg(test)]
mod display_tests {
    use super::Model;

    #[test]
    fn a_model_reads_as_words_with_rounded_figures() {
        let m = Model::Pareto {
            scale_ms: 1.085_915_999_999_999_9,
            shape: 2.071_428_571_428_571,
            max_ms: 1234.5678,
        };
        assert_eq!(
            m.to_string(),
            "pareto, scale 1.09 ms, shape 2.07, at most 1.23 s"
        );
        let m = Model::Fixed {
            added_ms: 20.5,
            jitter_ms: 0.071_428_571_428_571_42,
        };
        assert_eq!(m.to_string(), "fixed 20.5 ms ± 0.0714 ms");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tool: &str, end: f64, ms: f64, ok: bool) -> CallObservation {
        CallObservation {
            at_ms: end,
            method: "tools/call".into(),
            tool: Some(tool.into()),
            outcome: if ok { Outcome::Ok } else { Outcome::Error },
            latency_ms: ms,
            correct: ok,
            timed_out: false,
            attempts: 1,
        }
    }

    #[test]
    fn a_steady_tool_is_fixed_a_spread_one_normal_a_heavy_tail_pareto() {
        let steady: Vec<_> = (0..100)
            .map(|i| call("a", i as f64 * 10.0, 20.0 + (i % 3) as f64 * 0.5, true))
            .collect();
        let f = fit(&steady);
        assert!(
            matches!(f.tools[0].model, Model::Fixed { added_ms, .. } if (added_ms - 20.5).abs() < 0.6)
        );
        let spread: Vec<_> = (0..100)
            .map(|i| call("b", i as f64 * 10.0, 10.0 + (i % 10) as f64 * 2.0, true))
            .collect();
        assert!(matches!(fit(&spread).tools[0].model, Model::Normal { .. }));
        let mut tail: Vec<_> = (0..100)
            .map(|i| call("c", i as f64 * 10.0, 5.0 + (i % 5) as f64, true))
            .collect();
        tail.extend((0..3).map(|i| call("c", 2000.0 + i as f64, 100.0, true)));
        assert!(matches!(fit(&tail).tools[0].model, Model::Pareto { .. }));
    }

    #[test]
    fn errors_concurrency_and_throughput_are_measured() {
        // Four calls of 100 ms overlapping in pairs over 300 ms; one failed.
        let cs = vec![
            call("a", 100.0, 100.0, true),
            call("a", 150.0, 100.0, false),
            call("a", 300.0, 100.0, true),
            call("a", 350.0, 100.0, true),
        ];
        let f = fit(&cs);
        assert_eq!(f.concurrency, 2);
        assert!((f.tools[0].error_rate - 0.25).abs() < 1e-12);
        assert!((f.span_s - 0.35).abs() < 1e-9);
        let y = servers_yaml(&f, "s");
        assert!(
            y.contains("concurrency: 2") && y.contains("error_rate: 0.250000"),
            "{y}"
        );
    }

    #[test]
    fn the_servers_section_is_replaced_not_duplicated() {
        let w = "name: w\nsteps:\n  - calls: [{tool: a}]\nservers:\n  - name: old\n    tools:\n      a: {latency: {added_ms: 1}}\nclient: {timeout_ms: 100}\n";
        let out = with_servers(w, "servers:\n  - name: new\n");
        assert!(
            !out.contains("old") && out.contains("name: new") && out.contains("client:"),
            "{out}"
        );
        assert_eq!(out.matches("servers:").count(), 1);
    }
}
