//! The stdio back: the MCP server as a child process.
//!
//! Spawns the server with piped stdin/stdout and inherited stderr (the server's logs pass
//! through), signals it (TERM, KILL, STOP/CONT) and describes how it ended.

use brownout_core::verdict::{ProcessAction, Signal as KillSignal};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

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
}

impl ServerProcess {
    /// Start the server; its stdin and stdout are handed to the caller.
    pub fn spawn(spec: &ChildSpec) -> std::io::Result<(ServerProcess, ChildStdin, ChildStdout)> {
        let mut child = Command::new(&spec.program)
            .args(&spec.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
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
        Ok((ServerProcess { child, pid }, stdin, stdout))
    }

    pub fn signal(&self, sig: Signal) {
        if let Some(pid) = self.pid {
            if let Err(e) = kill(pid, sig) {
                eprintln!("brownout: cannot send {sig} to the server (pid {pid}): {e}");
            }
        }
    }
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
