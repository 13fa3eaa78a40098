//! Benchmark: what brownout's MCP server costs an agent.
//!
//! Run: `cargo bench -p brownout --bench mcp` (release build). With the official Rust SDK's
//! client (`rmcp`) over stdio against `brownout mcp` (a store of its own), it measures
//! 1. the handshake: process start to `initialize` answered (10 starts), median;
//! 2. a trivial tool's round trip (`list_fault_kinds`, 200 calls): p50 and p95;
//! 3. `validate_experiment` and `simulate` through MCP against the same work done directly
//!    in this process, alternating call by call (30 rounds): medians and the MCP overhead;
//! 4. `describe_target` of the fixture (a process started per call, 20 calls): median, and
//!    the `tools/list` latency it reports.
//!
//! It prints a table and writes `target/bench/mcp.json`.

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

type Client = RunningService<RoleClient, ()>;

fn median(v: &mut [f64]) -> f64 {
    pct(v, 0.5)
}

fn pct(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let rank = (q * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn connect(bin: &str, store: &std::path::Path, workdir: &std::path::Path) -> Client {
    let store = store.display().to_string();
    let t = TokioChildProcess::new(tokio::process::Command::new(bin).configure(|c| {
        c.args(["mcp", "--store", &store, "--audit"])
            .arg(format!("{store}.audit"))
            .arg("--workdir")
            .arg(workdir)
            .stderr(std::process::Stdio::null());
    }))
    .expect("spawn brownout mcp");
    ().serve(t).await.expect("handshake")
}

async fn call(c: &Client, name: &str, args: Value) -> Value {
    let r = c
        .call_tool(
            CallToolRequestParams::new(name.to_string())
                .with_arguments(args.as_object().cloned().unwrap_or_default()),
        )
        .await
        .expect("call");
    assert_ne!(r.is_error, Some(true), "{name}: {r:?}");
    r.structured_content.unwrap_or_default()
}

fn main() {
    let bin = std::env::var("BROWNOUT_BENCH_EXE")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_brownout").to_string());
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store.sqlite");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let examples = repo
        .join("examples/experiments")
        .canonicalize()
        .expect("examples");
    let out = rt.block_on(async {
        let mut starts = Vec::new();
        for _ in 0..10 {
            let t0 = Instant::now();
            let c = connect(&bin, &store, &examples).await;
            starts.push(ms(t0.elapsed()));
            let _ = c.cancel().await;
        }
        let c = connect(&bin, &store, &examples).await;
        let mut trivial = Vec::new();
        for _ in 0..200 {
            let t0 = Instant::now();
            call(&c, "list_fault_kinds", json!({})).await;
            trivial.push(ms(t0.elapsed()));
        }
        let exp = std::fs::read_to_string(examples.join("green.yaml")).expect("example");
        let wl = std::fs::read_to_string(repo.join("examples/sim/headline.yaml")).expect("workload");
        let plan = std::fs::read_to_string(repo.join("examples/sim/errors-2pct.yaml")).expect("plan");
        let (mut v_mcp, mut v_direct, mut s_mcp, mut s_direct) = (vec![], vec![], vec![], vec![]);
        for _ in 0..30 {
            let t0 = Instant::now();
            let v = call(&c, "validate_experiment", json!({"experiment": exp})).await;
            v_mcp.push(ms(t0.elapsed()));
            assert_eq!(v["ok"], true, "{v}");
            let t0 = Instant::now();
            let x = brownout::experiment::load::load_text(&exp, "experiment.yaml", &examples).expect("valid");
            let _ = brownout::experiment::policy::check(&x, &Default::default());
            v_direct.push(ms(t0.elapsed()));
            let t0 = Instant::now();
            call(&c, "simulate", json!({"plan": plan, "workload": wl})).await;
            s_mcp.push(ms(t0.elapsed()));
            let t0 = Instant::now();
            let w = brownout_sim::Workload::from_str_named(&wl, "w.yaml").expect("workload");
            let p = brownout_core::Plan::from_str_named(&plan, "p.yaml").expect("plan");
            let r = brownout_sim::simulate(&w, p, &Default::default());
            std::hint::black_box(serde_json::to_string(&r).expect("json"));
            s_direct.push(ms(t0.elapsed()));
        }
        let mut describe = Vec::new();
        let mut listed = Vec::new();
        for _ in 0..20 {
            let t0 = Instant::now();
            let d = call(&c, "describe_target", json!({"target": {"command": ["brownout", "fixture"]}})).await;
            describe.push(ms(t0.elapsed()));
            listed.push(d["tools_list_ms"].as_f64().unwrap_or(f64::NAN));
        }
        let _ = c.cancel().await;
        let (vm, vd, sm, sd) = (median(&mut v_mcp), median(&mut v_direct), median(&mut s_mcp), median(&mut s_direct));
        json!({
            "handshake_ms_median": median(&mut starts),
            "list_fault_kinds_ms": {"p50": pct(&mut trivial, 0.5), "p95": pct(&mut trivial, 0.95)},
            "validate_experiment_ms": {"mcp": vm, "direct": vd, "overhead": vm - vd},
            "simulate_ms": {"mcp": sm, "direct": sd, "ratio": sm / sd},
            "describe_target_ms": {"median": median(&mut describe), "tools_list_ms_median": median(&mut listed)},
        })
    });
    println!("brownout mcp (rmcp client over stdio, release build)");
    println!(
        "  handshake (process start → initialize answered): {:.1} ms median",
        out["handshake_ms_median"].as_f64().unwrap_or(f64::NAN)
    );
    println!(
        "  list_fault_kinds round trip: p50 {:.3} ms, p95 {:.3} ms",
        out["list_fault_kinds_ms"]["p50"]
            .as_f64()
            .unwrap_or(f64::NAN),
        out["list_fault_kinds_ms"]["p95"]
            .as_f64()
            .unwrap_or(f64::NAN)
    );
    println!(
        "  validate_experiment: MCP {:.3} ms vs direct {:.3} ms (+{:.3} ms)",
        out["validate_experiment_ms"]["mcp"]
            .as_f64()
            .unwrap_or(f64::NAN),
        out["validate_experiment_ms"]["direct"]
            .as_f64()
            .unwrap_or(f64::NAN),
        out["validate_experiment_ms"]["overhead"]
            .as_f64()
            .unwrap_or(f64::NAN)
    );
    println!(
        "  simulate (headline, 2 % errors): MCP {:.2} ms vs direct {:.2} ms (×{:.3})",
        out["simulate_ms"]["mcp"].as_f64().unwrap_or(f64::NAN),
        out["simulate_ms"]["direct"].as_f64().unwrap_or(f64::NAN),
        out["simulate_ms"]["ratio"].as_f64().unwrap_or(f64::NAN)
    );
    println!(
        "  describe_target (fixture, a process per call): {:.1} ms median; its tools/list {:.2} ms",
        out["describe_target_ms"]["median"]
            .as_f64()
            .unwrap_or(f64::NAN),
        out["describe_target_ms"]["tools_list_ms_median"]
            .as_f64()
            .unwrap_or(f64::NAN)
    );
    let path = repo.join("target/bench/mcp.json");
    let _ = std::fs::create_dir_all(path.parent().unwrap_or(&repo));
    let _ = std::fs::write(
        &path,
        serde_json::to_string_pretty(&out).unwrap_or_default(),
    );
}
