//! The floor a stdio relay is measured against: one process that only copies bytes between
//! its client and a server it starts (no framing, no parsing), as `cat` would in each
//! direction. A relay in the middle of a stdio session cannot cost less than this hop: two
//! more pipe reads and writes and two more process wake-ups per round trip.
//!
//! The bench binary becomes this forwarder when started as `BENCH_EXE --pipe-hop CMD ARGS…`
//! ([`run_if_asked`]), so the hop is measured in the same run as the relay.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::process::{Command, Stdio};

/// The first argument that makes the bench binary a forwarder.
pub const FLAG: &str = "--pipe-hop";

/// If this process was started as a forwarder, forward until the client closes its end,
/// then exit with the server's status; otherwise return.
pub fn run_if_asked() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) != Some(FLAG) || args.len() < 3 {
        return;
    }
    let mut child = Command::new(&args[2])
        .args(&args[3..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the pipe hop starts its server");
    let mut to_server = child.stdin.take().expect("server stdin");
    let mut from_server = child.stdout.take().expect("server stdout");
    let back = std::thread::spawn(move || {
        let mut out = std::io::stdout().lock();
        copy(&mut from_server, &mut out);
    });
    copy(&mut std::io::stdin().lock(), &mut to_server);
    drop(to_server);
    let _ = back.join();
    let status = child.wait().map_or(1, |s| s.code().unwrap_or(1));
    std::process::exit(status);
}

/// Copy what arrives as it arrives: one read, one write (and flush) per chunk.
fn copy(from: &mut impl Read, to: &mut impl Write) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if to.write_all(&buf[..n]).and_then(|()| to.flush()).is_err() {
                    return;
                }
            }
        }
    }
}
