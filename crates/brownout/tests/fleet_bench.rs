//! The fleet benchmark (issue 21 §5), run by `scripts/bench-fleet` (ignored in the suite):
//! 8 relays on 8 hosts (network namespaces, `netns_support`), the runner on a ninth.
//!
//! - **breach → every fault removed**: a stage puts an error fault on every relay; the gate
//!   breaches; from the journal, the breach's time to the last relay's confirmed removal
//!   (`fleet[].removed_ms`), and the removal alone (from its start, `rollbacks[0]`).
//! - **an unreachable relay's fault lapses**: faults on every relay, one host cut off its
//!   bridge, the run interrupted; from inside the cut host (curl in a loop on its relay's
//!   `/faults`, a loopback request per poll: the resolution is a poll's length, printed),
//!   the time from the cut — and from the relay's last renewal, as the runner's journal
//!   records it — to its relay listing no fault, against the lease; and the seven reachable
//!   relays' removal, from the removal's start.
//!
//! - **the reference**, measured in the same run: the same breach with a fleet of one relay,
//!   so the ratio says what the other seven cost (removal on every relay at once: ≈ 1).
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

fn unix_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

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
    let (mut lapse_renewal, mut first_removed) = (Vec::new(), Vec::new());
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
        first_removed.push(r.iter().copied().fold(f64::NAN, f64::min) - start);

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
        let cut_unix_ms = unix_ms();
        // Inside the cut host, curl asks its relay until it lists no fault, then prints the
        // time (a poll is one loopback request: a few ms).
        let watch = format!(
            "n=0; while curl -s -m 2 -H 'Authorization: Bearer {}' {}/faults | grep -q '\"id\"'; do n=$((n+1)); done; echo $(date +%s%3N) $n",
            netns::TOKEN,
            lab.hosts[cut].admin()
        );
        let watcher = std::process::Command::new("ip")
            .args([
                "netns",
                "exec",
                &lab.hosts[cut].ns,
                "timeout",
                "30",
                "sh",
                "-c",
                &watch,
            ])
            .stdout(Stdio::piped())
            .spawn()
            .expect("watch the cut relay");
        support::signal(&child, nix::sys::signal::Signal::SIGINT);
        let out = watcher.wait_with_output().expect("watcher");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let mut it = text.split_whitespace();
        let gone_unix_ms: f64 = it.next().and_then(|x| x.parse().ok()).expect("a time");
        let polls: f64 = it.next().and_then(|x| x.parse().ok()).unwrap_or(1.0);
        support::wait_exit(&mut child, 60);
        lab.link(cut, true);
        let j = support::journal(dir.path());
        let cut_admin = lab.hosts[cut].admin();
        let rec = j["fleet"]
            .as_array()
            .and_then(|a| a.iter().find(|r| r["admin"] == cut_admin.as_str()))
            .expect("the cut relay's record");
        let renewed_unix_ms = j["started_unix_ms"].as_f64().unwrap_or(0.0)
            + rec["unreachable_since_ms"]
                .as_f64()
                .expect("unreachable since");
        let gone = gone_unix_ms - cut_unix_ms;
        lapse.push(gone);
        lapse_renewal.push(gone_unix_ms - renewed_unix_ms);
        poll.push(gone / polls.max(1.0));
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
        "  breach → every fault removed (all reachable): {eight:.1} ms (removal alone {:.1} ms; first relay confirmed at {:.1} ms)",
        median(removal_all),
        median(first_removed)
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
        "  the cut relay's fault lapsed {:.0} ms after the cut, {:.0} ms after its last renewal (lease {lease:.0} ms; poll ≈ {:.0} ms)",
        median(lapse),
        median(lapse_renewal),
        median(poll)
    );
}
