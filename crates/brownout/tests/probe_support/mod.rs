//! Helpers for the probe tests: run `brownout probe --json`, and a scripted HTTP server
//! (std only) whose n-th request gets the answer a closure gives.

#![allow(dead_code)]

use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// `brownout probe --json ARGS`: every JSON line, the exit code, and all output as text.
pub fn probe(args: &[&str]) -> (Vec<Value>, i32, String) {
    let out = Command::new(crate::common::brownout())
        .arg("probe")
        .arg("--json")
        .args(args)
        .output()
        .expect("run brownout probe");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let lines = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    (
        lines,
        out.status.code().unwrap_or(-1),
        format!("{stdout}\n{stderr}"),
    )
}

/// The last probe line's failure (`connection_refused`, `timeout(initialize)`…), or "ok".
pub fn failure(lines: &[Value]) -> String {
    let last = lines
        .iter()
        .rev()
        .find(|l| l.get("phases").is_some())
        .unwrap_or_else(|| panic!("no probe line in {lines:?}"));
    last["failure"].as_str().unwrap_or("ok").to_string()
}

/// An answer: status line, content type, body.
pub type Answer = (u16, &'static str, String);

/// Serve answers from `script(n, request_text)` (n counts from 0) on a loopback port;
/// `None` holds the connection open without answering. Returns the base URL and the count.
pub fn scripted(
    script: impl Fn(usize, &str) -> Option<Answer> + Send + Sync + 'static,
) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let count = Arc::new(AtomicUsize::new(0));
    let c2 = Arc::clone(&count);
    let script = Arc::new(script);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let script = Arc::clone(&script);
            let c3 = Arc::clone(&c2);
            std::thread::spawn(move || loop {
                let Some(req) = read_request(&mut conn) else {
                    return;
                };
                let n = c3.fetch_add(1, Ordering::SeqCst);
                match script(n, &req) {
                    Some((status, ctype, body)) => {
                        let head = format!(
                            "HTTP/1.1 {status} X\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\n\r\n",
                            body.len()
                        );
                        if conn.write_all(head.as_bytes()).is_err()
                            || conn.write_all(body.as_bytes()).is_err()
                        {
                            return;
                        }
                    }
                    None => {
                        // A server that never answers (the probe's timeout is the subject).
                        std::thread::sleep(std::time::Duration::from_secs(30));
                        return;
                    }
                }
            });
        }
    });
    (url, count)
}

fn read_request(conn: &mut std::net::TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if conn.read(&mut byte).ok()? == 0 {
            return None;
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).to_string();
    let len = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    conn.read_exact(&mut body).ok()?;
    Some(format!("{head}{}", String::from_utf8_lossy(&body)))
}
