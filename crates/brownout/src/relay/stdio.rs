//! `brownout proxy stdio`: a client speaks to brownout on stdin/stdout exactly as to the
//! server, and brownout speaks to the server as a child process.
//!
//! Unmodified lines pass byte for byte and in order; a delayed line never blocks the others.
//! When the server dies, every call in flight is answered with a clear JSON-RPC error; with
//! `restart: on_failure` the server is started again (exponential backoff) and the client's
//! `initialize` is replayed to it. EOF on stdin closes the server's stdin and waits for it;
//! SIGINT/SIGTERM stop the server. brownout exits with the server's status.

use super::child::{describe, exit_code, ChildSpec, ProcessHandle, ServerProcess};
use super::framing::{oversized_error, Frame, LineReader};
use super::{Pipe, Relay, OUTBOX_DEPTH};
use brownout_core::jsonrpc::{self, classify, Kind, Message};
use brownout_core::Side;
use nix::sys::signal::Signal;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::mpsc;

/// The session key of the one stdio client.
pub const SESSION: &str = "stdio";

/// How long the server gets to exit after its stdin closes or it is sent SIGTERM.
const GRACE: Duration = Duration::from_secs(5);

pub struct StdioOptions {
    pub max_message: usize,
}

/// Write frames from `rx` as lines, flushing whenever the queue runs dry.
pub fn spawn_writer<W: AsyncWrite + Unpin + Send + 'static>(
    mut w: W,
    mut rx: mpsc::Receiver<Vec<u8>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(first) = rx.recv().await {
            let mut batch = first;
            batch.push(b'\n');
            while let Ok(mut more) = rx.try_recv() {
                more.push(b'\n');
                batch.extend_from_slice(&more);
                if batch.len() > 1 << 20 {
                    break;
                }
            }
            if w.write_all(&batch).await.is_err() || w.flush().await.is_err() {
                break;
            }
        }
    })
}

/// What the client side tells the supervisor.
enum ClientEvent {
    Closed,
}

/// Relay between our stdin/stdout and a server child process. Returns the exit code.
pub async fn run(spec: ChildSpec, relay: Arc<Relay>, opts: StdioOptions) -> anyhow::Result<i32> {
    run_with(spec, relay, opts, stdin(), stdout()).await
}

/// Our stdin as an async reader. When it is a pipe (as MCP clients start servers) it is
/// read with non-blocking I/O on the runtime; tokio's own `stdin()` goes through a
/// blocking thread per read, which costs a thread hand-off on every message.
pub fn stdin() -> Box<dyn AsyncRead + Unpin + Send> {
    use std::os::fd::AsFd;
    let pipe = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .and_then(|fd| tokio::net::unix::pipe::Receiver::from_owned_fd(fd).ok());
    match pipe {
        Some(p) => Box::new(p),
        None => Box::new(tokio::io::stdin()),
    }
}

/// Our stdout as an async writer, non-blocking when it is a pipe (see [`stdin`]).
pub fn stdout() -> Box<dyn AsyncWrite + Unpin + Send> {
    use std::os::fd::AsFd;
    let pipe = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .and_then(|fd| tokio::net::unix::pipe::Sender::from_owned_fd(fd).ok());
    match pipe {
        Some(p) => Box::new(p),
        None => Box::new(tokio::io::stdout()),
    }
}

