//! A fleet of relays across hosts, not ports (issue 21 §1): each relay in its own network
//! namespace on a bridge, the runner in another, every check made from the relays' side
//! (their own `/faults`, through `brownout faults list --fleet`). Skipped, with a message on
//! stderr, where network namespaces cannot be made (not root, no `ip`).

mod common;
#[path = "netns_support/mod.rs"]
mod netns;
#[path = "experiment_support/mod.rs"]
mod support;

use common::brownout;
use netns::Lab;
use std::process::Child;
use std::time::{Duration, Instant};

/// A gentle load (a machine shared by several builds must still answer the admin API in
/// time): one agent per session, 50 ms between steps.
const WORKLOAD: &str = "arrival: {mode: closed, concurrency: 6}\nthink_ms: 50\nsteps:\n  - calls: [{tool: search_incidents, arguments: {query: db}}]\n  - calls: [{tool: get_incident, arguments: {id: INC-1}}]\nservers:\n  - name: fixture\n    tools:\n      search_incidents: {latency: {added_ms: 2}}\n      get_incident: {latency: {added_ms: 2}}\n";

/// One lab at a time: a lab is 3 relays, their servers and a runner, and a machine shared by
/// several builds must still answer each relay's admin API in time.
static ONE_LAB: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_lab() -> std::sync::MutexGuard<'static, ()> {
    ONE_LAB.lock().unwrap_or_else(|p| p.into_inner())
}

/// The relays' lease (`experiment::remote::LEASE`): a fault nobody renews lives this long.
const LEASE: Duration = brownout::experiment::remote::LEASE;

/// An experiment against `target` (a `fleet:` value) in `dir`; its path.
fn write_experiment(dir: &std::path::Path, target: &str, method: &str) -> String {
    std::fs::write(dir.join("workload.yaml"), WORKLOAD).expect("workload");
    std::fs::write(dir.join("policy.yaml"), "ladder: [\"100%\"]\n").expect("policy");
    let text = format!(
        "title: a fleet of relays\nlabels: {{env: staging}}\ntarget: {{fleet: {target}, admin_token_env: FLEET_TOKEN}}\nload: {{workload: workload.yaml, sessions: 6}}\nmethod: {method}\nfaults: [{{id: search-down, kind: error, tools: [\"search_*\"], probability: 1.0}}]\ngates: [\"p99 < 30s over 2s\"]\nseed: 11\n"
    );
    let p = dir.join("fleet.yaml");
    std::fs::write(&p, text).expect("experiment");
    p.display().to_string()
}

/// `brownout run` in the runner's namespace.
fn spawn_run(lab: &Lab, dir: &std::path::Path, file: &str) -> Child {
    lab.in_runner(brownout())
        .args(["run", file, "--no-store", "--policy"])
        .arg(dir.join("policy.yaml"))
        .arg("--journal")
        .arg(dir.join("journal.json"))
        .env("FLEET_TOKEN", netns::TOKEN)
        .current_dir(dir)
        .stdout(std::fs::File::create(dir.join("run.out")).expect("stdout file"))
        .stderr(std::fs::File::create(dir.join("run.err")).expect("stderr file"))
        .spawn()
        .expect("start brownout run")
}

