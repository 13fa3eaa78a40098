//! A stand-in for a relay's admin API that misbehaves, for the fleet tests: it answers
//! `GET /status` like a relay (so the run starts) and every other request as its mode
//! says. It counts the bytes it wrote, so a test sees how much a client read.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Takes every request but `/status` and never answers (a host cut off, a hung relay).
    Silent,
    /// Answers every request but `/status` with 200 and bytes that are not JSON.
    Garbage,
    /// Answers every request (`/status` too) with 200 and an endless body, no length.
    Huge,
}

pub struct Hostile {
    pub url: String,
    written: Arc<AtomicU64>,
}

impl Hostile {
    /// Bytes of answers written so far (what clients took off the socket, give or take
    /// the kernel's buffers).
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::SeqCst)
    }
}

/// The most one endless answer writes before it stops on its own.
const HUGE_LIMIT: u64 = 512 << 20;

pub fn start(mode: Mode) -> Hostile {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let written = Arc::new(AtomicU64::new(0));
    let count = Arc::clone(&written);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let count = Arc::clone(&count);
            std::thread::spawn(move || serve(stream, mode, &count));
        }
    });
    Hostile { url, written }
}

fn serve(stream: TcpStream, mode: Mode, written: &AtomicU64) {
    let mut r = BufReader::new(&stream);
    let mut line = String::new();
    if r.read_line(&mut line).is_err() {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).is_err() || h.trim().is_empty() {
            break;
        }
        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; len.min(1 << 20)];
    let _ = r.read_exact(&mut body);
    let answer = |status: &str, body: &[u8]| {
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let _ = (&stream).write_all(head.as_bytes());
        let _ = (&stream).write_all(body);
        written.fetch_add((head.len() + body.len()) as u64, Ordering::SeqCst);
    };
    if mode == Mode::Huge {
        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n";
        if (&stream).write_all(head.as_bytes()).is_err() {
            return;
        }
        let chunk = vec![b'x'; 64 << 10];
        let mut sent = 0u64;
        while sent < HUGE_LIMIT && (&stream).write_all(&chunk).is_ok() {
            sent += chunk.len() as u64;
            written.fetch_add(chunk.len() as u64, Ordering::SeqCst);
        }
        return;
    }
    if path.starts_with("/status") {
        answer(
            "200 OK",
            br#"{"summary": {"injections": {}, "tools": {}}, "faults": []}"#,
        );
        return;
    }
    match mode {
        Mode::Silent => std::thread::sleep(Duration::from_secs(60)),
        Mode::Garbage => answer("200 OK", b"\x00\xffnot json at all"),
        Mode::Huge => {}
    }
}
