//! Newline-delimited framing for stdio MCP, with a size limit.
//!
//! MCP's stdio transport sends one JSON-RPC message per line. [`LineReader`] reads lines of
//! at most `max` bytes; a longer line is skipped to its end and reported as
//! [`Frame::Oversized`] with its first bytes and its top-level id (found while the line
//! streams past, wherever in the line it is), so the relay can answer the right caller with
//! a clear error and lose nothing else. [`spawn_writer`] writes queued messages as lines
//! (the one writer loop of every stdio side: the client's stdout, a server's stdin).

use brownout_core::jsonrpc::{TopId, TopLevelId};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// Default largest message: 16 MiB.
pub const DEFAULT_MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// How much of an oversized line is kept to find its id.
const PREFIX: usize = 4096;

#[derive(Debug, PartialEq)]
pub enum Frame {
    /// One message, without its line ending.
    Line(Vec<u8>),
    /// A line over the limit: its total size, its first bytes and its top-level id.
    Oversized {
        size: usize,
        prefix: Vec<u8>,
        id: TopId,
    },
}

pub struct LineReader<R> {
    inner: R,
    max: usize,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    pub fn new(inner: R, max: usize) -> Self {
        LineReader { inner, max }
    }

    /// The next frame; `None` at end of input. Empty lines are skipped.
    pub async fn next(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            let mut line = Vec::new();
            let mut size = 0usize;
            let mut oversized = false;
            let mut finder = TopLevelId::new();
            loop {
                let buf = self.inner.fill_buf().await?;
                if buf.is_empty() {
                    if size == 0 {
                        return Ok(None);
                    }
                    break;
                }
                let (chunk, done) = match memchr(buf) {
                    Some(i) => (&buf[..i], Some(i + 1)),
                    None => (buf, None),
                };
                size += chunk.len();
                if size > self.max {
                    if !oversized {
                        oversized = true;
                        finder.feed(&line);
                        line.truncate(PREFIX);
                    }
                    if !finder.is_done() {
                        finder.feed(chunk);
                    }
                    let room = PREFIX.saturating_sub(line.len());
                    line.extend_from_slice(&chunk[..room.min(chunk.len())]);
                } else {
                    // Room for the line ending a fast lane adds (see `super::lane`).
                    line.reserve(chunk.len() + 1);
                    line.extend_from_slice(chunk);
                }
                let used = done.unwrap_or(buf.len());
                self.inner.consume(used);
                if done.is_some() {
                    break;
                }
            }
            if oversized {
                return Ok(Some(Frame::Oversized {
                    size,
                    prefix: line,
                    id: finder.finish(),
                }));
            }
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Ok(Some(Frame::Line(line)));
        }
    }
}

fn memchr(buf: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', buf)
}