pub async fn run_with<R, W>(
    spec: ChildSpec,
    relay: Arc<Relay>,
    opts: StdioOptions,
    input: R,
    output: W,
) -> anyhow::Result<i32>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (mut server, stdin, stdout) = ServerProcess::spawn(&spec)?;
    let (to_client, to_client_rx) = mpsc::channel::<Vec<u8>>(OUTBOX_DEPTH);
    let client_writer = spawn_writer(output, to_client_rx);
    let (to_server, to_server_rx) = mpsc::channel::<Vec<u8>>(OUTBOX_DEPTH);
    let process = ProcessHandle::default();
    process.set(server.pid);
    let (client_tx, mut client_rx) = mpsc::unbounded_channel::<ClientEvent>();

    let c2s = Pipe::new(to_server.clone(), to_client.clone(), Some(process.clone()));
    let s2c = Pipe::new(to_client.clone(), to_server.clone(), Some(process.clone()));
    let init: Arc<Mutex<Handshake>> = Arc::new(Mutex::new(None));

    // Client → server.
    {
        let relay = Arc::clone(&relay);
        let init = Arc::clone(&init);
        let to_client = to_client.clone();
        let max = opts.max_message;
        tokio::spawn(async move {
            let mut reader = LineReader::new(BufReader::new(input), max);
            loop {
                match reader.next().await {
                    Ok(Some(Frame::Line(bytes))) => {
                        remember_initialize(&init, &bytes);
                        let v = relay.handle(Side::Client, SESSION, &bytes);
                        c2s.execute(v, bytes).await;
                    }
                    Ok(Some(Frame::Oversized { size, id, .. })) => {
                        match oversized_error(size, &id, max) {
                            Some(err) => {
                                eprintln!("brownout: a client message of {size} bytes is over the limit of {max}; answered with an error");
                                let _ = to_client.send(err).await;
                            }
                            None => eprintln!("brownout: a client message of {size} bytes is over the limit of {max}; skipped (no top-level id to answer)"),
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        eprintln!("brownout: reading the client failed: {e}");
                        break;
                    }
                }
            }
            let _ = client_tx.send(ClientEvent::Closed);
        });
    }

    // The server's stdin, swapped on restart and closed (None) when the client leaves.
    let server_in: Arc<tokio::sync::Mutex<Option<ChildStdin>>> =
        Arc::new(tokio::sync::Mutex::new(Some(stdin)));
    spawn_server_writer(Arc::clone(&server_in), to_server_rx);
    let swallow: Arc<Mutex<Option<jsonrpc::Id>>> = Arc::new(Mutex::new(None));
    let server_side = ServerSide {
        relay: Arc::clone(&relay),
        pipe: s2c,
        swallow: Arc::clone(&swallow),
        max: opts.max_message,
    };
    let mut reader = server_side.spawn_reader(stdout);
    let mut client_closed = false;
    let mut stopping = false;
    let mut restarts = 0u32;
    let policy = relay.restart_policy();
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut sigint = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    let mut expiry = tokio::time::interval(Duration::from_secs(1));

    let code = loop {
        let timer = relay.next_timer().map(|t| t.saturating_sub(relay.now()));
        tokio::select! {
            status = server.child.wait() => {
                let status = status?;
                let how = describe(&status);
                // Everything the server wrote before it ended is answered first: only what
                // is still pending after its stdout closes failed with it.
                drain(&mut reader).await;
                let failed = relay.fail_pending(SESSION, &format!("the MCP server exited before answering ({how})"));
                if !failed.is_empty() {
                    eprintln!("brownout: the server ended ({how}); {} call(s) in flight answered with an error", failed.len());
                }
                for f in failed {
                    let _ = to_client.send(f.reply).await;
                }
                let failure = !status.success();
                if client_closed || stopping || !failure || !policy.on_failure || restarts >= policy.max_restarts {
                    if failure && !client_closed && !stopping {
                        eprintln!("brownout: the server ended ({how}); not restarting");
                    }
                    break exit_code(&status);
                }
                let delay = policy.delay(restarts);
                restarts += 1;
                eprintln!("brownout: the server ended ({how}); restart {restarts}/{} in {}ms", policy.max_restarts, delay.as_micros() / 1000);
                tokio::time::sleep(Duration::from_micros(delay.as_micros())).await;
                let (p, new_in, new_out) = ServerProcess::spawn(&spec)?;
                server = p;
                process.set(server.pid);
                let mut slot = server_in.lock().await;
                *slot = Some(new_in);
                let replayed = replay_initialize(&init, restarts, slot.as_mut()).await;
                drop(slot);
                *swallow.lock().unwrap_or_else(|p| p.into_inner()) = replayed;
                reader = server_side.spawn_reader(new_out);
            }
            Some(ClientEvent::Closed) = client_rx.recv(), if !client_closed => {
                client_closed = true;
                *server_in.lock().await = None; // EOF to the server: the polite way to ask it to exit
                stop_after(server.pid, GRACE);
            }
            _ = sigterm.recv() => { stopping = true; server.signal(Signal::SIGTERM); stop_after(server.pid, GRACE); }
            _ = sigint.recv() => { stopping = true; server.signal(Signal::SIGTERM); stop_after(server.pid, GRACE); }
            _ = tokio::time::sleep(timer.map_or(Duration::from_secs(3600), |t| Duration::from_micros(t.as_micros()))), if timer.is_some() => {
                for a in relay.on_timer(SESSION) {
                    process.apply(a);
                }
            }
            _ = expiry.tick() => relay.expire(),
        }
    };
    drop((to_server, to_client, server_side));
    let _ = tokio::time::timeout(Duration::from_secs(2), client_writer).await;
    Ok(code)
}

/// Client → server: writes queued lines to whichever server process is current.
fn spawn_server_writer(
    server_in: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    mut rx: mpsc::Receiver<Vec<u8>>,
) {
    tokio::spawn(async move {
        while let Some(first) = rx.recv().await {
            let mut batch = first;
            batch.push(b'\n');
            while let Ok(mut more) = rx.try_recv() {
                more.push(b'\n');
                batch.extend_from_slice(&more);
            }
            let mut slot = server_in.lock().await;
            if let Some(w) = slot.as_mut() {
                if w.write_all(&batch).await.is_err() || w.flush().await.is_err() {
                    // The server is gone; its exit is handled by the supervisor.
                    *slot = None;
                }
            }
        }
    });
}

