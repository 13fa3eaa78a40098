//! The target's own health while a run goes on, for the `target_rss` and `target_cpu` gates
//! (docs/gates.md#target-health): a run aborts before the host does.
//!
//! - a stdio target (`target.command`): every process this runner started and their
//!   descendants — the servers behind the relay, one per session — read from /proc: resident
//!   memory summed (statm × page size), CPU time summed (utime + stime), its rate over the
//!   last reading as a share of one core;
//! - any target with `target.health.prometheus`: that text-format endpoint, the RSS metric
//!   summed over its series, the CPU counter's rate.
//!
//! Read every half second and passed to the gates as [`Event::Reading`]; a reading that
//! fails is skipped (a gate with no reading holds as insufficient). Bounded: at most
//! [`MAX_PROCS`] processes walked, at most [`MAX_BODY`] bytes of metrics read.

use super::loadgen::Event;
use super::spec::{Health, Target};
use brownout_core::slo::{Gate, Sli};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How often the health is read.
pub const EVERY: Duration = Duration::from_millis(500);
/// The most processes of a tree read.
pub const MAX_PROCS: usize = 4096;
/// The most bytes of a metrics page read.
pub const MAX_BODY: usize = 4 << 20;

/// Whether a gate's SLI can be read for this target: a stdio target or a health endpoint.
pub fn readable(g: &Gate, t: &Target) -> Result<(), String> {
    if !g.sli.is_reading() || starts_servers(t) || t.health.is_some() {
        return Ok(());
    }
    Err(format!(
        "`{}` reads the target's own health: a stdio target (`target.command`) is read from /proc, any other needs `target.health: {{prometheus: URL}}` (docs/gates.md#target-health)",
        g.sli
    ))
}

/// Whether this process starts the target's servers (a `command`, or one of `servers`):
/// they are its children, read from /proc.
fn starts_servers(t: &Target) -> bool {
    t.command.is_some()
        || t.servers
            .as_ref()
            .is_some_and(|s| s.values().any(|s| s.command.is_some()))
}

/// Where readings come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// The descendants of this process (the stdio servers it started).
    Tree,
    Prometheus(Health),
}

impl Source {
    /// The source for a target, if a gate needs one.
    pub fn for_target(t: &Target, gates: &[Gate]) -> Option<Source> {
        if !gates.iter().any(|g| g.sli.is_reading()) {
            return None;
        }
        match (&t.health, starts_servers(t)) {
            (Some(h), _) => Some(Source::Prometheus(h.clone())),
            (None, true) => Some(Source::Tree),
            _ => None,
        }
    }
}

/// One reading: resident bytes and CPU seconds so far.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    pub rss_bytes: f64,
    pub cpu_seconds: f64,
}

/// Read the process tree under `root` (itself excluded) from /proc.
pub fn read_tree(root: u32) -> Option<Reading> {
    let mut parent: HashMap<u32, u32> = HashMap::new();
    for e in std::fs::read_dir("/proc").ok()?.flatten().take(1 << 16) {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Some((ppid, _)) = stat(pid) {
            parent.insert(pid, ppid);
        }
    }
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() && tree.len() < MAX_PROCS {
        let p = tree[i];
        tree.extend(parent.iter().filter(|(_, pp)| **pp == p).map(|(c, _)| *c));
        i += 1;
    }
    // SAFETY: sysconf reads a constant of the system; no memory is passed.
    let (page, ticks) = unsafe {
        (
            libc::sysconf(libc::_SC_PAGESIZE),
            libc::sysconf(libc::_SC_CLK_TCK),
        )
    };
    let (page, ticks) = (page.max(1) as f64, ticks.max(1) as f64);
    let mut r = Reading {
        rss_bytes: 0.0,
        cpu_seconds: 0.0,
    };
    for pid in tree.into_iter().skip(1) {
        let Some((_, cpu_ticks)) = stat(pid) else {
            continue;
        };
        let pages = std::fs::read_to_string(format!("/proc/{pid}/statm"))
            .ok()
            .and_then(|s| {
                s.split_whitespace()
                    .nth(1)
                    .and_then(|x| x.parse::<f64>().ok())
            })
            .unwrap_or(0.0);
        r.rss_bytes += pages * page;
        r.cpu_seconds += cpu_ticks as f64 / ticks;
    }
    Some(r)
}

