//! The experiments started through MCP: each one a `brownout run` child process with the
//! operator's policy, the runner's live gates and guaranteed rollback, watched through its
//! status file and journal.
//!
//! Why a child process and not a task in this one: the run's own signal handling (faults
//! out, then rollbacks) is the code `brownout run` has been tested with, a run that fails
//! cannot take the MCP server with it, and the child's stdin is a pipe from this server, so
//! if the server dies — even by SIGKILL — the run sees its stdin end and removes its faults.
//!
//! Every run holds a lease its client renews (`renew_lease`); a lapsed lease, an ended MCP
//! session, `stop_experiment` and `stop_all` all stop it the same way: SIGINT.

use super::audit::{Audit, Entry};
use brownout_experiment::experiment::status::{self, LiveStatus};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;

/// How much of a run's stderr is kept (the tail), for a failure's reason.
const STDERR_TAIL: usize = 4096;
/// How often leases are checked.
const LEASE_TICK: Duration = Duration::from_millis(250);

/// A run's state as the server sees it.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum State {
    Running,
    /// Asked to stop (SIGINT sent): faults being removed, rollbacks running.
    Stopping {
        reason: String,
    },
    /// The process ended; the journal's status and reason.
    Ended {
        status: String,
        reason: String,
        exit_code: Option<i32>,
    },
}

struct Run {
    run_id: String,
    title: String,
    session: String,
    started_unix_ms: u64,
    lease: Duration,
    lease_until: Instant,
    pid: Option<i32>,
    state: State,
    status_path: PathBuf,
    journal_path: PathBuf,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// The child's stdin: dropped when the run ends (its end also stops a run).
    stdin: Option<tokio::process::ChildStdin>,
}

/// Why a run did not start.
#[derive(Debug)]
pub enum StartError {
    /// The concurrency cap: this many runs already going.
    Full(usize),
    Io(String),
}

/// What starting a run needs.
pub struct Start<'a> {
    pub text: &'a str,
    /// The files the text names (its relative path, the approved bytes): written beside the
    /// run's copy of the text, so the run reads these and not the working directory's.
    pub files: &'a [(String, Vec<u8>)],
    pub title: &'a str,
    pub session: &'a str,
    pub seed: Option<u64>,
    pub lease: Duration,
    /// At most this many runs at once (checked and the run registered under one lock, so
    /// simultaneous starts cannot both pass).
    pub cap: usize,
    /// A person approved this run above the ladder the store's history allows (who).
    pub ladder_skip_approved_by: Option<&'a str>,
}

/// The handle `start_experiment` returns.
#[derive(Debug, Clone, Serialize)]
pub struct Handle {
    pub run_id: String,
    pub state: String,
    pub lease_seconds: f64,
    pub lease_expires_unix_ms: u64,
}

/// Every run this server started.
pub struct Runs {
    runs: Mutex<BTreeMap<String, Run>>,
    exe: PathBuf,
    dir: PathBuf,
    workdir: PathBuf,
    policy_file: PathBuf,
    store: Option<PathBuf>,
    audit: Arc<Audit>,
}

