//! The stdio back: the MCP server as a child process.
//!
//! Spawns the server with piped stdin/stdout; its stderr is copied through to brownout's
//! (the server's logs pass through) while its last lines are kept, so a server that dies
//! can be described with what it said last. Signals it (TERM, KILL, STOP/CONT), stops it
//! politely then firmly ([`stop_after`]) and describes how it ended.

use brownout_core::verdict::{ProcessAction, Signal as KillSignal};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::collections::VecDeque;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

/// The command that starts the server.
#[derive(Debug, Clone)]
pub struct ChildSpec {
    pub program: String,
    pub args: Vec<String>,
}

/// A running server process.
pub struct ServerProcess {
    pub child: Child,
    pub pid: Option<Pid>,
    /// The end of what the server wrote on stderr.
    pub stderr: StderrTail,
}

impl ServerProcess {
    /// Start the server; its stdin and stdout are handed to the caller.
    pub fn spawn(spec: &ChildSpec) -> std::io::Result<(ServerProcess, ChildStdin, ChildStdout)> {
        let mut child = Command::new(&spec.program)
            .args(&spec.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                std::io::Error::new(e.kind(), format!("cannot start `{}`: {e}", spec.program))
            })?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("no stdin pipe"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("no stdout pipe"))?;
        let pid = child.id().map(|p| Pid::from_raw(p as i32));
        let stderr = StderrTail::default();
        match child.stderr.take() {
            Some(pipe) => stderr.copy_from(pipe),
            None => stderr.done.store(1, Ordering::SeqCst),
        }
        Ok((ServerProcess { child, pid, stderr }, stdin, stdout))
    }

    pub fn signal(&self, sig: Signal) {
        if let Some(pid) = self.pid {
            if let Err(e) = kill(pid, sig) {
                eprintln!("brownout: cannot send {sig} to the server (pid {pid}): {e}");
            }
        }
    }
}

/// How much of the server's stderr is kept.
const TAIL_BYTES: usize = 2048;

/// The last bytes a server wrote on stderr, kept while they are copied to brownout's.
#[derive(Debug, Clone, Default)]
pub struct StderrTail {
    tail: Arc<Mutex<VecDeque<u8>>>,
    /// 1 once the server's stderr reached end of file.
    done: Arc<AtomicI32>,
}

impl StderrTail {
    fn copy_from(&self, mut pipe: ChildStderr) {
        let me = self.clone();
        tokio::spawn(async move {
            let mut out = tokio::io::stderr();
            let mut buf = vec![0u8; 8192];
            while let Ok(n) = pipe.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                let chunk = &buf[..n];
                let _ = out.write_all(chunk).await;
                let mut t = me.tail.lock().unwrap_or_else(|p| p.into_inner());
                t.extend(chunk);
                let over = t.len().saturating_sub(TAIL_BYTES);
                t.drain(..over);
            }
            let _ = out.flush().await;
            me.done.store(1, Ordering::SeqCst);
        });
    }

    /// Wait (at most `limit`) until the server's stderr is closed, so its last words are in.
    pub async fn settle(&self, limit: Duration) {
        let until = tokio::time::Instant::now() + limit;
        while self.done.load(Ordering::SeqCst) == 0 && tokio::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The last `n` non-blank lines, joined with ` | ` (at most ~500 characters); empty when
    /// the server said nothing.
    pub fn last_lines(&self, n: usize) -> String {
        let bytes: Vec<u8> = self
            .tail
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .copied()
            .collect();
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim_end)
            .filter(|l| !l.trim().is_empty())
            .collect();
        let mut out = lines[lines.len().saturating_sub(n)..].join(" | ");
        if out.chars().count() > 500 {
            out = out.chars().skip(out.chars().count() - 500).collect();
            out.insert(0, '…');
        }
        out
    }
}

/// If the process has not exited `grace` after being asked to, SIGTERM it, then SIGKILL it
/// 2 s later: a server that ignores SIGTERM does not outlive brownout's intent.
pub fn stop_after(pid: Option<Pid>, grace: Duration) {
    let Some(pid) = pid else { return };
    tokio::spawn(async move {
        tokio::time::sleep(grace).await;
        if kill(pid, Signal::SIGTERM).is_ok() {
            tokio::time::sleep(Duration::from_secs(2)).await;
            let _ = kill(pid, Signal::SIGKILL);
        }
    });
}

/// Words for how a process ended.
pub fn describe(status: &ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(s)) => match Signal::try_from(s) {
            Ok(sig) => format!("killed by {sig}"),
            Err(_) => format!("killed by signal {s}"),
        },
        _ => "ended".into(),
    }
}

/// The exit code brownout passes on: the child's code, or 128 + signal.
pub fn exit_code(status: &ExitStatus) -> i32 {
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

/// Signals the current server process; shared by the relay's pipes (so a kill or pause
/// lands before the message that triggered it is forwarded) and updated on restart.
#[derive(Debug, Clone, Default)]
pub struct ProcessHandle {
    pid: Arc<AtomicI32>,
}

impl ProcessHandle {
    pub fn set(&self, pid: Option<Pid>) {
        self.pid.store(pid.map_or(0, Pid::as_raw), Ordering::SeqCst);
    }

    pub fn pid(&self) -> Option<Pid> {
        let p = self.pid.load(Ordering::SeqCst);
        (p > 0).then(|| Pid::from_raw(p))
    }

    /// Carry out a process fault now (a pause continues the process by itself later).
    pub fn apply(&self, action: ProcessAction) {
        let Some(pid) = self.pid() else { return };
        eprintln!("brownout: fault: {action}");
        let send = |sig: Signal| {
            if let Err(e) = kill(pid, sig) {
                eprintln!("brownout: cannot send {sig} to the server (pid {pid}): {e}");
            }
        };
        match action {
            ProcessAction::Kill(KillSignal::Term) => send(Signal::SIGTERM),
            ProcessAction::Kill(KillSignal::Kill) => send(Signal::SIGKILL),
            ProcessAction::Pause(d) => {
                send(Signal::SIGSTOP);
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_micros(d.as_micros())).await;
                    let _ = kill(pid, Signal::SIGCONT);
                });
            }
        }
    }
}

/// Stop a server for good: SIGTERM, then SIGKILL if it is still there `grace` later (a
/// server that ignores SIGTERM must not outlive its session). Returns how it ended.
pub async fn terminate(child: &mut Child, grace: Duration) -> std::io::Result<ExitStatus> {
    if let Some(pid) = child.id() {
        let _ = kill(Pid::from_raw(pid as i32), Signal::SIGTERM);
    }
    match tokio::time::timeout(grace, child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            child.start_kill()?;
            child.wait().await
        }
    }
}

/// Where `program` is: itself when it names a path, else the first match on `PATH`.
pub fn which(program: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = std::path::PathBuf::from(program);
        return runnable(&p).then_some(p);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(program))
            .find(|p| runnable(p))
    })
}
