//! Benchmark: what SLO gates cost per call — `observe_call` then `tick` (the simulator's
//! pattern) and `observe_call` then `evaluate` (the live runner's), for each gate alone and
//! for four together, over 2,000,000 synthetic calls at 20,000 calls per second.
//!
//! Run: `cargo bench -p brownout-sim --bench gates`.

use brownout_core::event::Outcome;
use brownout_core::slo::{CallObservation, Gate, GateWatch};
use std::time::Instant;

const CALLS: u32 = 2_000_000;

fn run(gates: &[&str], states: bool) -> f64 {
    let gates = gates
        .iter()
        .map(|g| Gate::parse(g).unwrap_or_else(|e| panic!("{g}: {e}")))
        .collect();
    let mut watch = GateWatch::new(gates);
    let tools = ["get_logs", "get_metrics", "get_traces"];
    let mut c = CallObservation {
        at_ms: 0.0,
        method: "tools/call".into(),
        tool: Some(tools[0].into()),
        outcome: Outcome::Ok,
        latency_ms: 0.0,
        correct: true,
        timed_out: false,
        attempts: 1,
    };
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut held = 0usize;
    let t = Instant::now();
    for i in 0..CALLS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.at_ms = f64::from(i) / 20.0;
        c.latency_ms = 5.0 + (x % 10_000) as f64 / 100.0;
        c.outcome = if x.is_multiple_of(50) {
            Outcome::Error
        } else {
            Outcome::Ok
        };
        c.tool = Some(tools[(x % 3) as usize].into());
        watch.observe_call(&c);
        if states {
            held += watch.evaluate(c.at_ms).len();
        } else {
            held += usize::from(watch.tick(c.at_ms));
        }
    }
    let s = t.elapsed().as_secs_f64();
    std::hint::black_box(held);
    s * 1e9 / f64::from(CALLS)
}

fn main() {
    let cases: [(&str, &[&str]); 6] = [
        ("no gate", &[]),
        ("error_rate over 10s", &["error_rate < 1% over 10s"]),
        ("p99 over 10s", &["p99 < 800ms over 10s"]),
        (
            "eta{tool} over 1000 calls",
            &["eta{tool=\"get_logs\"} >= 99% over 1000 calls"],
        ),
        ("max over 500 calls", &["max < 1s over 500 calls"]),
        (
            "four gates",
            &[
                "error_rate < 1% over 10s",
                "p99 < 800ms over 10s",
                "eta{tool=\"get_logs\"} >= 99% over 1000 calls",
                "max < 1s over 500 calls",
            ],
        ),
    ];
    println!(
        "{:<28} {:>16} {:>20}",
        "gates", "ns/call (tick)", "ns/call (evaluate)"
    );
    for (name, gates) in cases {
        println!(
            "{name:<28} {:>16.0} {:>20.0}",
            run(gates, false),
            run(gates, true)
        );
    }
}
