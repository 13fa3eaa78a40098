//! How a run is told to stop: SIGINT/SIGTERM counted as they come (the first removes the
//! faults then runs the rollbacks; later ones are recorded, never cut a rollback short), and — for
//! a program watching the run (`brownout mcp`) — the end of stdin, plus what such a watcher
//! asks of the run (`Watched`).

use std::path::PathBuf;
use tokio::sync::watch;

/// How a watching program (`brownout mcp`) steers a run it started as a child process.
#[derive(Debug, Clone, Default)]
pub struct Watched {
    /// `--status FILE`: the live state, rewritten about once a second.
    pub status: Option<PathBuf>,
    /// `--run-id ID`: the run id, chosen by the watcher so it knows it at once.
    pub run_id: Option<String>,
    /// `--stop-on-stdin-eof`: the end of stdin (the watcher died or let go) stops the run
    /// as SIGINT does: faults removed, rollbacks run.
    pub stop_on_stdin_eof: bool,
}

/// Count SIGINT/SIGTERM as they come (and the end of stdin, with `stop_on_stdin_eof`).
pub fn signals(stop_on_stdin_eof: bool) -> watch::Receiver<u32> {
    let (tx, rx) = watch::channel(0u32);
    if stop_on_stdin_eof {
        let tx = tx.clone();
        tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            let mut stdin = tokio::io::stdin();
            let mut buf = [0u8; 256];
            while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {}
            // A stop, not a second signal: if the run is stopping already, its rollbacks
            // still run.
            let first = tx.send_if_modified(|n| {
                if *n == 0 {
                    *n = 1;
                    true
                } else {
                    false
                }
            });
            if first {
                eprintln!("brownout: stdin closed: removing the faults, then rollbacks");
            }
        });
    }
    tokio::spawn(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            return;
        };
        loop {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            tx.send_modify(|n| *n += 1);
            eprintln!(
                "brownout: signal: removing the faults, then every rollback (each to its timeout)"
            );
        }
    });
    rx
}