/// The `-32600` error answering a message over the limit, addressed to its top-level id
/// (spliced as the sender wrote it); `None` when that id is unknown (or the message is a
/// notification): better no answer than an answer to another caller.
pub fn oversized_error(size: usize, id: &TopId, max: usize) -> Option<Vec<u8>> {
    let TopId::Found(raw) = id else {
        return None;
    };
    let msg = format!(
        "brownout: message of {size} bytes is over the limit of {max} bytes (--max-message-bytes)"
    );
    let error = serde_json::json!({"code": -32600, "message": msg});
    Some(format!(r#"{{"jsonrpc":"2.0","id":{raw},"error":{error}}}"#).into_bytes())
}

/// Write messages from `rx` as lines, in batches, flushing whenever the queue runs dry.
/// When `close` fires (or its sender is dropped), what is queued is written and the writer
/// ends, closing `w` (EOF to a server's stdin). After a failed write (the reader is gone)
/// the writer ends; what still comes is dropped. (The loop is [`super::lane::spawn`],
/// which also gives the writer a fast lane.)
pub fn spawn_writer<W: AsyncWrite + Unpin + Send + 'static>(
    w: W,
    rx: mpsc::Receiver<Vec<u8>>,
    close: Option<oneshot::Receiver<()>>,
) -> JoinHandle<()> {
    super::lane::spawn(w, rx, close).0
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize) -> Vec<Frame> {
        let mut r = LineReader::new(tokio::io::BufReader::with_capacity(7, input), max);
        let mut out = Vec::new();
        while let Some(f) = r.next().await.expect("read") {
            out.push(f);
        }
        out
    }

    #[tokio::test]
    async fn lines_and_limits() {
        let input = b"{\"a\":1}\r\n\n{\"id\":42,\"x\":\"0123456789abcdef\"}\n{\"b\":2}";
        let f = frames(input, 20).await;
        assert_eq!(f[0], Frame::Line(b"{\"a\":1}".to_vec()));
        let Frame::Oversized { size, prefix, id } = &f[1] else {
            panic!("oversized")
        };
        assert_eq!(*size, 32);
        assert!(prefix.starts_with(b"{\"id\":42"));
        assert_eq!(id, &TopId::Found("42".into()));
        assert_eq!(
            f[2],
            Frame::Line(b"{\"b\":2}".to_vec()),
            "nothing after it is lost"
        );
        assert_eq!(f.len(), 3);
    }

    #[tokio::test]
    async fn the_id_of_an_oversized_line_is_the_top_level_one_wherever_it_is() {
        // The caller's id comes after a big payload holding an `id` of its own.
        let mut input = br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"get","arguments":{"id":"INC-1","blob":""#.to_vec();
        input.extend(std::iter::repeat_n(b'x', 10_000));
        input.extend_from_slice(b"\"}},\"id\":1e2}\n{\"method\":\"n\",\"params\":{\"id\":3,\"b\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxx\"}}\n");
        let f = frames(&input, 64).await;
        let Frame::Oversized { id, .. } = &f[0] else {
            panic!("oversized")
        };
        assert_eq!(id, &TopId::Found("1e2".into()));
        let err = oversized_error(10_100, id, 64).expect("an answer");
        let v: serde_json::Value = serde_json::from_slice(&err).expect("json");
        assert_eq!(v["error"]["code"], -32600);
        assert!(
            String::from_utf8_lossy(&err).contains(r#""id":1e2"#),
            "the id as sent"
        );
        let Frame::Oversized { id, .. } = &f[1] else {
            panic!("oversized")
        };
        assert_eq!(id, &TopId::Absent, "a notification: nobody to answer");
        assert_eq!(oversized_error(100, id, 64), None);
    }

    #[tokio::test]
    async fn the_writer_writes_what_is_queued_as_lines_then_closes_on_request() {
        use tokio::io::AsyncReadExt;
        let (w, mut r) = tokio::io::duplex(1 << 16);
        let (tx, rx) = mpsc::channel(8);
        let (close, close_rx) = oneshot::channel();
        for m in [&b"a"[..], b"{\"b\":2}", b"c"] {
            tx.send(m.to_vec()).await.expect("queued");
        }
        let writer = spawn_writer(w, rx, Some(close_rx));
        close.send(()).expect("writer alive");
        writer.await.expect("writer ends");
        let mut out = Vec::new();
        r.read_to_end(&mut out).await.expect("EOF once closed");
        assert_eq!(out, b"a\n{\"b\":2}\nc\n");
        assert!(tx.is_closed(), "nothing is taken after the close");
    }

    #[tokio::test]
    async fn the_writer_without_a_close_ends_with_its_senders() {
        use tokio::io::AsyncReadExt;
        let (w, mut r) = tokio::io::duplex(1 << 16);
        let (tx, rx) = mpsc::channel(8);
        let writer = spawn_writer(w, rx, None);
        tx.send(b"x".to_vec()).await.expect("queued");
        drop(tx);
        writer.await.expect("writer ends");
        let mut out = Vec::new();
        r.read_to_end(&mut out).await.expect("EOF");
        assert_eq!(out, b"x\n");
    }
}
