//! Chained load, live: `brownout load` plays an on-call agent (get_incident → restart_service
//! with `service: {from: get_incident, path: /service}`, beside a search whose result no step
//! takes) against brownout's fixture through `brownout proxy`, with `corrupt` on the
//! incident's service and on the search. The relay's taint events show what the agent's
//! policy did: a trusting agent propagates every corrupted service, a verifying one notices
//! them and propagates none. And the simulator's estimate of silent_rate for the same
//! workload and plan is within 0.15 of the relay's measured figure.

mod common;
#[path = "common/load.rs"]
mod support;

use brownout_sim::{simulate, SimOptions, Workload};
use common::{events, events_at, fixture, through, tmp};
use serde_json::Value;
use support::{opts, play, stdio};

const TASKS: u64 = 200;

const PLAN: &str = "seed: 11
faults:
  - {id: wrong-service, kind: corrupt, tools: [get_incident], path: /service, probability: 0.1}
  - {id: noisy-search, kind: corrupt, tools: [search_incidents], probability: 0.3}
";

fn workload(policy: &str) -> Workload {
    let text = format!(
        "tasks: {TASKS}
steps:
  - calls:
      - {{tool: get_incident, arguments: {{id: INC-1042}}}}
      - {{tool: search_incidents, arguments: {{query: db}}}}
  - calls:
      - tool: restart_service
        arguments: {{service: {{from: get_incident, path: /service}}}}
servers:
  - name: fixture
    tools:
      get_incident: {{latency: {{added_ms: 1}}}}
      search_incidents: {{latency: {{added_ms: 1}}}}
      restart_service: {{latency: {{added_ms: 1}}}}
client:
  agent: {{policy: {policy}}}
"
    );
    Workload::from_str_live(&text, "w.yaml").unwrap_or_else(|e| panic!("{e}"))
}

fn taint(ev: &[Value], class: &str) -> Vec<Value> {
    ev.iter()
        .filter(|e| e["type"] == "taint" && e["class"] == class)
        .cloned()
        .collect()
}

/// Play the workload through the relay; its summary and the relay's taint events.
async fn live(policy: &str) -> (brownout::load::LoadSummary, Vec<Value>) {
    let dir = tmp();
    let (summary, _) = play(
        &workload(policy),
        stdio(through(dir.path(), PLAN, &fixture())),
        opts(1, None),
    )
    .await;
    // The relay writes its events as it goes and its last ones when its stdin closes,
    // which the load's end does.
    (summary, events(dir.path()))
}