fn listed(lab: &Lab) -> String {
    lab.hosts
        .iter()
        .map(|h| format!("{{url: \"{}\", admin: \"{}\"}}", h.url(), h.admin()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Wait (bounded) until `ok` holds for the fleet's faults as the relays list them.
fn wait_faults(
    lab: &Lab,
    dir: &std::path::Path,
    what: &str,
    secs: u64,
    ok: impl Fn(&[Option<Vec<String>>]) -> bool,
) -> Vec<Option<Vec<String>>> {
    let until = Instant::now() + Duration::from_secs(secs);
    loop {
        let f = lab.faults(brownout());
        if ok(&f) {
            return f;
        }
        assert!(
            Instant::now() < until,
            "{what}: never; last seen {f:?}; the run said: {}",
            run_err(dir)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn has(f: &Option<Vec<String>>) -> bool {
    f.as_ref().is_some_and(|v| !v.is_empty())
}

fn none(f: &Option<Vec<String>>) -> bool {
    f.as_ref().is_some_and(Vec::is_empty)
}

fn record<'a>(j: &'a serde_json::Value, admin: &str) -> &'a serde_json::Value {
    j["fleet"]
        .as_array()
        .and_then(|a| a.iter().find(|r| r["admin"] == admin))
        .unwrap_or_else(|| panic!("no record of {admin} in {}", j["fleet"]))
}

/// What the run printed (stdout, then stderr).
fn run_err(dir: &std::path::Path) -> String {
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
    format!("{}{}", read("run.out"), read("run.err"))
}

/// A lab of three relays (one lab at a time) and a folder for the run; `None`, and the test
/// skips (the lab says why on stderr), where network namespaces cannot be made.
fn lab_of_three() -> Option<(std::sync::MutexGuard<'static, ()>, Lab, tempfile::TempDir)> {
    let one = one_lab();
    let lab = Lab::new(3, brownout())?;
    Some((one, lab, common::tmp()))
}

/// `brownout run` of an experiment with `method` against the fleet `target` (`None`: the
/// lab's relays, listed), started in the runner's namespace.
fn start(lab: &Lab, dir: &std::path::Path, target: Option<String>, method: &str) -> Child {
    let target = target.unwrap_or_else(|| format!("[{}]", listed(lab)));
    let file = write_experiment(dir, &target, method);
    spawn_run(lab, dir, &file)
}

/// A run whose one long stage puts faults on every relay of the lab: started, and waited
/// for until every relay lists them.
fn faults_on_every_relay(lab: &Lab, dir: &std::path::Path) -> Child {
    let run = start(
        lab,
        dir,
        None,
        "[{stage: all, duration: 120s, sessions: 100%}]",
    );
    wait_faults(lab, dir, "faults on every relay", 60, |f| f.iter().all(has));
    run
}

#[test]
fn a_stage_at_34_percent_reaches_exactly_the_chosen_relay() {
    let Some((_one, lab, dir)) = lab_of_three() else {
        return;
    };
    let method = "[{stage: one-third, duration: 5s, sessions: 100%, relays: 34%}]";
    let mut run = start(&lab, dir.path(), None, method);
    let admins: Vec<String> = lab.hosts.iter().map(netns::Host::admin).collect();
    let refs: Vec<&str> = admins.iter().map(String::as_str).collect();
    let expected = brownout::experiment::fleet::chosen(11, 0.34, &refs);
    assert_eq!(expected.len(), 1);
    let seen = wait_faults(&lab, dir.path(), "faults on a relay", 60, |f| {
        f.iter().any(has)
    });
    let on: Vec<&String> = admins
        .iter()
        .zip(&seen)
        .filter(|(_, f)| has(f))
        .map(|(a, _)| a)
        .collect();
    assert_eq!(on, vec![&expected[0]], "faults went to {on:?}: {seen:?}");
    assert!(
        seen.iter().all(|f| f.is_some()),
        "a relay did not answer: {seen:?}"
    );
    let code = support::wait_exit(&mut run, 120);
    let j = support::journal(dir.path());
    assert_eq!(code, 0, "{}\n{}", j["reason"], run_err(dir.path()));
    support::valid_journal(&j);
    assert_eq!(j["target"]["kind"], "fleet");
    for a in &admins {
        let r = record(&j, a);
        let chosen = a == &expected[0];
        assert_eq!(
            r["stages"].as_array().map_or(0, Vec::len),
            usize::from(chosen),
            "{r}"
        );
        assert_eq!(r["removed_ms"].is_number(), chosen, "{r}");
    }
    // The load went round-robin over every relay: each carried calls.
    for i in 0..3 {
        assert!(lab.calls(i, brownout()) > 0, "relay {i} carried no call");
    }
    assert!(lab.faults(brownout()).iter().all(none));
}

#[test]
fn a_host_cut_off_does_not_stop_the_abort_on_the_others() {
    let Some((_one, lab, dir)) = lab_of_three() else {
        return;
    };
    let mut run = faults_on_every_relay(&lab, dir.path());
    lab.link(1, false);
    support::signal(&run, nix::sys::signal::Signal::SIGINT);
    // The reachable relays lose their faults while the runner still retries the cut one.
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let f = lab.faults_of(brownout(), &[0, 2]);
        if none(&f[0]) && none(&f[2]) {
            break;
        }
        assert!(
            Instant::now() < until,
            "the reachable relays kept their faults: {f:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        run.try_wait().expect("try_wait").is_none(),
        "the runner gave up on the cut relay before its lease ran out"
    );
    let inside = lab
        .faults_inside(1, brownout())
        .expect("the cut host answers inside");
    assert!(!inside.is_empty(), "the cut host lost its fault at once");
    let code = support::wait_exit(&mut run, 60);
    let j = support::journal(dir.path());
    assert_eq!(code, 4, "{}", j["reason"]);
    support::valid_journal(&j);
    let cut = lab.hosts[1].admin();
    assert!(
        j["reason"].as_str().unwrap_or("").contains(&cut),
        "{}",
        j["reason"]
    );
    let r = record(&j, &cut);
    assert!(r["removed_ms"].is_null(), "{r}");
    let since = r["unreachable_since_ms"].as_f64().expect("since");
    let lapsed = r["lease_lapsed_ms"].as_f64().expect("lapsed");
    assert!(
        (lapsed - since - LEASE.as_secs_f64() * 1000.0).abs() < 1.0,
        "{r}"
    );
    for i in [0, 2] {
        assert!(record(&j, &lab.hosts[i].admin())["removed_ms"].is_number());
    }
    // Back on the bridge: its fault has lapsed (within one lease of the last renewal).
    lab.link(1, true);
    let back = Instant::now();
    wait_faults(
        &lab,
        dir.path(),
        "the cut relay's fault gone",
        LEASE.as_secs() + 20,
        |f| f.iter().all(none),
    );
    eprintln!(
        "the cut relay was clean {:?} after its link came back",
        back.elapsed()
    );
}

#[test]
fn a_runner_killed_with_sigkill_leaves_no_fault_after_one_lease() {
    let Some((_one, lab, dir)) = lab_of_three() else {
        return;
    };
    let mut run = faults_on_every_relay(&lab, dir.path());
    run.kill().expect("SIGKILL");
    let _ = run.wait();
    let killed = Instant::now();
    let left = lab.faults(brownout());
    assert!(
        left.iter().any(has),
        "nothing left right after the kill: {left:?}"
    );
    wait_faults(
        &lab,
        dir.path(),
        "every fault lapsed",
        LEASE.as_secs() + 15,
        |f| f.iter().all(none),
    );
    eprintln!("every fault gone {:?} after SIGKILL", killed.elapsed());
}

#[test]
fn dns_discovery_finds_every_relay_and_follows_the_name() {
    let Some((_one, lab, dir)) = lab_of_three() else {
        return;
    };
    let a = |i: usize| lab.hosts[i].addr.clone();
    lab.hosts_file(&format!("{} relays.lab\n{} relays.lab\n", a(0), a(1)));
    let target = format!(
        "{{dns: relays.lab, admin_port: {}, mcp_port: {}, every: 200ms}}",
        netns::ADMIN_PORT,
        netns::MCP_PORT
    );
    let method = "[{stage: first, duration: 4s, sessions: 100%}, {stage: second, duration: 4s, sessions: 100%}]";
    let mut run = start(&lab, dir.path(), Some(target), method);
    let seen = wait_faults(
        &lab,
        dir.path(),
        "faults on the two resolved relays",
        60,
        |f| has(&f[0]) && has(&f[1]),
    );
    assert!(
        none(&seen[2]),
        "a relay the name does not list got faults: {seen:?}"
    );
    // The name now lists 2 and 3: 3 joins at the next stage, 1 is recorded as gone.
    lab.hosts_file(&format!("{} relays.lab\n{} relays.lab\n", a(1), a(2)));
    wait_faults(
        &lab,
        dir.path(),
        "faults on the relay that joined",
        60,
        |f| has(&f[2]),
    );
    // The load follows the name: its sessions spread over the relay that joined (it got
    // faults but no load before) and leave the one that left, each at its next call.
    let until = std::time::Instant::now() + Duration::from_secs(60);
    while lab.calls(2, brownout()) == 0 {
        assert!(
            std::time::Instant::now() < until,
            "the relay that joined got no load: {}",
            run_err(dir.path())
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let left_then = lab.calls(0, brownout());
    let code = support::wait_exit(&mut run, 120);
    // Six sessions: at most a call or two each still on their way when they moved.
    let left_after = lab.calls(0, brownout()).saturating_sub(left_then);
    assert!(
        left_after <= 12,
        "the relay that left took {left_after} more calls"
    );
    let j = support::journal(dir.path());
    assert_eq!(code, 0, "{}\n{}", j["reason"], run_err(dir.path()));
    support::valid_journal(&j);
    let first = record(&j, &lab.hosts[0].admin());
    assert!(first["left_ms"].is_number(), "{first}");
    assert_eq!(first["stages"], serde_json::json!(["first"]), "{first}");
    let joined = record(&j, &lab.hosts[2].admin());
    assert_eq!(joined["stages"], serde_json::json!(["second"]), "{joined}");
    assert!(
        joined["joined_ms"].as_f64().unwrap_or(0.0) > 0.0,
        "{joined}"
    );
    assert!(lab.faults(brownout()).iter().all(none));
}