impl Runs {
    /// `dir` holds the runs' files; `policy_file` is the policy in force, written once by
    /// the server at start; children run in `workdir` (an experiment's relative paths).
    pub fn new(
        dir: PathBuf,
        workdir: PathBuf,
        policy_file: PathBuf,
        store: Option<PathBuf>,
        audit: Arc<Audit>,
    ) -> anyhow::Result<Arc<Runs>> {
        let exe = std::env::current_exe()?;
        Ok(Arc::new(Runs {
            runs: Mutex::new(BTreeMap::new()),
            exe,
            dir,
            workdir,
            policy_file,
            store,
            audit,
        }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Run>> {
        self.runs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs not yet ended (running or stopping).
    pub fn active(&self) -> usize {
        active_in(&self.lock())
    }

    /// Start a run (the guardrails already passed).
    pub fn start(self: &Arc<Self>, s: Start<'_>) -> Result<Handle, StartError> {
        self.spawn(s, "run")
    }

    /// Start a GameDay (`brownout gameday`; the guardrails already passed): one run here,
    /// with the same lease and stop as an experiment's.
    pub fn start_gameday(self: &Arc<Self>, s: Start<'_>) -> Result<Handle, StartError> {
        self.spawn(s, "gameday")
    }

    fn spawn(self: &Arc<Self>, s: Start<'_>, command: &str) -> Result<Handle, StartError> {
        let mut runs = self.lock();
        let active = active_in(&runs);
        if active >= s.cap {
            return Err(StartError::Full(active));
        }
        let now = brownout_experiment::experiment::clock::unix_ms();
        let run_id = brownout_store::store::ingest::fresh_run_id(now);
        let ext = if s.text.trim_start().starts_with('{') {
            "json"
        } else {
            "yaml"
        };
        let io = |e: std::io::Error| StartError::Io(e.to_string());
        // The run's own directory: the text and the files it names, as approved.
        let own = self.dir.join(&run_id);
        std::fs::create_dir_all(&own).map_err(io)?;
        for (rel, bytes) in s.files {
            let to = own.join(rel);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(io)?;
            }
            std::fs::write(&to, bytes).map_err(io)?;
        }
        let file = own.join(format!("{run_id}.{ext}"));
        std::fs::write(&file, s.text).map_err(io)?;
        let status_path = self.dir.join(format!("{run_id}.status.json"));
        let journal_path = self.dir.join(format!("{run_id}.journal.json"));
        let mut cmd = tokio::process::Command::new(&self.exe);
        cmd.arg(command)
            .arg(&file)
            .arg("--policy")
            .arg(&self.policy_file)
            .arg("--json")
            .arg("--journal")
            .arg(&journal_path)
            .arg("--status")
            .arg(&status_path)
            .arg("--run-id")
            .arg(&run_id)
            .arg("--stop-on-stdin-eof")
            .current_dir(&self.workdir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(false);
        if let Some(store) = &self.store {
            // In the environment, not the arguments: a store URL may hold a password, and
            // a process's arguments are visible to every user of the host.
            cmd.env("BROWNOUT_STORE", store);
        }
        if let Some(seed) = s.seed {
            cmd.arg("--seed").arg(seed.to_string());
        }
        if command == "run" {
            // A run this server stopped a moment ago may still hold the target while its
            // rollbacks run: wait for it rather than refuse the next.
            cmd.arg("--wait-for-target").arg("30");
        }
        if let Some(who) = s.ladder_skip_approved_by {
            cmd.arg("--ladder-skip-approved-by").arg(who);
        }
        let mut child = cmd.spawn().map_err(io)?;
        let stdin = child.stdin.take();
        let stderr = Arc::new(Mutex::new(Vec::new()));
        if let Some(mut err) = child.stderr.take() {
            let keep = stderr.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                while let Ok(n) = err.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    let mut k = keep.lock().unwrap_or_else(|e| e.into_inner());
                    k.extend_from_slice(&buf[..n]);
                    let over = k.len().saturating_sub(STDERR_TAIL);
                    k.drain(..over);
                }
            });
        }
        let pid = child.id().map(|p| p as i32);
        let lease_until = Instant::now() + s.lease;
        runs.insert(
            run_id.clone(),
            Run {
                run_id: run_id.clone(),
                title: s.title.to_string(),
                session: s.session.to_string(),
                started_unix_ms: now,
                lease: s.lease,
                lease_until,
                pid,
                state: State::Running,
                status_path,
                journal_path,
                stderr,
                stdin,
            },
        );
        drop(runs);
        let me = self.clone();
        let id = run_id.clone();
        tokio::spawn(async move {
            let mut out = Vec::new();
            if let Some(mut o) = child.stdout.take() {
                let _ = o.read_to_end(&mut out).await;
            }
            let code = child.wait().await.ok().and_then(|s| s.code());
            me.finish(&id, code, &out);
        });
        Ok(Handle {
            run_id,
            state: "running".into(),
            lease_seconds: s.lease.as_secs_f64(),
            lease_expires_unix_ms: now + s.lease.as_millis() as u64,
        })
    }

    fn finish(&self, run_id: &str, code: Option<i32>, stdout: &[u8]) {
        let mut runs = self.lock();
        let Some(r) = runs.get_mut(run_id) else {
            return;
        };
        let j: Option<Value> = serde_json::from_slice(stdout).ok().or_else(|| {
            std::fs::read(&r.journal_path)
                .ok()
                .and_then(|t| serde_json::from_slice(&t).ok())
        });
        let (status, reason) = match &j {
            Some(j) => (
                j["status"].as_str().unwrap_or("failed").to_string(),
                j["reason"].as_str().unwrap_or("").to_string(),
            ),
            None => {
                let tail =
                    String::from_utf8_lossy(&r.stderr.lock().unwrap_or_else(|e| e.into_inner()))
                        .to_string();
                (
                    "failed".into(),
                    format!(
                        "the run ended without a journal (exit {code:?}): {}",
                        tail.trim()
                    ),
                )
            }
        };
        r.state = State::Ended {
            status,
            reason,
            exit_code: code,
        };
        r.stdin = None;
    }

    /// Stop a run: SIGINT (faults out, then rollbacks). Idempotent; never gated.
    pub fn stop(&self, run_id: &str, reason: &str) -> Option<State> {
        let mut runs = self.lock();
        let r = runs.get_mut(run_id)?;
        if r.state == State::Running {
            if let Some(pid) = r.pid {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGINT,
                );
            }
            r.state = State::Stopping {
                reason: reason.to_string(),
            };
        }
        Some(r.state.clone())
    }