fn rate(ev: &[Value], class: &str) -> f64 {
    let altered = taint(ev, "altered").len();
    assert!(altered > 0);
    taint(ev, class).len() as f64 / altered as f64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusting_load_propagates_corrupted_services_and_a_verifying_one_notices_them() {
    let (trust, ev) = live("trust").await;
    assert_eq!(trust.tasks, TASKS, "{trust:?}");
    assert_eq!(trust.calls, 3 * TASKS, "no extra reads under trust");
    assert_eq!(trust.rereads, 0);
    let altered = taint(&ev, "altered");
    let propagated = taint(&ev, "propagated");
    let wrong_service = altered
        .iter()
        .filter(|e| e["fault"] == "wrong-service")
        .count();
    assert!(wrong_service > 12, "{wrong_service} of {TASKS}");
    // Every corrupted service was acted on, by restart_service, and nothing else was.
    assert_eq!(propagated.len(), wrong_service, "{propagated:?}");
    for p in &propagated {
        assert_eq!(p["from_tool"], "get_incident");
        assert_eq!(p["to_tool"], "restart_service");
        assert_eq!(p["to_pointer"], "/service");
    }
    // Under trust the agent reads nothing twice. The next task's identical search looks to
    // the relay like a re-fetch of the last one (same tool, same arguments, same session),
    // so a corrupted search result no step took may be classed `noticed`; an incident never.
    let noticed = taint(&ev, "noticed");
    assert!(
        noticed.iter().all(|n| n["fault"] == "noisy-search"),
        "{noticed:?}"
    );
    let live_trust = rate(&ev, "propagated");

    let (verify, ev) = live("verify").await;
    assert_eq!(verify.tasks, TASKS);
    assert!(
        verify.rereads >= TASKS,
        "two reads of every incident: {verify:?}"
    );
    assert_eq!(verify.calls, 3 * TASKS + verify.rereads - verify.gave_up);
    // What verify still acts on: two reads corrupted the same way (`corrupt` changes a value
    // deterministically), agreeing on the wrong service. Far fewer than under trust.
    let propagated = taint(&ev, "propagated").len();
    let noticed = taint(&ev, "noticed");
    let wrong_service = taint(&ev, "altered")
        .iter()
        .filter(|e| e["fault"] == "wrong-service")
        .count();
    assert!(wrong_service > 12);
    assert!(
        propagated * 2 < wrong_service,
        "{propagated} of {wrong_service}"
    );
    // Most corrupted incidents were read again (noticed); the rest agreed with another
    // corrupted read and were acted on.
    let noticed_incidents = noticed
        .iter()
        .filter(|n| n["fault"] == "wrong-service" && n["to_tool"] == "get_incident")
        .count();
    assert!(
        noticed_incidents * 2 > wrong_service,
        "{noticed_incidents} of {wrong_service}"
    );
    assert!(noticed_incidents + propagated >= wrong_service - verify.gave_up as usize);
    let live_verify = rate(&ev, "propagated");

    // The estimate beside the actual: the simulator's silent_rate for the same workload and
    // plan, within 0.15 of the relay's.
    let plan =
        brownout_core::Plan::from_str_named(PLAN, "plan.yaml").unwrap_or_else(|e| panic!("{e}"));
    for (policy, actual) in [("trust", live_trust), ("verify", live_verify)] {
        let w = Workload::from_str_named(&serde_yaml_ng_free(&workload(policy)), "w.json")
            .unwrap_or_else(|e| panic!("{e}"));
        let est = simulate(&w, plan.clone(), &SimOptions::default()).silent;
        assert!(
            (est.silent_rate - actual).abs() <= 0.15,
            "{policy}: simulated {:.3}, live {actual:.3} ({est:?})",
            est.silent_rate
        );
        eprintln!(
            "{policy}: simulated silent_rate {:.3}, live {actual:.3}",
            est.silent_rate
        );
    }
}

/// The same over streamable HTTP: results are kept from JSON or SSE answers alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusting_load_over_http_propagates_corrupted_services() {
    let dir = tmp();
    let plan = common::http::plan_file(dir.path(), PLAN);
    let ev_path = dir.path().join("http-events.jsonl").display().to_string();
    let fx = fixture();
    let (guard, url) = common::http::brownout_http(&[
        "--quiet", "--plan", &plan, "--events", &ev_path, "--", &fx[0], &fx[1],
    ]);
    let target = brownout::load::LoadTarget::Http {
        url,
        headers: Vec::new(),
    };
    let (summary, _) = play(&workload("trust"), target, opts(1, None)).await;
    let _ = guard.stop();
    let ev = events_at(std::path::Path::new(&ev_path));
    assert_eq!(summary.tasks_ok, TASKS, "{summary:?}");
    let wrong_service = taint(&ev, "altered")
        .iter()
        .filter(|e| e["fault"] == "wrong-service")
        .count();
    // Over HTTP the session id is random, so the injections are a fresh draw each run
    // (about 20, probability 0.1 over 200 calls; 11 came once): bounded well below.
    assert!(wrong_service > 5, "{wrong_service}");
    assert_eq!(taint(&ev, "propagated").len(), wrong_service);
}

/// A validating load re-reads every drifted incident once: the relay sees each re-read as
/// noticing, and no drifted result is acted on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_validating_load_notices_drift() {
    let plan = "seed: 11\nfaults:\n  - {id: drifted, kind: schema_drift, tools: [get_incident], mutation: retype, path: /severity, probability: 0.2}\n";
    let dir = tmp();
    let (summary, _) = play(
        &workload("validate"),
        stdio(through(dir.path(), plan, &fixture())),
        opts(1, None),
    )
    .await;
    let ev = events(dir.path());
    let altered = taint(&ev, "altered").len();
    let noticed = taint(&ev, "noticed").len();
    assert!(altered > 12, "{altered}");
    assert!(summary.rereads > 12, "{summary:?}");
    // Every re-read follows a drifted read; a drifted re-read gives the task up (and the
    // next task's identical read looks to the relay like noticing it too).
    assert!(noticed as u64 >= summary.rereads, "{noticed} {summary:?}");
    assert_eq!(altered as u64, summary.rereads + summary.gave_up);
    assert!(taint(&ev, "propagated").is_empty());
    assert_eq!(summary.tasks_failed, summary.gave_up);
}

/// A value a step takes that is not there fails the task, counted; the call is never made
/// with a null in its place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_chained_value_fails_the_task_loudly() {
    let w = support::workload(
        "tasks: 20
steps:
  - calls:
      - {tool: get_incident, arguments: {id: INC-7}}
  - calls:
      - tool: restart_service
        arguments: {service: {from: get_incident, path: /no_such_field}}
",
    );
    let (summary, evs) = play(&w, stdio(fixture()), opts(1, None)).await;
    assert_eq!(summary.tasks_failed, 20, "{summary:?}");
    assert_eq!(summary.missing_values, 20);
    assert_eq!(summary.calls, 20, "only the incidents were read");
    assert!(support::calls(&evs)
        .iter()
        .all(|c| c.tool.as_deref() == Some("get_incident")));
    let text = brownout::load::cli::table(&summary);
    assert!(text.contains("20 tasks missing a chained value"), "{text}");
}

/// The workload as JSON text (the simulator loads the same file).
fn serde_yaml_ng_free(w: &Workload) -> String {
    serde_json::to_string(w).expect("a workload serialises")
}
