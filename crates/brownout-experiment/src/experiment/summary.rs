//! The summary `brownout run` prints at the end (the journal has everything).

use super::journal::Journal;
use brownout_core::human::{ms, pct};
use std::path::Path;

pub fn print(j: &Journal, journal: Option<&Path>) {
    let title = j.experiment["title"].as_str().unwrap_or("");
    println!("experiment: {title}");
    println!("status: {:?} — {}", j.status, j.reason);
    if let Some(b) = &j.baseline {
        println!(
            "baseline: {} calls, error rate {}, p99 {}",
            b.slis.calls,
            pct(b.slis.error_rate),
            b.slis.p99_ms.map_or("—".into(), ms)
        );
    }
    for s in &j.stages {
        let inj: u64 = s.injections.values().sum();
        println!(
            "stage {} ({} of sessions, {}): {} calls, error rate {}, {} injection(s){}",
            s.stage,
            pct(s.share),
            ms(s.end_ms - s.start_ms),
            s.slis.calls,
            pct(s.slis.error_rate),
            inj,
            if s.completed { "" } else { " — stopped" }
        );
        if let Some(p) = &s.prediction {
            println!(
                "  predicted: error rate {}, p95 {}, gates {}{}",
                brownout_core::human::pct(p.slis.error_rate),
                p.slis.p95_ms.map_or("—".into(), brownout_core::human::ms),
                p.verdict,
                p.error.as_ref().map_or(String::new(), |e| format!(
                    " ({})",
                    match (e.verdict_right, e.error_rate_right) {
                        (true, true) => "right",
                        (true, false) =>
                            "WRONG: the gates' verdict matched, the error rate did not",
                        (false, _) => "WRONG",
                    }
                ))
            );
        }
    }
    if let Some(sl) = j.silent.filter(|s| s.altered > 0) {
        println!("silent failures: {}", sl.headline());
    }
    if let Some(b) = &j.breach {
        println!(
            "breach: `{}` at {}; the last fault left {} later",
            b.gate,
            ms(b.at_ms),
            ms(b.abort_latency_ms)
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
            Some(m) => println!("recovery: MTTR {}", ms(m)),
            None => println!("recovery: not recovered"),
        }
    }
    if let Some(r) = j.robustness {
        println!(
            "robustness ρ {}{} ({})",
            if r > 0.0 { "+" } else { "" },
            brownout_core::human::num(r),
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
