//! The fleet benchmark (issue 21 §5), run by `scripts/bench-fleet` (ignored in the suite):
//! 8 relays on 8 hosts (network namespaces, `netns_support`), the runner on a ninth.
//!
//! - **breach → every fault removed**: a stage puts an error fault on every relay; the gate
//!   breaches; from the journal, the breach's time to the last relay's confirmed removal
//!   (`fleet[].removed_ms`), and the removal alone (from its start, `rollbacks[0]`).
//! - **an unreachable relay's fault lapses**: faults on every relay, one host cut off its
//!   bridge, the run interrupted; from inside the cut host, the time from the cut to its
//!   relay listing no fault (polled every few ms, each poll a `brownout faults list`
//!   process: the resolution is a poll's length, printed), against the lease; and the
//!   seven reachable relays' removal, from the removal's start.
//!
//! Medians of `BENCH_RUNS` (default 5) runs each are printed for BENCHMARKS.md.

mod common;
#[path = "netns_support/mod.rs"]
mod netns;
#[path = "experiment_support/mod.rs"]
mod support;

use common::brownout;
use netns::Lab;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A gentle load (a machine shared by several builds must still answer the admin API in
/// time): one agent per session, 50 ms between steps.
const WORKLOAD: &str = "arrival: {mode: closed, concurrency: 6}\nthink_ms: 50\nsteps:\n  - calls: [{tool: search_incidents, arguments: {query: db}}]\n  - calls: [{tool: get_incident, arguments: {id: INC-1}}]\nservers:\n  - name: fixture\n    tools:\n      search_incidents: {latency: {added_ms: 2}}\n      get_incident: {latency: {added_ms: 2}}\n";

const HOSTS: usize = 8;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// An experiment on the first `n` relays of the lab.
fn experiment(
    lab: &Lab,
    dir: &std::path::Path,
    n: usize,
    seed: u64,
    gate: &str,
    secs: u32,
) -> String {
    std::fs::write(dir.join("workload.yaml"), WORKLOAD).expect("workload");
    std::fs::write(dir.join("policy.yaml"), "ladder: [\"100%\"]\n").expect("policy");
    let fleet: Vec<String> = lab
        .hosts
        .iter()
        .take(n)
        .map(|h| format!("{{url: \"{}\", admin: \"{}\"}}", h.url(), h.admin()))
        .collect();
    let text = format!(
        "title: fleet bench\nlabels: {{env: staging}}\ntarget: {{fleet: [{}], admin_token_env: FLEET_TOKEN}}\nload: {{workload: workload.yaml, sessions: 6}}\nmethod: [{{stage: all, duration: {secs}s, sessions: 100%}}]\nfaults: [{{id: down, kind: error, tools: [\"search_*\"], probability: 1.0}}]\ngates: [\"{gate}\"]\nrecovery: {{within: 5s}}\nseed: {seed}\n",
        fleet.join(", ")
    );
    let p = dir.join("fleet.yaml");
    std::fs::write(&p, text).expect("experiment");
    p.display().to_string()
}

fn run(lab: &Lab, dir: &std::path::Path, file: &str) -> std::process::Child {
    lab.in_runner(brownout())
        .args(["run", file, "--no-store", "--policy"])
        .arg(dir.join("policy.yaml"))
        .arg("--journal")
        .arg(dir.join("journal.json"))
        .env("FLEET_TOKEN", netns::TOKEN)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("brownout run")
}

fn removed(j: &serde_json::Value) -> Vec<f64> {
    j["fleet"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["removed_ms"].as_f64())
        .collect()
}

fn last(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NAN, f64::max)
}

