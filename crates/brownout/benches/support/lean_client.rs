//! The leanest stdio client a latency can be measured with, and the steadiest way to run it.
//!
//! The client: one thread, blocking writes and reads of whole lines, no JSON parsed beyond
//! checking that an answer is a result. An MCP client on an async runtime (the bench's
//! [`brownout::client::StdioClient`]) adds wake-ups of its own to every round trip.
//!
//! The way to run it: the client and every process of the path it measures on one CPU
//! (`taskset -c 0`, inherited by the processes it starts). On this 2-vCPU VM a round trip
//! spread over both CPUs costs whatever waking the other vCPU costs at that moment (it may
//! have halted) and wherever the scheduler placed each process: the same direct path's p50
//! read 10.5 µs in one sample and 52.5 µs in another. On one CPU a round trip is the paths'
//! own work and their context switches. Single rounds still jump by a few µs when the
//! machine does something else, but the median of five rounds repeats within 1.5 µs
//! between runs. It is not what a client on a busy many-core host sees, which is why the
//! bench reports it beside, not instead of, the other figures.
//!
//! The bench binary becomes the client when started as
//! `BENCH_EXE --lean-client WARM_UP CALLS PROGRAM ARGS…` ([`run_if_asked`]), so that only
//! it and the path, not the bench, are bound to one CPU.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The first argument that makes the bench binary the lean client.
pub const FLAG: &str = "--lean-client";

/// How long one lean sample may take before the bench gives up on its path: the client's
/// reads block, so a path that stops answering would otherwise hang the bench.
const LIMIT: Duration = Duration::from_secs(120);

/// If this process was started as the lean client, measure and print the p50 in µs, then
/// exit; otherwise return.
pub fn run_if_asked() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) != Some(FLAG) {
        return;
    }
    assert!(
        args.len() >= 5,
        "usage: BENCH_EXE {FLAG} WARM_UP CALLS PROGRAM ARGS…"
    );
    let warm_up = args[2].parse().expect("WARM_UP");
    let calls = args[3].parse().expect("CALLS");
    let rtts = sample(&args[4], &args[5..], warm_up, calls);
    println!("{}", super::proc_stats::pct(&rtts, 0.5));
    std::process::exit(0);
}

/// The p50 in µs of `calls` back-to-back round trips through `program args` (after
/// `warm_up`), measured by the lean client with it and the path on one CPU. Panics (failing
/// the bench) if `taskset` (util-linux) cannot start it, a call fails, or the sample takes
/// over [`LIMIT`] (the client is killed, and its path ends with the client's pipes).
pub fn pinned(program: &str, args: &[String], warm_up: usize, calls: usize) -> f64 {
    let me = std::env::current_exe().expect("the bench's own path");
    let mut client = Command::new("taskset")
        .args(["-c", "0"])
        .arg(me)
        .arg(FLAG)
        .arg(warm_up.to_string())
        .arg(calls.to_string())
        .arg(program)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the lean client needs taskset (util-linux)");
    let deadline = Instant::now() + LIMIT;
    let status = loop {
        if let Some(status) = client.try_wait().expect("the lean client's status") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = client.kill();
            let _ = client.wait();
            panic!("the lean client's sample of `{program}` took over {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "the lean client failed: {status:?}");
    let mut out = String::new();
    client
        .stdout
        .take()
        .expect("the lean client's stdout")
        .read_to_string(&mut out)
        .expect("the lean client's output");
    out.trim().parse().expect("the lean client prints its p50")
}

/// Start `program args`, initialise it, make `warm_up` calls, then `calls` sequential
/// `tools/call echo` round trips: their durations in µs, sorted. A line without an `"id"`
/// (a notification) is skipped; each answer must be a result.
pub fn sample(program: &str, args: &[String], warm_up: usize, calls: usize) -> Vec<f64> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the lean client starts its path");
    let mut to = child.stdin.take().expect("stdin");
    let mut from = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    let mut ask = |msg: &[u8], line: &mut String| {
        to.write_all(msg).expect("write");
        loop {
            line.clear();
            assert!(from.read_line(line).expect("read") > 0, "the path ended");
            if line.contains("\"id\"") {
                return;
            }
        }
    };
    ask(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"lean\",\"version\":\"1\"}}}\n", &mut line);
    assert!(line.contains("\"result\""), "initialize: {line}");
    let mut rtts = Vec::with_capacity(calls);
    let mut msg = Vec::with_capacity(160);
    for i in 0..warm_up + calls {
        msg.clear();
        if i == 0 {
            // Sent with the first call: a notification has no answer to wait for.
            msg.extend_from_slice(
                b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
            );
        }
        writeln!(
            msg,
            "{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"message\":\"m{i}\"}}}}}}",
            i + 1
        )
        .expect("format");
        let t = Instant::now();
        ask(&msg, &mut line);
        let rtt = t.elapsed().as_secs_f64() * 1e6;
        assert!(line.contains("\"result\""), "call {i}: {line}");
        if i >= warm_up {
            rtts.push(rtt);
        }
    }
    drop(to);
    let _ = child.wait();
    rtts.sort_by(f64::total_cmp);
    rtts
}