/// Server → client: reads the server's stdout and carries out verdicts on its messages,
/// in its own task, so a response crosses brownout with a single hand-off.
struct ServerSide {
    relay: Arc<Relay>,
    pipe: Pipe,
    /// The id of a replayed `initialize` whose answer the client must not see.
    swallow: Arc<Mutex<Option<jsonrpc::Id>>>,
    max: usize,
}

impl ServerSide {
    fn spawn_reader(&self, stdout: ChildStdout) -> tokio::task::JoinHandle<()> {
        let (relay, pipe, swallow, max) = (
            Arc::clone(&self.relay),
            self.pipe.clone(),
            Arc::clone(&self.swallow),
            self.max,
        );
        tokio::spawn(async move {
            let mut reader = LineReader::new(BufReader::new(stdout), max);
            while let Ok(Some(frame)) = reader.next().await {
                let bytes = match frame {
                    Frame::Line(bytes) => {
                        let mut s = swallow.lock().unwrap_or_else(|p| p.into_inner());
                        if s.as_ref().is_some_and(|id| is_response_to(&bytes, id)) {
                            *s = None;
                            continue;
                        }
                        bytes
                    }
                    Frame::Oversized { size, id, .. } => match oversized_error(size, &id, max) {
                        Some(err) => {
                            eprintln!("brownout: a server message of {size} bytes is over the limit of {max}; its caller gets an error");
                            err
                        }
                        None => {
                            eprintln!("brownout: a server message of {size} bytes is over the limit of {max}; skipped (no top-level id to answer)");
                            continue;
                        }
                    },
                };
                let v = relay.handle(Side::Server, SESSION, &bytes);
                pipe.execute(v, bytes).await;
            }
        })
    }
}

/// How long the server's stdout may stay open after the server exited (a grandchild can
/// hold it) before the calls still in flight are failed anyway.
const DRAIN: Duration = Duration::from_secs(2);

/// Wait until the server's stdout reader has reached end of file (at most [`DRAIN`]), so an
/// answer written just before the exit reaches the client as an answer, not as a failure.
async fn drain(reader: &mut tokio::task::JoinHandle<()>) {
    if !reader.is_finished() && tokio::time::timeout(DRAIN, &mut *reader).await.is_err() {
        eprintln!("brownout: the server's stdout is still open after it exited; failing the calls in flight");
    }
}

/// If the server has not exited `grace` after being asked, SIGTERM then SIGKILL it.
fn stop_after(pid: Option<nix::unistd::Pid>, grace: Duration) {
    let Some(pid) = pid else { return };
    tokio::spawn(async move {
        tokio::time::sleep(grace).await;
        if nix::sys::signal::kill(pid, Signal::SIGTERM).is_ok() {
            tokio::time::sleep(Duration::from_secs(2)).await;
            let _ = nix::sys::signal::kill(pid, Signal::SIGKILL);
        }
    });
}

/// The client's `initialize` request and, once sent, its `initialized` notification.
type Handshake = Option<(Vec<u8>, Option<Vec<u8>>)>;

/// Keep the client's `initialize` request and `initialized` notification for a restart.
fn remember_initialize(init: &Mutex<Handshake>, bytes: &[u8]) {
    let Message::Single(v) = classify(bytes) else {
        return;
    };
    let mut slot = init.lock().unwrap_or_else(|p| p.into_inner());
    match (v.kind, v.method.as_deref()) {
        (Kind::Request, Some("initialize")) => *slot = Some((bytes.to_vec(), None)),
        (Kind::Notification, Some("notifications/initialized")) => {
            if let Some((_, n)) = slot.as_mut() {
                *n = Some(bytes.to_vec());
            }
        }
        _ => {}
    }
}

/// Replay the client's handshake to a restarted server under a fresh id, so the server is
/// in the state the client believes it is in. Returns the id whose answer is swallowed.
async fn replay_initialize(
    init: &Mutex<Handshake>,
    n: u32,
    stdin: Option<&mut tokio::process::ChildStdin>,
) -> Option<jsonrpc::Id> {
    let (req, note) = init.lock().unwrap_or_else(|p| p.into_inner()).clone()?;
    let stdin = stdin?;
    let mut v: serde_json::Value = serde_json::from_slice(&req).ok()?;
    let id = format!("brownout-restart-{n}");
    v["id"] = serde_json::Value::String(id.clone());
    let mut line = serde_json::to_vec(&v).ok()?;
    line.push(b'\n');
    if let Some(mut n) = note {
        n.push(b'\n');
        line.extend_from_slice(&n);
    }
    stdin.write_all(&line).await.ok()?;
    stdin.flush().await.ok()?;
    Some(jsonrpc::Id::Str(id))
}

fn is_response_to(bytes: &[u8], id: &jsonrpc::Id) -> bool {
    matches!(classify(bytes), Message::Single(v) if matches!(v.kind, Kind::Response | Kind::Error) && v.id.as_ref() == Some(id))
}