/// A process's parent and CPU ticks (utime + stime) from /proc/PID/stat.
fn stat(pid: u32) -> Option<(u32, u64)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: fields start after the last `)`.
    let rest = &s[s.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(0) ppid(1) … utime(11) stime(12).
    let ppid = f.get(1)?.parse().ok()?;
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some((ppid, utime + stime))
}

/// The sum of a metric's series in a Prometheus text page (`None`: no such series).
pub fn metric(page: &str, name: &str) -> Option<f64> {
    let mut sum = None;
    for line in page.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let Some(rest) = line.strip_prefix(name) else {
            continue;
        };
        let rest = match rest.chars().next() {
            Some('{') => match rest.find('}') {
                Some(i) => &rest[i + 1..],
                None => continue,
            },
            Some(c) if c.is_whitespace() => rest,
            _ => continue,
        };
        if let Some(v) = rest
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
        {
            if v.is_finite() {
                sum = Some(sum.unwrap_or(0.0) + v);
            }
        }
    }
    sum
}

async fn read_prometheus(h: &Health, http: &reqwest::Client) -> Option<Reading> {
    let mut resp = http
        .get(&h.prometheus)
        .timeout(Duration::from_secs(2))
        .send()
        .await
        .ok()?;
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.ok()? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_BODY {
            return None;
        }
    }
    let page = String::from_utf8_lossy(&body);
    Some(Reading {
        rss_bytes: metric(&page, &h.rss_metric).unwrap_or(f64::NAN),
        cpu_seconds: metric(&page, &h.cpu_metric).unwrap_or(f64::NAN),
    })
}

/// Read `source` every [`EVERY`] until the receiver goes or the task is aborted, and send
/// the readings.
pub fn feed(source: Source, tx: mpsc::UnboundedSender<Event>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let http = reqwest::Client::new();
        let root = std::process::id();
        let mut last: Option<(Instant, f64)> = None;
        let mut tick = tokio::time::interval(EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let r = match &source {
                Source::Tree => tokio::task::spawn_blocking(move || read_tree(root))
                    .await
                    .ok()
                    .flatten(),
                Source::Prometheus(h) => read_prometheus(h, &http).await,
            };
            let Some(r) = r else { continue };
            let now = Instant::now();
            if r.rss_bytes.is_finite() {
                let e = Event::Reading {
                    sli: Sli::TargetRss,
                    value: r.rss_bytes,
                };
                if tx.send(e).is_err() {
                    return;
                }
            }
            if r.cpu_seconds.is_finite() {
                if let Some((t0, c0)) = last {
                    let wall = now.duration_since(t0).as_secs_f64();
                    // A process that ended takes its CPU time with it: never below zero.
                    let share = ((r.cpu_seconds - c0) / wall.max(1e-3)).max(0.0);
                    if tx
                        .send(Event::Reading {
                            sli: Sli::TargetCpu,
                            value: share,
                        })
                        .is_err()
                    {
                        return;
                    }
                }
                last = Some((now, r.cpu_seconds));
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_metric_is_summed_over_its_series_and_not_confused_with_longer_names() {
        let page = "# HELP process_resident_memory_bytes x\n\
process_resident_memory_bytes 1000\n\
process_resident_memory_bytes_max 99999\n\
process_resident_memory_bytes{pod=\"a\"} 24\n\
process_cpu_seconds_total{pod=\"a b\"} 1.5 1700000000\n";
        assert_eq!(metric(page, "process_resident_memory_bytes"), Some(1024.0));
        assert_eq!(metric(page, "process_cpu_seconds_total"), Some(1.5));
        assert_eq!(metric(page, "absent"), None);
    }

    #[test]
    fn the_tree_of_a_child_is_read_from_proc() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("sleep");
        let r = read_tree(std::process::id()).expect("reading");
        let _ = child.kill();
        let _ = child.wait();
        assert!(r.rss_bytes > 0.0, "{r:?}");
        assert!(r.cpu_seconds >= 0.0);
    }
}
