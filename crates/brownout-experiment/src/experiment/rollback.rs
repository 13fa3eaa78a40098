//! User rollbacks: commands run after the faults are removed, each bounded by its own
//! timeout (capped by the policy's `max_rollback_timeout`). They always run, all of them: a
//! signal that arrives while one runs is recorded in its record, never obeyed.

use super::journal::RollbackRecord;
use super::spec::Rollback;
use std::path::Path;
use std::time::{Duration, Instant};

/// Run one rollback command from `dir` to its end or its timeout; signals counted by
/// `signals` while it runs are noted in the record.
pub async fn run_one(
    r: &Rollback,
    dir: &Path,
    origin: Instant,
    signals: &mut tokio::sync::watch::Receiver<u32>,
) -> RollbackRecord {
    let seen = *signals.borrow_and_update();
    let start_ms = ms(origin);
    let action = r.command.join(" ");
    let timeout = r
        .timeout
        .as_ref()
        .map_or(Duration::from_secs(30), |d| d.get());
    let (ok, detail) = match r.command.split_first() {
        None => (false, "empty command".to_string()),
        Some((program, args)) => {
            // As a target's command: on PATH, else beside the experiment, else — `brownout`
            // itself — this executable.
            let program =
                super::program::program_path(program, dir).unwrap_or_else(|| program.clone());
            let mut cmd = tokio::process::Command::new(&program);
            cmd.args(args)
                .current_dir(if dir.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    dir
                })
                .stdin(std::process::Stdio::null())
                .kill_on_drop(true);
            match cmd.output_status(timeout).await {
                Ok(s) => s,
                Err(e) => (false, format!("cannot start `{program}`: {e}")),
            }
        }
    };
    let during = signals.borrow_and_update().saturating_sub(seen);
    let detail = match during {
        0 => detail,
        n => format!(
            "{detail}; {n} signal(s) arrived while it ran: recorded, not obeyed (rollbacks always run)"
        ),
    };
    RollbackRecord {
        action,
        start_ms,
        end_ms: ms(origin),
        ok,
        detail,
    }
}

pub fn ms(origin: Instant) -> f64 {
    origin.elapsed().as_secs_f64() * 1000.0
}

trait OutputStatus {
    async fn output_status(&mut self, timeout: Duration) -> std::io::Result<(bool, String)>;
}

impl OutputStatus for tokio::process::Command {
    async fn output_status(&mut self, timeout: Duration) -> std::io::Result<(bool, String)> {
        let mut child = self.spawn()?;
        tokio::select! {
            s = child.wait() => {
                let s = s?;
                Ok((s.success(), format!("exited with {s}")))
            }
            _ = tokio::time::sleep(timeout) => {
                let _ = child.kill().await;
                Ok((false, format!("killed after its timeout of {}", brownout_core::human::duration(timeout))))
            }
        }
    }
}