fn wait_all_on(lab: &Lab) {
    let until = Instant::now() + Duration::from_secs(60);
    while !lab
        .faults(brownout())
        .iter()
        .all(|f| f.as_ref().is_some_and(|v| !v.is_empty()))
    {
        assert!(Instant::now() < until, "faults never on every relay");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
#[ignore = "a benchmark: scripts/bench-fleet runs it"]
fn bench_fleet_of_8() {
    let Some(lab) = Lab::new(HOSTS, brownout()) else {
        return;
    };
    let runs: u64 = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let lease = brownout::experiment::remote::LEASE.as_secs_f64() * 1000.0;
    let (mut breach_to_removed, mut removal_all, mut one_relay) =
        (Vec::new(), Vec::new(), Vec::new());
    let (mut lapse, mut removal_reachable, mut poll) = (Vec::new(), Vec::new(), Vec::new());
    for k in 0..runs {
        // A: every relay reachable; the gate breaches as soon as its window fills.
        let dir = common::tmp();
        let file = experiment(
            &lab,
            dir.path(),
            HOSTS,
            100 + k,
            "error_rate < 1% over 1s",
            60,
        );
        let mut child = run(&lab, dir.path(), &file);
        let code = support::wait_exit(&mut child, 120);
        let j = support::journal(dir.path());
        assert_eq!(code, 1, "not aborted: {}", j["reason"]);
        let r = removed(&j);
        assert_eq!(r.len(), HOSTS, "{}", j["fleet"]);
        let at = j["breach"]["at_ms"].as_f64().expect("breach");
        let start = j["rollbacks"][0]["start_ms"]
            .as_f64()
            .expect("removal start");
        breach_to_removed.push(last(&r) - at);
        removal_all.push(last(&r) - start);

        // The reference, in the same run: the same breach with a fleet of one relay.
        let dir = common::tmp();
        let file = experiment(&lab, dir.path(), 1, 300 + k, "error_rate < 1% over 1s", 60);
        let mut child = run(&lab, dir.path(), &file);
        let code = support::wait_exit(&mut child, 120);
        let j = support::journal(dir.path());
        assert_eq!(code, 1, "not aborted: {}", j["reason"]);
        let at = j["breach"]["at_ms"].as_f64().expect("breach");
        one_relay.push(last(&removed(&j)) - at);

        // B: one host cut off, then the run interrupted.
        let dir = common::tmp();
        let file = experiment(&lab, dir.path(), HOSTS, 200 + k, "p99 < 60s over 2s", 120);
        let mut child = run(&lab, dir.path(), &file);
        wait_all_on(&lab);
        let cut = HOSTS - 1;
        lab.link(cut, false);
        let t_cut = Instant::now();
        support::signal(&child, nix::sys::signal::Signal::SIGINT);
        let mut polls = 0u32;
        loop {
            let f = lab.faults_inside(cut, brownout());
            polls += 1;
            if f.as_ref().is_some_and(Vec::is_empty) {
                break;
            }
            assert!(t_cut.elapsed() < Duration::from_secs(30), "never lapsed");
        }
        let gone = t_cut.elapsed().as_secs_f64() * 1000.0;
        lapse.push(gone);
        poll.push(gone / f64::from(polls));
        support::wait_exit(&mut child, 60);
        lab.link(cut, true);
        let j = support::journal(dir.path());
        let r = removed(&j);
        assert_eq!(r.len(), HOSTS - 1, "{}", j["fleet"]);
        let start = j["rollbacks"][0]["start_ms"]
            .as_f64()
            .expect("removal start");
        removal_reachable.push(last(&r) - start);
        eprintln!(
            "run {k}: breach→removed {:.1} ms (removal {:.1} ms; one relay {:.1} ms); cut relay lapsed {:.0} ms after the cut, reachable removed in {:.1} ms",
            breach_to_removed[k as usize], removal_all[k as usize], one_relay[k as usize], gone, removal_reachable[k as usize]
        );
    }
    println!("fleet of {HOSTS} relays on {HOSTS} hosts, {runs} runs each (medians):");
    let (eight, one) = (median(breach_to_removed), median(one_relay));
    println!(
        "  breach → every fault removed (all reachable): {eight:.1} ms (removal alone {:.1} ms)",
        median(removal_all)
    );
    println!(
        "  reference, a fleet of one relay: {one:.1} ms; ratio 8 relays / 1 relay = {:.2}",
        eight / one
    );
    println!(
        "  one relay cut off: the 7 reachable removed in {:.1} ms from the removal's start",
        median(removal_reachable)
    );
    println!(
        "  the cut relay's fault lapsed {:.0} ms after the cut (lease {lease:.0} ms; poll resolution ≈ {:.0} ms)",
        median(lapse),
        median(poll)
    );
}
