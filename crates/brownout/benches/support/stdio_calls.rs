//! The calls the stdio benches make through a relayed (or direct) stdio server: one
//! `tools/call echo`, a latency sample of sequential calls after a warm-up, and throughput
//! with several calls in flight. Shared by the stdio relay and `--otlp` benches.
#![allow(dead_code)]

use brownout::client::{Reply, StdioClient};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Calls made before a latency sample, not counted in it.
pub const WARM_UP: usize = 200;

/// One `tools/call echo`; panics (failing the bench) if it is not answered with a result.
pub async fn call(c: &StdioClient, i: usize) {
    let r = c
        .request(
            "tools/call",
            json!({"name": "echo", "arguments": {"message": format!("m{i}")}}),
            Duration::from_secs(10),
        )
        .await;
    assert!(matches!(r, Reply::Result(_)), "call failed: {r:?}");
}

/// Initialises `c`, makes `WARM_UP` calls, then `calls` sequential ones: their round trips
/// in µs, sorted.
pub async fn latency_sample(c: &StdioClient, calls: usize) -> Vec<f64> {
    assert!(matches!(
        c.initialize(Duration::from_secs(10)).await,
        Reply::Result(_)
    ));
    for i in 0..WARM_UP {
        call(c, i).await;
    }
    timed_calls(c, calls, Duration::ZERO).await
}

/// `calls` sequential calls, each `gap` after the last answer (none: back to back): their
/// round trips in µs, sorted. With a gap (an agent thinks between calls) every process on
/// the path has gone idle when a call comes, which back-to-back calls never let happen.
pub async fn timed_calls(c: &StdioClient, calls: usize, gap: Duration) -> Vec<f64> {
    let mut rtts = Vec::with_capacity(calls);
    for i in 0..calls {
        if !gap.is_zero() {
            tokio::time::sleep(gap).await;
        }
        let t = Instant::now();
        call(c, i).await;
        rtts.push(t.elapsed().as_secs_f64() * 1e6);
    }
    rtts.sort_by(f64::total_cmp);
    rtts
}

/// Calls per second with `in_flight` callers sharing `total` calls.
pub async fn throughput(c: Arc<StdioClient>, total: usize, in_flight: usize) -> f64 {
    let t = Instant::now();
    let per = total / in_flight;
    let tasks: Vec<_> = (0..in_flight)
        .map(|w| {
            let c = Arc::clone(&c);
            tokio::spawn(async move {
                for i in 0..per {
                    call(&c, w * per + i).await;
                }
            })
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
    (per * in_flight) as f64 / t.elapsed().as_secs_f64()
}
