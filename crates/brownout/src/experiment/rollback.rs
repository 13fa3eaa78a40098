//! User rollbacks: commands run after the faults are removed, each bounded by its timeout.

use super::journal::RollbackRecord;
use super::spec::Rollback;
use std::path::Path;
use std::time::{Duration, Instant};

/// Run one rollback command from `dir`; `skip` resolving (a second signal) kills it.
pub async fn run_one(
    r: &Rollback,
    dir: &Path,
    origin: Instant,
    skip: impl std::future::Future<Output = ()>,
) -> RollbackRecord {
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
                super::target::program_path(program, dir).unwrap_or_else(|| program.clone());
            let mut cmd = tokio::process::Command::new(&program);
            cmd.args(args)
                .current_dir(if dir.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    dir
                })
                .stdin(std::process::Stdio::null())
                .kill_on_drop(true);
            match cmd.output_status(timeout, skip).await {
                Ok(s) => s,
                Err(e) => (false, format!("cannot start `{program}`: {e}")),
            }
        }
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
    async fn output_status(
        &mut self,
        timeout: Duration,
        skip: impl std::future::Future<Output = ()>,
    ) -> std::io::Result<(bool, String)>;
}

impl OutputStatus for tokio::process::Command {
    async fn output_status(
        &mut self,
        timeout: Duration,
        skip: impl std::future::Future<Output = ()>,
    ) -> std::io::Result<(bool, String)> {
        let mut child = self.spawn()?;
        tokio::select! {
            s = child.wait() => {
                let s = s?;
                Ok((s.success(), format!("exited with {s}")))
            }
            _ = tokio::time::sleep(timeout) => {
                let _ = child.kill().await;
                Ok((false, format!("killed after {timeout:?}")))
            }
            _ = skip => {
                let _ = child.kill().await;
                Ok((false, "skipped: a second signal".to_string()))
            }
        }
    }
}
