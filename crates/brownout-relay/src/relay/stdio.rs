//! The stdio front: a client speaks to brownout on stdin/stdout exactly as to the server
//! (`brownout proxy stdio`), whatever the back.
//!
//! [`run`] opens the back's one session ([`Back::open_one`]) and serves it.
//! [`spawn_client_reader`] reads the client's lines; each passes the engine, then goes to
//! the session's [`Carrier`] with its verdict. A line over the limit is answered with
//! `-32600` (addressed to its top-level id, else not at all) and nothing else is lost. What
//! goes to the client (the server's messages, brownout's own answers) is queued on one
//! outbox and written by one writer task, with a fast lane past it for untouched messages
//! ([`super::lane`]). The backs: [`super::child_back`] (`-- CMD`) and [`super::url_back`]
//! (`--upstream URL`).

use super::framing::{oversized_error, Frame, LineReader};
use super::layers::{self, Back, Carrier, Client, ClientEnd, Layer, OneSession};
use super::{lane, Driver, Outbox, Relay, OUTBOX_DEPTH};
use brownout_core::Side;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// The stdio front: one client, its messages in order; it can deliver several messages for
/// one (duplicates, a notification after an answer) and pass one on more than once.
pub const FRONT: Layer = Layer {
    name: "proxy stdio",
    can: &[
        brownout_core::Capability::MultipleAnswers,
        brownout_core::Capability::MultipleRequests,
    ],
};

/// `proxy stdio` before the back `B`: what it is called and what it can carry out.
pub fn driver<B: Back>() -> Driver {
    layers::driver(FRONT, B::LAYER)
}

/// How long what is queued for the client may take to be written once the session ended.
const FLUSH: Duration = Duration::from_secs(2);

/// Relay between our stdin/stdout and `back`, for messages of at most `max` bytes. Returns
/// the exit code.
pub async fn run<B: Back>(back: Arc<B>, relay: Arc<Relay>, max: usize) -> anyhow::Result<i32> {
    run_with(back, relay, max, stdin(), stdout()).await
}

/// [`run`] with the client on `input` and `output`.
pub async fn run_with<B, R, W>(
    back: Arc<B>,
    relay: Arc<Relay>,
    max: usize,
    input: R,
    output: W,
) -> anyhow::Result<i32>
where
    B: Back,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (to_client, to_client_rx) = mpsc::channel::<Vec<u8>>(OUTBOX_DEPTH);
    let (writer, sink) = lane::spawn(output, to_client_rx, None);
    let client = Client {
        outbox: to_client.clone(),
        lane: sink.lane(&to_client),
        max,
    };
    let (carrier, session) = back.open_one(client).await?;
    let (closed_tx, closed) = oneshot::channel();
    let reader = spawn_client_reader(relay, carrier, input, to_client, max, closed_tx);
    let code = session.serve(ClientEnd { closed, reader }).await?;
    // Nothing more goes to the client but what is already on its way.
    let _ = tokio::time::timeout(FLUSH, writer).await;
    Ok(code)
}

/// The session key of the one stdio client.
pub const SESSION: &str = "stdio";

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

/// Client → server: each message of `input` goes through the engine, then to `back` with
/// its verdict. `closed` fires when the client's input ends (or cannot be read).
pub fn spawn_client_reader<C, R>(
    relay: Arc<Relay>,
    mut back: C,
    input: R,
    to_client: Outbox,
    max: usize,
    closed: oneshot::Sender<()>,
) -> JoinHandle<()>
where
    C: Carrier,
    R: AsyncRead + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        let mut reader = LineReader::new(BufReader::new(input), max);
        let first = lane::writes_first();
        loop {
            match reader.next().await {
                Ok(Some(Frame::Line(bytes))) => {
                    let read = relay.read(Side::Client, SESSION, &bytes);
                    if read.passes() && first {
                        let record = || {
                            relay.handle_read(Side::Client, SESSION, &read);
                        };
                        back.pass(lane::line_copy(&bytes), record).await;
                    } else {
                        let v = relay.handle_read(Side::Client, SESSION, &read);
                        back.send(v, bytes).await;
                    }
                }
                Ok(Some(Frame::Oversized { size, id, .. })) => {
                    // As with a server command: the caller gets -32600 (docs/relay.md).
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
        let _ = closed.send(());
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relay::RelayOptions;
    use brownout_core::verdict::Verdict;
    use brownout_core::Plan;
    use std::sync::Mutex;
    use tokio::io::AsyncWriteExt;

    /// A back that notes how each message came to it.
    struct Log(Arc<Mutex<Vec<&'static str>>>);

    impl Carrier for Log {
        async fn send(&mut self, _: Verdict, _: Vec<u8>) {
            self.0.lock().expect("log").push("recorded, then sent");
        }

        async fn pass<F: FnOnce() + Send>(&mut self, _: Vec<u8>, record: F) {
            self.0.lock().expect("log").push("written first");
            record();
        }
    }

    /// How the client's one untouched request reaches the back on this runtime.
    async fn how_a_request_goes() -> Vec<&'static str> {
        let plan = Plan::from_str_named("faults: []", "plan.yaml").expect("plan");
        let relay = Arc::new(Relay::new(plan, &RelayOptions::default(), None));
        let log = Arc::new(Mutex::new(Vec::new()));
        let (mut client, input) = tokio::io::duplex(1 << 12);
        let (to_client, _rx) = mpsc::channel(4);
        let (closed_tx, closed) = oneshot::channel();
        let reader = spawn_client_reader(
            Arc::clone(&relay),
            Log(Arc::clone(&log)),
            input,
            to_client,
            1 << 16,
            closed_tx,
        );
        let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#;
        client.write_all(call).await.expect("write");
        client.write_all(b"\n").await.expect("write");
        drop(client);
        let _ = closed.await;
        reader.await.expect("reader");
        assert_eq!(relay.status()["pending"], 1, "the call is known either way");
        let seen = log.lock().expect("log").clone();
        seen
    }

    #[tokio::test(flavor = "current_thread")]
    async fn an_untouched_request_is_written_first_on_the_current_thread_runtime() {
        assert_eq!(how_a_request_goes().await, ["written first"]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn on_any_other_runtime_it_is_recorded_first() {
        // The server's reader or the watcher could run on another thread between a write
        // and its record there: the engine must know the call before the server can fail it.
        assert_eq!(how_a_request_goes().await, ["recorded, then sent"]);
    }
}
