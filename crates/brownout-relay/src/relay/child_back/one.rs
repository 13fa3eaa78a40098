//! The child back's one session for the stdio front (`brownout proxy stdio -- CMD`):
//! brownout speaks to the server as a child process, and supervises it.
//!
//! Unmodified lines pass byte for byte and in order; a delayed line never blocks the others.
//! When the server dies, everything it wrote is relayed first, then every call still in
//! flight is answered with a clear JSON-RPC error (with the exit status and the server's last
//! words on stderr). With `restart: on_failure` the server is started again (exponential
//! backoff, during which calls are answered with an error saying so) and the client's
//! `initialize` is replayed to it. EOF on stdin closes the server's stdin and waits for it,
//! and brownout exits with the server's status; SIGINT/SIGTERM stop the server and brownout
//! exits 0 once it is gone, as `proxy http` does.

use crate::relay::child::{
    describe, exit_code, stop_after, ChildSpec, ProcessHandle, ServerProcess,
};
use crate::relay::framing::{oversized_error, Frame, LineReader};
use crate::relay::handshake::{is_response_to, Handshake};
use crate::relay::lane::{self, Lane};
use crate::relay::layers::{Carrier, Client, ClientEnd, OneSession};
use crate::relay::stdio::SESSION;
use crate::relay::{Outbox, Pipe, Relay, OUTBOX_DEPTH};
use brownout_core::jsonrpc;
use brownout_core::verdict::Verdict;
use brownout_core::Side;
use nix::sys::signal::Signal;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::BufReader;
use tokio::process::ChildStdout;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

#[cfg(test)]
mod tests;

/// How long the server gets to exit after its stdin closes or it is sent SIGTERM.
const GRACE: Duration = Duration::from_secs(5);

/// How long the server's stdout may stay open after the server exited (a grandchild can
/// hold it) before the calls still in flight are failed anyway.
const DRAIN: Duration = Duration::from_secs(2);

/// After the server is gone for good, how long brownout still answers a connected client
/// (a server that dies at start: the client's `initialize` learns why) before it exits.
const LINGER: Duration = Duration::from_secs(2);

/// Where the client's messages go: to the current server, or nowhere (why, in words).
#[derive(Clone)]
enum Gate {
    /// The current server: its pipe, and the fast lane to its stdin.
    Up(Pipe, Lane),
    Down(String),
}

/// One server process and the tasks that serve it.
struct Generation {
    process: ServerProcess,
    /// Reads the server's stdout; ends at its end of file.
    reader: JoinHandle<()>,
    /// Firing or dropping it closes the server's stdin once what is queued is written.
    close: Option<oneshot::Sender<()>>,
}

/// Starts server processes and wires each to the client.
struct Supervisor {
    spec: ChildSpec,
    relay: Arc<Relay>,
    to_client: Outbox,
    /// The fast lane to the client's stdout, for the server's untouched messages.
    client_lane: Lane,
    process: ProcessHandle,
    gate: watch::Sender<Gate>,
    handshake: Arc<Handshake>,
    max: usize,
}

impl Supervisor {
    /// Start server number `restart` (0: the first); a restarted one gets the client's
    /// handshake first. Calls go to it from now on.
    async fn start(&self, restart: u32) -> std::io::Result<Generation> {
        let (process, mut stdin, stdout) = ServerProcess::spawn(&self.spec)?;
        let swallow = match restart {
            0 => None,
            n => self.handshake.replay(n, &mut stdin).await,
        };
        let (to_server, rx) = mpsc::channel::<Vec<u8>>(OUTBOX_DEPTH);
        let (close, close_rx) = oneshot::channel();
        let server_lane = lane::spawn(stdin, rx, Some(close_rx)).1.lane(&to_server);
        self.process.set(process.pid);
        let s2c = Pipe::new(
            self.to_client.clone(),
            to_server.clone(),
            Some(self.process.clone()),
        );
        let reader = spawn_reader(
            Arc::clone(&self.relay),
            s2c,
            self.client_lane.clone(),
            swallow,
            stdout,
            self.max,
        );
        let c2s = Pipe::new(
            to_server,
            self.to_client.clone(),
            Some(self.process.clone()),
        );
        self.gate.send_replace(Gate::Up(c2s, server_lane));
        Ok(Generation {
            process,
            reader,
            close: Some(close),
        })
    }

