//! What the benches read about a process from /proc (CPU time, memory) and the order
//! statistics they report; shared by the stdio and HTTP relay benches.
#![allow(dead_code)]

/// The brownout binary a bench drives: `$BROWNOUT_BENCH_EXE` when set (to measure another
/// build, e.g. the previous commit's, with the same bench in the same run), else this
/// build's.
pub fn brownout_exe() -> String {
    std::env::var("BROWNOUT_BENCH_EXE")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_brownout").to_string())
}

/// The `p` quantile (0..=1) of sorted samples.
pub fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// CPU time a process has used, in microseconds (0 if it cannot be read): the sum of its
/// threads' run time in /proc/PID/task/*/schedstat (nanoseconds), else utime + stime from
/// /proc/PID/stat, which counts in 10 ms ticks — too coarse for a per-call figure (0.8 µs
/// a tick over 12,000 calls). The relay's threads live as long as it does, so the live
/// threads' sum is the whole.
pub fn cpu_us(pid: u32) -> f64 {
    schedstat_us(pid).unwrap_or_else(|| stat_us(pid))
}

fn schedstat_us(pid: u32) -> Option<f64> {
    let mut ns = 0u64;
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let s = std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok()?;
        ns += s.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    (ns > 0).then(|| ns as f64 / 1000.0)
}

fn stat_us(pid: u32) -> f64 {
    let ticks = 100.0; // USER_HZ on Linux
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let after = s.rsplit_once(')')?.1;
            let f: Vec<&str> = after.split_whitespace().collect();
            Some((f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?) / ticks * 1e6)
        })
        .unwrap_or(0.0)
}

/// A `kB` field of /proc/PID/status (`VmRSS:`, `VmHWM:`; `Threads:` is a count).
pub fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Peak resident set size.
pub fn peak_rss_kib(pid: u32) -> u64 {
    status_kib(pid, "VmHWM:")
}