    /// Stop every run (of one session, or all): the run ids stopped now.
    pub fn stop_all(&self, session: Option<&str>, reason: &str) -> Vec<String> {
        let ids: Vec<String> = self
            .lock()
            .values()
            .filter(|r| r.state == State::Running && session.is_none_or(|s| s == r.session))
            .map(|r| r.run_id.clone())
            .collect();
        for id in &ids {
            self.stop(id, reason);
        }
        ids
    }

    /// Renew a run's lease (the session that started it only).
    pub fn renew(&self, run_id: &str, session: &str) -> Result<Handle, String> {
        let mut runs = self.lock();
        let r = runs
            .get_mut(run_id)
            .ok_or_else(|| format!("no run {run_id} was started by this server"))?;
        if r.session != session {
            return Err(format!("run {run_id} belongs to another session"));
        }
        if r.state != State::Running {
            return Err(format!("run {run_id} is not running ({:?})", r.state));
        }
        r.lease_until = Instant::now() + r.lease;
        Ok(Handle {
            run_id: run_id.to_string(),
            state: "running".into(),
            lease_seconds: r.lease.as_secs_f64(),
            lease_expires_unix_ms: brownout_experiment::experiment::clock::unix_ms()
                + r.lease.as_millis() as u64,
        })
    }

    /// Renew a run's lease whatever its session (a task's holder polls it by its task id).
    pub fn touch(&self, run_id: &str) {
        if let Some(r) = self.lock().get_mut(run_id) {
            if r.state == State::Running {
                r.lease_until = Instant::now() + r.lease;
            }
        }
    }

    /// Whether a run has ended.
    pub fn ended(&self, run_id: &str) -> bool {
        self.lock()
            .get(run_id)
            .is_none_or(|r| matches!(r.state, State::Ended { .. }))
    }

    /// A run as `get_experiment` shows it: state, lease, the live status, and once ended a
    /// compact summary of its journal.
    pub fn get(&self, run_id: &str) -> Option<Value> {
        let runs = self.lock();
        let r = runs.get(run_id)?;
        let live: Option<LiveStatus> = status::read(&r.status_path);
        let left = r.lease_until.saturating_duration_since(Instant::now());
        let mut v = serde_json::json!({
            "run_id": r.run_id,
            "title": r.title,
            "started_unix_ms": r.started_unix_ms,
            "lease_seconds_left": (r.state == State::Running).then_some(left.as_secs_f64()),
            "live": live,
        });
        if let (Some(m), Ok(Value::Object(s))) = (v.as_object_mut(), serde_json::to_value(&r.state))
        {
            m.extend(s);
        }
        if let State::Ended { .. } = r.state {
            if let Some(j) = std::fs::read(&r.journal_path)
                .ok()
                .and_then(|t| serde_json::from_slice::<Value>(&t).ok())
            {
                v["summary"] = super::compact::summary(&j);
            }
        }
        Some(v)
    }

    /// Every run, newest first (id, title, state).
    pub fn list(&self) -> Vec<Value> {
        self.lock()
            .values()
            .rev()
            .map(|r| serde_json::json!({"run_id": r.run_id, "title": r.title, "state": r.state}))
            .collect()
    }

    /// Stop runs whose lease lapsed, every [`LEASE_TICK`], for as long as the server lives.
    pub fn watch_leases(self: &Arc<Self>) {
        let me = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(LEASE_TICK).await;
                let Some(runs) = me.upgrade() else {
                    return;
                };
                let lapsed: Vec<(String, String)> = runs
                    .lock()
                    .values()
                    .filter(|r| r.state == State::Running && r.lease_until <= Instant::now())
                    .map(|r| (r.run_id.clone(), r.session.clone()))
                    .collect();
                for (id, session) in lapsed {
                    runs.stop(&id, "the lease lapsed (not renewed)");
                    runs.audit.write(Entry {
                        session,
                        tool: "lease".into(),
                        decision: "lease_lapsed".into(),
                        rule: Some("lease".into()),
                        detail: "the client did not renew the lease: run stopped, faults removed"
                            .into(),
                        run_id: Some(id),
                        ..Entry::default()
                    });
                }
            }
        });
    }

    /// Wait (at most `limit`) for every run to end: used when the server stops.
    pub async fn wait_all(&self, limit: Duration) {
        let until = Instant::now() + limit;
        while self.active() > 0 && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The runs' directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Runs not yet ended in a map of runs.
fn active_in(runs: &BTreeMap<String, Run>) -> usize {
    runs.values()
        .filter(|r| !matches!(r.state, State::Ended { .. }))
        .count()
}
