//! The proxy processes a run measures: brownout and the reference proxy, killed when dropped.

use super::*;

/// Set on the reference proxy's process (this bench run again): the upstream URL.
pub(crate) const PLAIN_PROXY_ENV: &str = "BROWNOUT_HTTP_BENCH_PLAIN_PROXY";

/// The reference proxy, as a process.
pub(crate) fn start_plain_proxy(upstream: &str) -> Relay {
    let exe = std::env::current_exe().expect("this bench's path");
    let exe = exe.to_str().expect("a UTF-8 path");
    start_process(exe, &[], &[(PLAIN_PROXY_ENV, upstream)])
}

/// Pids of the proxy processes alive, for the watchdog.
pub(crate) static PIDS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// A proxy process (brownout or the reference proxy), killed when dropped (also on a panic).
pub(crate) struct Relay {
    pub(crate) child: Child,
    pub(crate) url: String,
}

impl Relay {
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let pid = self.child.id();
        PIDS.lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|p| *p != pid);
    }
}

pub(crate) fn start_relay(exe: &str, upstream: &str, plan: Option<&std::path::Path>) -> Relay {
    let mut args: Vec<String> = ["proxy", "http", "--quiet", "--listen", "127.0.0.1:0"]
        .map(String::from)
        .to_vec();
    args.extend(["--upstream".into(), upstream.into()]);
    // The memory phase holds 1,000 sessions, each on its own connection, and 500 GET streams
    // on connections of their own: past the relay's default cap of 1,024 connections, which
    // would refuse the last ones (the reference proxy has no cap).
    args.extend(["--max-connections".into(), "4096".into()]);
    if let Some(p) = plan {
        args.extend(["--plan".into(), p.display().to_string()]);
    }
    start_process(exe, &args, &[])
}

/// Start a proxy and wait (20 s at most) for its `brownout: relaying URL -> …` line.
pub(crate) fn start_process(exe: &str, args: &[String], env: &[(&str, &str)]) -> Relay {
    let mut child = Command::new(exe)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {exe}: {e}"));
    PIDS.lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(child.id());
    let pid = child.id();
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel::<String>();
    // Everything brownout says besides its start line is shown: nothing is expected.
    std::thread::spawn(move || {
        let mut started = false;
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if started {
                eprintln!("  [brownout {pid}] {line}");
            } else if line.starts_with("brownout: relaying ") {
                started = true;
                let _ = tx.send(line);
            } else {
                eprintln!("  [brownout {pid}, starting] {line}");
            }
        }
    });
    let relay_line = rx.recv_timeout(Duration::from_secs(20));
    let mut relay = Relay {
        child,
        url: String::new(),
    };
    let line = match relay_line {
        Ok(l) => l,
        Err(_) => {
            let status = relay.child.try_wait();
            panic!("{exe} {args:?} did not print its `relaying` line within 20 s ({status:?})")
        }
    };
    relay.url = line["brownout: relaying ".len()..]
        .split(" -> ")
        .next()
        .unwrap_or_default()
        .to_string();
    relay
}
