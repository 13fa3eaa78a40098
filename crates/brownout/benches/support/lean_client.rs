//! The leanest stdio client a latency can be measured with, and the steadiest way to run it.
//!
//! The client: one thread, blocking writes and reads of whole lines, no JSON parsed beyond
//! checking that an answer is a result. An MCP client on an async runtime (the bench's
//! [`brownout::client::StdioClient`]) adds wake-ups of its own to every round trip.
//!
//! The way to run it: the client and every process of the path it measures on one CPU
//! (`taskset -c 0`, inherited by the processes it starts). On this 2-vCPU VM a round trip
//! spread over both CPUs costs whatever waking the other vCPU costs at that moment (it may
//! have halted) and wherever the scheduler placed each process: fresh processes land in one
//! of several placements, and the same path's p50 moves by 30 µs between samples. On one
//! CPU a round trip is the paths' own work and their context switches, and the p50 repeats
//! within about a µs. It is not what a client on a busy many-core host sees, which is why
//! the bench reports it beside, not instead of, the other figures.
//!
//! The bench binary becomes the client when started as
//! `BENCH_EXE --lean-client WARM_UP CALLS PROGRAM ARGS…` ([`run_if_asked`]), so that only
//! it, not the bench, is bound to one CPU.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

/// The first argument that makes the bench binary the lean client.
pub const FLAG: &str = "--lean-client";

/// If this process was started as the lean client, measure and print the p50 in µs, then
/// exit; otherwise return.
pub fn run_if_asked() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) != Some(FLAG) || args.len() < 5 {
        return;
    }
    let warm_up = args[2].parse().expect("WARM_UP");
    let calls = args[3].parse().expect("CALLS");
    let rtts = sample(&args[4], &args[5..], warm_up, calls);
    println!("{}", rtts[rtts.len() / 2]);
    std::process::exit(0);
}

/// The p50 in µs of `calls` back-to-back round trips through `program args` (after
/// `warm_up`), measured by the lean client with it and the path on one CPU. Panics (failing
/// the bench) if `taskset` (util-linux) cannot start it or a call fails.
pub fn pinned(program: &str, args: &[String], warm_up: usize, calls: usize) -> f64 {
    let me = std::env::current_exe().expect("the bench's own path");
    let out = Command::new("taskset")
        .args(["-c", "0"])
        .arg(me)
        .arg(FLAG)
        .arg(warm_up.to_string())
        .arg(calls.to_string())
        .arg(program)
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .expect("the lean client needs taskset (util-linux)");
    assert!(
        out.status.success(),
        "the lean client failed: {:?}",
        out.status
    );
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("the lean client prints its p50")
}

/// Start `program args`, initialise it, make `warm_up` calls, then `calls` sequential
/// `tools/call echo` round trips: their durations in µs, sorted. Panics on an answer that
/// is not a result.
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
        line.clear();
        from.read_line(line).expect("read");
    };
    ask(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"lean\",\"version\":\"1\"}}}\n", &mut line);
    assert!(line.contains("\"result\""), "initialize: {line}");
    let mut rtts = Vec::with_capacity(calls);
    let mut msg = Vec::with_capacity(160);
    for i in 0..warm_up + calls {
        msg.clear();
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
