//! Newline-delimited framing for stdio MCP, with a size limit.
//!
//! MCP's stdio transport sends one JSON-RPC message per line. [`LineReader`] reads lines of
//! at most `max` bytes; a longer line is skipped to its end and reported as
//! [`Frame::Oversized`] with its first bytes, so the relay can answer with a clear error and
//! lose nothing else.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// Default largest message: 16 MiB.
pub const DEFAULT_MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// How much of an oversized line is kept to find its id.
const PREFIX: usize = 4096;

#[derive(Debug, PartialEq)]
pub enum Frame {
    /// One message, without its line ending.
    Line(Vec<u8>),
    /// A line over the limit: its total size and its first bytes.
    Oversized { size: usize, prefix: Vec<u8> },
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
                        line.truncate(PREFIX);
                    }
                    let room = PREFIX.saturating_sub(line.len());
                    line.extend_from_slice(&chunk[..room.min(chunk.len())]);
                } else {
                    line.extend_from_slice(chunk);
                }
                let used = done.unwrap_or(buf.len());
                self.inner.consume(used);
                if done.is_some() {
                    break;
                }
            }
            if oversized {
                return Ok(Some(Frame::Oversized { size, prefix: line }));
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
    buf.iter().position(|b| *b == b'\n')
}

/// Best effort: the JSON-RPC id near the start of a message that could not be read whole.
pub fn sniff_id(prefix: &[u8]) -> Option<serde_json::Value> {
    let text = String::from_utf8_lossy(prefix);
    let at = text.find("\"id\"")?;
    let rest = text[at + 4..].trim_start().strip_prefix(':')?.trim_start();
    if let Some(s) = rest.strip_prefix('"') {
        let end = s.find('"')?;
        return Some(serde_json::Value::String(s[..end].to_string()));
    }
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '-'))
        .unwrap_or(rest.len());
    rest[..end].parse::<i64>().ok().map(serde_json::Value::from)
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
        let Frame::Oversized { size, prefix } = &f[1] else {
            panic!("oversized")
        };
        assert_eq!(*size, 32);
        assert_eq!(sniff_id(prefix), Some(serde_json::json!(42)));
        assert_eq!(
            f[2],
            Frame::Line(b"{\"b\":2}".to_vec()),
            "nothing after it is lost"
        );
        assert_eq!(f.len(), 3);
    }

    #[test]
    fn sniffs_string_ids() {
        assert_eq!(
            sniff_id(br#"{"jsonrpc":"2.0", "id" : "abc", "method""#),
            Some(serde_json::json!("abc"))
        );
        assert_eq!(sniff_id(br#"{"jsonrpc":"2.0"#), None);
    }
}
