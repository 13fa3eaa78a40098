//! The summary `brownout run` prints at the end (the journal has everything).

use super::journal::Journal;
use std::path::Path;

pub fn print(j: &Journal, journal: Option<&Path>) {
    let title = j.experiment["title"].as_str().unwrap_or("");
    println!("experiment: {title}");
    println!("status: {:?} — {}", j.status, j.reason);
    if let Some(b) = &j.baseline {
        println!(
            "baseline: {} calls, error rate {:.2}%, p99 {}",
            b.slis.calls,
            b.slis.error_rate * 100.0,
            b.slis.p99_ms.map_or("—".into(), |v| format!("{v:.1} ms"))
        );
    }
    for s in &j.stages {
        let inj: u64 = s.injections.values().sum();
        println!(
            "stage {} ({:.0}% of sessions): {} calls, error rate {:.2}%, {} injection(s){}",
            s.stage,
            s.share * 100.0,
            s.slis.calls,
            s.slis.error_rate * 100.0,
            inj,
            if s.completed { "" } else { " — stopped" }
        );
        if let Some(p) = &s.prediction {
            println!(
                "  predicted: error rate {:.2}%, p95 {}, gates {}{}",
                p.slis.error_rate * 100.0,
                p.slis.p95_ms.map_or("—".into(), |v| format!("{v:.1} ms")),
                p.verdict,
                p.error.as_ref().map_or(String::new(), |e| format!(
                    " ({})",
                    if e.verdict_right { "right" } else { "WRONG" }
                ))
            );
        }
    }
    if let Some(sl) = j.silent.filter(|s| s.altered > 0) {
        println!("silent failures: {}", sl.headline());
    }
    if let Some(b) = &j.breach {
        println!(
            "breach: `{}` at {:.0} ms; the last fault left {:.1} ms later",
            b.gate, b.at_ms, b.abort_latency_ms
        );
    }
    for r in &j.rollbacks {
        println!(
            "rollback: {} — {}",
            r.action,
            if r.ok { "ok" } else { &r.detail }
        );
    }
    if let Some(r) = &j.recovery {
        match r.mttr_ms {
            Some(m) => println!("recovery: MTTR {:.0} ms", m),
            None => println!("recovery: not recovered"),
        }
    }
    if let Some(r) = j.robustness {
        println!(
            "robustness ρ {r:+.3} ({})",
            if r > 0.0 {
                "every gate held, with room"
            } else {
                "a gate's window broke its limit"
            }
        );
    }
    if let Some(d) = &j.detection {
        println!("probes: {}", super::detect::one_line(d));
    }
    // A GameDay's run: its journal is in the store (the line after this says where).
    if let Some(journal) = journal.filter(|_| j.gameday_id.is_none()) {
        println!("journal: {}", journal.display());
    }
}