    /// No server takes calls now; `why` is what callers are told.
    fn down(&self, why: String) {
        self.process.set(None);
        self.gate.send_replace(Gate::Down(why));
    }

    /// A server ended: relay what it wrote, then fail what it left unanswered. Returns its
    /// last words on stderr, ready to append to a message.
    async fn bury(&self, mut g: Generation, how: &str) -> String {
        drain(&mut g.reader).await;
        g.process.stderr.settle(Duration::from_millis(500)).await;
        let said = g.process.stderr.last_lines(5);
        let tail = if said.is_empty() {
            String::new()
        } else {
            format!("; its last words on stderr: {said}")
        };
        let failed = self.relay.server_gone(
            SESSION,
            &format!("the MCP server exited before answering ({how}){tail}"),
            &format!("the server ended ({how})"),
        );
        for f in failed {
            let _ = self.to_client.send(f.reply).await;
        }
        tail
    }
}

/// Start the server of a stdio front's one session (`spec`), wired to `client`.
pub(super) async fn start(
    spec: ChildSpec,
    relay: Arc<Relay>,
    client: Client,
) -> anyhow::Result<(ChildGate, One)> {
    let (gate, mut gate_rx) = watch::channel(Gate::Down("the MCP server is starting".into()));
    let sup = Supervisor {
        spec,
        relay: Arc::clone(&relay),
        to_client: client.outbox.clone(),
        client_lane: client.lane,
        process: ProcessHandle::default(),
        gate,
        handshake: Arc::new(Handshake::default()),
        max: client.max,
    };
    let first = sup.start(0).await?;
    let pid = first
        .process
        .pid
        .map_or_else(|| "?".to_string(), |p| p.to_string());
    eprintln!(
        "brownout: relaying stdio -> `{}` (pid {pid})",
        command_line(&sup.spec)
    );
    let current = gate_rx.borrow_and_update().clone();
    let carrier = ChildGate {
        relay: Arc::clone(&relay),
        current,
        gate: gate_rx,
        handshake: Arc::clone(&sup.handshake),
        to_client: client.outbox,
    };
    Ok((
        carrier,
        One {
            sup,
            gen: Some(first),
        },
    ))
}

/// The stdio front's one session: its server, started again as the plan's restart policy
/// says.
pub struct One {
    sup: Supervisor,
    gen: Option<Generation>,
}

impl OneSession for One {
    async fn serve(self, client: ClientEnd) -> anyhow::Result<i32> {
        let One { sup, gen } = self;
        serve(sup, gen, client).await
    }
}

