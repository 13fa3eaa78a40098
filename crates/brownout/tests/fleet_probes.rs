//! Steady-state probes of a fleet sample every relay, not only the first (issue 21 §1): a
//! probe's samples go to the relays in turn, seen from each relay's own status. Skipped,
//! with a message on stderr, where network namespaces cannot be made (not root, no `ip`).

mod common;
#[path = "netns_support/mod.rs"]
mod netns;
#[path = "experiment_support/mod.rs"]
mod support;

use common::brownout;
use netns::Lab;

/// The load calls only `search_incidents`; the probe calls only `get_incident`, so each
/// relay's count of `get_incident` calls is the probe's samples it received.
const WORKLOAD: &str = "arrival: {mode: closed, concurrency: 3}\nthink_ms: 50\nsteps:\n  - calls: [{tool: search_incidents, arguments: {query: db}}]\nservers:\n  - name: fixture\n    tools:\n      search_incidents: {latency: {added_ms: 2}}\n";

#[test]
fn a_fleets_probe_samples_every_relay_in_turn() {
    let Some(lab) = Lab::new(3, brownout()) else {
        return;
    };
    let dir = common::tmp();
    let d = dir.path();
    std::fs::write(d.join("workload.yaml"), WORKLOAD).expect("workload");
    std::fs::write(d.join("policy.yaml"), "ladder: [\"100%\"]\n").expect("policy");
    let fleet = lab
        .hosts
        .iter()
        .map(|h| format!("{{url: \"{}\", admin: \"{}\"}}", h.url(), h.admin()))
        .collect::<Vec<_>>()
        .join(", ");
    let text = format!(
        "title: probes over a fleet\nlabels: {{env: staging}}\ntarget: {{fleet: [{fleet}], admin_token_env: FLEET_TOKEN}}\nsteady_state:\n  - probe: mcp\n    call: {{tool: get_incident, arguments: {{id: INC-1}}}}\n    samples: 6\nload: {{workload: workload.yaml, sessions: 3}}\nmethod: [{{stage: all, duration: 1s, sessions: 100%}}]\nfaults: [{{id: slow, kind: latency, tools: [search_incidents], added_ms: 1}}]\ngates: [\"p99 < 30s over 2s\"]\nseed: 5\n"
    );
    std::fs::write(d.join("fleet.yaml"), text).expect("experiment");
    let out = lab
        .in_runner(brownout())
        .args(["run", "fleet.yaml", "--no-store", "--policy", "policy.yaml"])
        .args(["--journal", "journal.json"])
        .env("FLEET_TOKEN", netns::TOKEN)
        .current_dir(d)
        .output()
        .expect("brownout run");
    let j = support::journal(d);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        j["reason"],
        String::from_utf8_lossy(&out.stderr)
    );
    let before = &j["steady_state_before"]["probes"][0];
    assert_eq!(
        before["samples"].as_array().map_or(0, Vec::len),
        6,
        "{before}"
    );
    // Six samples before and six after, two per relay each time.
    for i in 0..3 {
        assert_eq!(
            lab.tool_calls(i, brownout(), "get_incident"),
            4,
            "relay {i}: the probe's samples it received"
        );
    }
}
