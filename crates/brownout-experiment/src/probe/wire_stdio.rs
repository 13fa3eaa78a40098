//! The probe's MCP client over stdio: start the server, one JSON-RPC message per line,
//! then close stdin and reap the process. A line that is not JSON-RPC is a
//! `protocol_error`; the server exiting first is `process_exited` with its status.

use super::reason::{Failure, FailureReason};
use brownout_relay::relay::framing::{Frame, LineReader, DEFAULT_MAX_MESSAGE};
use serde_json::{json, Value};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};

/// How much of a server's stderr is kept to explain its exit.
const STDERR_TAIL: usize = 400;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

pub struct StdioWire {
    child: Child,
    /// The last bytes the server wrote on stderr (told when it exits).
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_reader: Option<tokio::task::JoinHandle<()>>,
    stdin: Option<ChildStdin>,
    reader: LineReader<BufReader<ChildStdout>>,
}

impl StdioWire {
    pub fn spawn(command: &[String]) -> Result<StdioWire, Failure> {
        let (program, args) = command
            .split_first()
            .ok_or_else(|| Failure::new(FailureReason::SpawnFailed, "no command given"))?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                Failure::new(
                    FailureReason::SpawnFailed,
                    format!("cannot start `{program}`: {e}"),
                )
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(Failure::new(
                FailureReason::SpawnFailed,
                "no pipes to the server",
            ));
        };
        let tail = Arc::new(Mutex::new(Vec::new()));
        let stderr_reader = child.stderr.take().map(|mut err| {
            let tail = Arc::clone(&tail);
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                while let Ok(n) = err.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
                    t.extend_from_slice(&buf[..n]);
                    let excess = t.len().saturating_sub(STDERR_TAIL);
                    t.drain(..excess);
                }
            })
        });
        Ok(StdioWire {
            child,
            stderr: tail,
            stderr_reader,
            stdin: Some(stdin),
            reader: LineReader::new(BufReader::new(stdout), DEFAULT_MAX_MESSAGE),
        })
    }

    async fn write(&mut self, msg: &Value) -> Result<(), Failure> {
        let mut line = msg.to_string().into_bytes();
        line.push(b'\n');
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(self.exited("stdin is closed").await);
        };
        if stdin.write_all(&line).await.is_err() || stdin.flush().await.is_err() {
            return Err(self.exited("the server stopped reading").await);
        }
        Ok(())
    }

    pub async fn notify(&mut self, msg: &Value) -> Result<(), Failure> {
        self.write(msg).await
    }

    pub async fn request(&mut self, msg: &Value, id: u64) -> Result<Value, Failure> {
        self.write(msg).await?;
        loop {
            let frame = match self.reader.next().await {
                Ok(Some(f)) => f,
                Ok(None) | Err(_) => {
                    return Err(self
                        .exited("the server closed stdout before answering")
                        .await)
                }
            };
            let line = match frame {
                Frame::Line(l) => l,
                Frame::Oversized { size, .. } => {
                    return Err(Failure::protocol(format!(
                        "a {size}-byte line, over the {DEFAULT_MAX_MESSAGE}-byte limit"
                    )))
                }
            };
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let v = super::wire::parse_message(&line).map_err(|mut f| {
                f.detail = format!("bad framing on stdout: {}", f.detail);
                f
            })?;
            if super::wire::answers(&v, id) {
                return Ok(v);
            }
            // A request from the server (ping, roots/list): answer so it does not wait.
            if let (Some(sid), Some(method)) = (v.get("id"), v.get("method")) {
                let answer = if method == "ping" {
                    json!({"jsonrpc": "2.0", "id": sid, "result": {}})
                } else {
                    json!({"jsonrpc": "2.0", "id": sid, "error": {"code": -32601, "message": "the probe offers no client features"}})
                };
                self.write(&answer).await?;
            }
        }
    }

    /// The server is gone (or going): its status if it exits within a moment.
    async fn exited(&mut self, why: &str) -> Failure {
        match tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await {
            Ok(Ok(status)) => {
                use std::os::unix::process::ExitStatusExt;
                // What it said last is still in the pipe: read it to the end (briefly).
                if let Some(r) = self.stderr_reader.take() {
                    let _ = tokio::time::timeout(Duration::from_millis(300), r).await;
                }
                Failure::new(
                    FailureReason::ProcessExited {
                        status: status.code(),
                        signal: status.signal(),
                    },
                    format!("{why}: the server exited ({status}){}", self.stderr_tail()),
                )
            }
            _ => Failure::new(
                FailureReason::ProcessExited {
                    status: None,
                    signal: None,
                },
                why.to_string(),
            ),
        }
    }

    fn stderr_tail(&self) -> String {
        let t = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        let text = String::from_utf8_lossy(&t);
        let last = text.trim().lines().last().unwrap_or("").trim().to_string();
        if last.is_empty() {
            String::new()
        } else {
            format!("; its stderr ended: {}", super::mcp::clip(&last))
        }
    }

    /// Close stdin and reap the server (SIGKILL if it does not exit within `wait`).
    pub async fn close(mut self, wait: Duration) -> Result<(), Failure> {
        self.stdin = None;
        match tokio::time::timeout(wait, self.child.wait()).await {
            Ok(_) => Ok(()),
            Err(_) => {
                let _ = self.child.kill().await;
                Err(Failure::new(
                    FailureReason::Timeout {
                        phase: "close".into(),
                    },
                    "the server did not exit when its stdin closed (killed)",
                ))
            }
        }
    }
}