/// Relay until the client or the server ends it. Returns the exit code.
async fn serve(
    sup: Supervisor,
    mut gen: Option<Generation>,
    client: ClientEnd,
) -> anyhow::Result<i32> {
    let relay = Arc::clone(&sup.relay);
    let ClientEnd {
        closed: mut client_rx,
        reader: client,
    } = client;
    let mut client_closed = false;
    let mut stopping = false;
    let mut last_code = 0;
    let mut restarts = 0u32;
    let mut restart_at: Option<Instant> = None;
    let mut linger_until: Option<Instant> = None;
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut sigint = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    let mut expiry = tokio::time::interval(Duration::from_secs(1));
    let far = || Instant::now() + Duration::from_secs(3600);

    let code = loop {
        let timer = relay.next_timer().map(|t| t.saturating_sub(relay.now()));
        tokio::select! {
            status = wait(&mut gen) => {
                let Some(g) = gen.take() else { continue };
                let status = status?;
                let how = describe(&status);
                last_code = exit_code(&status);
                sup.down(format!("the MCP server exited ({how})"));
                let tail = sup.bury(g, &how).await;
                if stopping {
                    eprintln!("brownout: stopped on a signal; the server ended ({how})");
                    break 0;
                }
                if client_closed {
                    break last_code;
                }
                // The policy of the plan running now (a reload may have changed it).
                let policy = relay.restart_policy();
                if !status.success() && policy.on_failure && restarts < policy.max_restarts {
                    let delay = crate::relay::to_duration(policy.delay(restarts));
                    restarts += 1;
                    let (n, ms) = (policy.max_restarts, delay.as_millis());
                    eprintln!("brownout: the server ended ({how}); restart {restarts}/{n} in {ms}ms");
                    sup.down(format!("the MCP server is restarting after it ended ({how}): restart {restarts}/{n} in {ms} ms; try again then"));
                    restart_at = Some(Instant::now() + delay);
                } else {
                    if !status.success() {
                        eprintln!("brownout: the server ended ({how}); not restarting");
                    }
                    sup.down(format!("the MCP server has exited ({how}){tail}"));
                    linger_until = Some(Instant::now() + LINGER);
                }
            }
            _ = tokio::time::sleep_until(restart_at.unwrap_or_else(far)), if restart_at.is_some() => {
                restart_at = None;
                match sup.start(restarts).await {
                    Ok(g) => gen = Some(g),
                    Err(e) => {
                        eprintln!("brownout: restarting the server failed: {e}");
                        sup.down(format!("the MCP server could not be restarted: {e}"));
                        linger_until = Some(Instant::now() + LINGER);
                    }
                }
            }
            _ = tokio::time::sleep_until(linger_until.unwrap_or_else(far)), if linger_until.is_some() => break last_code,
            _ = &mut client_rx, if !client_closed => {
                client_closed = true;
                match gen.as_mut() {
                    Some(g) => {
                        // EOF to the server once what is queued is written: the polite way
                        // to ask a stdio server to exit.
                        if let Some(c) = g.close.take() {
                            let _ = c.send(());
                        }
                        stop_after(g.process.pid, GRACE);
                    }
                    None => break last_code,
                }
            }
            _ = sigterm.recv() => match gen.as_ref() {
                Some(g) => { stopping = true; stop(g) }
                None => break 0,
            },
            _ = sigint.recv() => match gen.as_ref() {
                Some(g) => { stopping = true; stop(g) }
                None => break 0,
            },
            _ = tokio::time::sleep(timer.map_or(Duration::from_secs(3600), crate::relay::to_duration)), if timer.is_some() => {
                for a in relay.on_timer(SESSION) {
                    sup.process.apply(a);
                }
            }
            _ = expiry.tick() => relay.expire(),
        }
    };
    // Nothing more goes to the client but what is already on its way.
    client.abort();
    sup.down("brownout is stopping".into());
    drop((sup, gen));
    Ok(code)
}

/// SIGTERM to the server, SIGKILL if it is still there after the grace.
fn stop(g: &Generation) {
    g.process.signal(Signal::SIGTERM);
    stop_after(g.process.pid, GRACE);
}

fn command_line(spec: &ChildSpec) -> String {
    std::iter::once(spec.program.as_str())
        .chain(spec.args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The current server's exit; never resolves while there is none.
async fn wait(gen: &mut Option<Generation>) -> std::io::Result<std::process::ExitStatus> {
    match gen {
        Some(g) => g.process.child.wait().await,
        None => std::future::pending().await,
    }
}

/// The child back as the stdio front sees it: the current server, or why there is none.
pub struct ChildGate {
    relay: Arc<Relay>,
    gate: watch::Receiver<Gate>,
    current: Gate,
    handshake: Arc<Handshake>,
    to_client: Outbox,
}

impl Carrier for ChildGate {
    /// To the current server, or answered at once with why there is none.
    async fn send(&mut self, v: Verdict, bytes: Vec<u8>) {
        // Looked at after the engine saw the call: a server that ended before this point
        // has either failed the call already or never gets it.
        if self.gate.has_changed().unwrap_or(false) {
            self.current = self.gate.borrow_and_update().clone();
        }
        match &self.current {
            Gate::Up(pipe, lane) => {
                self.handshake.remember(&bytes);
                lane::carry(pipe, lane, v, bytes).await;
            }
            Gate::Down(why) => refuse(&self.relay, &self.to_client, v, why).await,
        }
    }

    /// Written first when the server is up: `record` runs in the same poll as the first
    /// write (whether or not that finished it), before the server's reader or its watcher
    /// can run and answer or fail the call.
    async fn pass<F>(&mut self, bytes: Vec<u8>, record: F)
    where
        F: FnOnce() + Send,
    {
        if self.gate.has_changed().unwrap_or(false) {
            self.current = self.gate.borrow_and_update().clone();
        }
        let Gate::Up(pipe, lane) = &self.current else {
            record();
            return self.send(Verdict::pass(), bytes).await;
        };
        self.handshake.remember(&bytes);
        let write = std::pin::pin!(lane::carry(pipe, lane, Verdict::pass(), bytes));
        write_then_record(write, record).await;
    }
}

/// Run `write` and call `record` in the same poll as its first, whether or not that poll
/// finished it: on the current-thread runtime every stdio relay runs on, nothing else of
/// the relay (a reader, the watcher, a timer) runs between the write's start and the
/// record, however long the rest of the write takes.
/// `write` is lent pinned where it was made: a write future moved into another is copied
/// whole, a cost on every message.
fn write_then_record<'a, W: std::future::Future>(
    mut write: std::pin::Pin<&'a mut W>,
    record: impl FnOnce() + 'a,
) -> impl std::future::Future<Output = W::Output> + 'a {
    let mut record = Some(record);
    std::future::poll_fn(move |cx| {
        let written = write.as_mut().poll(cx);
        if let Some(record) = record.take() {
            record();
        }
        written
    })
}

/// No server takes the message: an answer the engine made stands; a call is answered with
/// a clear error saying why; anything else is dropped.
async fn refuse(relay: &Relay, to_client: &Outbox, v: Verdict, why: &str) {
    for r in v.reply {
        let _ = to_client.send(r.bytes).await;
    }
    for f in relay.fail_pending(SESSION, why) {
        let _ = to_client.send(f.reply).await;
    }
}

/// Server → client: reads the server's stdout and carries out verdicts on its messages,
/// in its own task, so a response crosses brownout with a single hand-off. `swallow` is the
/// id of a replayed `initialize` whose answer the client must not see.
fn spawn_reader(
    relay: Arc<Relay>,
    pipe: Pipe,
    lane: Lane,
    mut swallow: Option<jsonrpc::Id>,
    stdout: ChildStdout,
    max: usize,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut reader = LineReader::new(BufReader::new(stdout), max);
        let first = lane::writes_first();
        while let Ok(Some(frame)) = reader.next().await {
            let bytes = match frame {
                Frame::Line(bytes) => {
                    if swallow
                        .as_ref()
                        .is_some_and(|id| is_response_to(&bytes, id))
                    {
                        swallow = None;
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
            let read = relay.read(Side::Server, SESSION, &bytes);
            if read.passes() && first {
                // Nothing can touch it: written first, recorded after, off its path, in the
                // same poll as the write's start. Not once the write is done: a client slow
                // to read would keep the answer unrecorded, and a server that exits
                // meanwhile would have its call failed too (the client would get the answer
                // and an error). Unconstrained (no yield to the scheduler's budget): the
                // first poll writes.
                let copy = lane::line_copy(&bytes);
                let write = std::pin::pin!(lane::carry(&pipe, &lane, Verdict::pass(), copy));
                let pass = write_then_record(write, || {
                    relay.handle_read(Side::Server, SESSION, &read);
                });
                tokio::task::unconstrained(pass).await;
                continue;
            }
            let v = relay.handle_read(Side::Server, SESSION, &read);
            lane::carry(&pipe, &lane, v, bytes).await;
        }
    })
}

/// Wait until the server's stdout reader has reached end of file (at most [`DRAIN`]), so an
/// answer written just before the exit reaches the client as an answer, not as a failure.
async fn drain(reader: &mut JoinHandle<()>) {
    if !reader.is_finished() && tokio::time::timeout(DRAIN, &mut *reader).await.is_err() {
        eprintln!("brownout: the server's stdout is still open after it exited; failing the calls in flight");
    }
}
