//! Server-sent events, as a relay needs them: parse a byte stream into events and write
//! events back out, keeping every field.
//!
//! Written by hand on purpose: SSE client crates follow the browser rules and swallow what a
//! relay must pass on — events without data (the priming event of MCP 2025-11-25 carries only
//! an id), `retry:` fields, comments used as keep-alives. The format is small (WHATWG HTML
//! §9.2.6): lines end in LF, CRLF or CR; a blank line ends an event; `field: value`.

/// One event, with every field it came with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Event {
    pub id: Option<String>,
    pub event: Option<String>,
    /// The data lines joined with `\n`; `None` when the event had no `data:` field.
    pub data: Option<String>,
    pub retry: Option<u64>,
    /// Comment lines (`: …`), without the colon.
    pub comments: Vec<String>,
}

impl Event {
    /// An event carrying one JSON-RPC message.
    pub fn message(bytes: &[u8]) -> Event {
        Event {
            data: Some(String::from_utf8_lossy(bytes).into_owned()),
            ..Event::default()
        }
    }

    /// The event in wire format, ending with the blank line.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.data.as_ref().map_or(16, |d| d.len() + 16));
        for c in &self.comments {
            out.push(b':');
            out.extend_from_slice(c.as_bytes());
            out.push(b'\n');
        }
        if let Some(e) = &self.event {
            push_field(&mut out, "event", e);
        }
        if let Some(id) = &self.id {
            push_field(&mut out, "id", id);
        }
        if let Some(r) = self.retry {
            push_field(&mut out, "retry", &r.to_string());
        }
        if let Some(d) = &self.data {
            for line in d.split('\n') {
                push_field(&mut out, "data", line);
            }
        }
        out.push(b'\n');
        out
    }

    fn is_empty(&self) -> bool {
        self.id.is_none()
            && self.event.is_none()
            && self.data.is_none()
            && self.retry.is_none()
            && self.comments.is_empty()
    }
}

fn push_field(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.push(b'\n');
}

/// An incremental parser: feed it chunks as they arrive, take the events they complete.
#[derive(Debug, Default)]
pub struct Parser {
    line: Vec<u8>,
    /// The previous chunk ended in CR: a LF starting the next one belongs to it.
    after_cr: bool,
    current: Event,
    /// Bytes held in `line` and `current`, to bound an event that never ends.
    pending: usize,
}

/// An event grew past the size limit without ending.
#[derive(Debug, thiserror::Error)]
#[error("an SSE event grew past {0} bytes without ending")]
pub struct TooLarge(pub usize);

impl Parser {
    pub fn new() -> Parser {
        Parser::default()
    }

    /// Feed a chunk; complete events are appended to `out`.
    pub fn feed(&mut self, chunk: &[u8], max: usize, out: &mut Vec<Event>) -> Result<(), TooLarge> {
        for &b in chunk {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' => self.end_line(out),
                b'\r' => {
                    self.end_line(out);
                    self.after_cr = true;
                }
                _ => {
                    self.line.push(b);
                    self.pending += 1;
                    if self.pending > max {
                        return Err(TooLarge(max));
                    }
                }
            }
        }
        Ok(())
    }

    /// The stream ended: an event without its final blank line is discarded (as the SSE
    /// rules say), so a cut stream never delivers half a message.
    pub fn finish(self) {}

    fn end_line(&mut self, out: &mut Vec<Event>) {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            let ev = std::mem::take(&mut self.current);
            self.pending = 0;
            if !ev.is_empty() {
                out.push(ev);
            }
            return;
        }
        let text = String::from_utf8_lossy(&line);
        if let Some(comment) = text.strip_prefix(':') {
            self.current.comments.push(comment.to_string());
            return;
        }
        let (name, value) = match text.find(':') {
            Some(i) => {
                let v = &text[i + 1..];
                (&text[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (&text[..], ""),
        };
        match name {
            "data" => match &mut self.current.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => self.current.data = Some(value.to_string()),
            },
            "id" if !value.contains('\0') => self.current.id = Some(value.to_string()),
            "event" => self.current.event = Some(value.to_string()),
            "retry" => {
                if let Ok(ms) = value.parse() {
                    self.current.retry = Some(ms);
                }
            }
            _ => {} // unknown fields are ignored, as the format says
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(chunks: &[&[u8]]) -> Vec<Event> {
        let mut p = Parser::new();
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, 1 << 20, &mut out).expect("within limit");
        }
        out
    }

    #[test]
    fn keeps_priming_events_retry_and_comments() {
        let evs = parse(&[b"id: 7\ndata:\n\n: keep-alive\n\nretry: 500\nid: 8\nevent: message\ndata: {\"a\":1}\n\n"]);
        assert_eq!(evs.len(), 3);
        assert_eq!(evs[0].id.as_deref(), Some("7"));
        assert_eq!(evs[0].data.as_deref(), Some(""));
        assert_eq!(evs[1].comments, vec![" keep-alive".to_string()]);
        assert_eq!(evs[2].retry, Some(500));
        assert_eq!(evs[2].event.as_deref(), Some("message"));
        assert_eq!(evs[2].data.as_deref(), Some("{\"a\":1}"));
    }

    #[test]
    fn events_split_anywhere_and_any_line_ending() {
        let whole: &[u8] = b"data: one\r\ndata: two\r\n\r\ndata: three\r\rdata: x\n\n";
        for cut in 0..whole.len() {
            let evs = parse(&[&whole[..cut], &whole[cut..]]);
            let data: Vec<_> = evs
                .iter()
                .map(|e| e.data.clone().unwrap_or_default())
                .collect();
            assert_eq!(data, vec!["one\ntwo", "three", "x"], "cut at {cut}");
        }
    }

    #[test]
    fn encode_then_parse_is_identity() {
        let ev = Event {
            id: Some("s1-42".into()),
            event: Some("message".into()),
            data: Some("{\"x\":\"a\\nb\"}\nsecond line".into()),
            retry: Some(1000),
            comments: vec![" hi".into()],
        };
        assert_eq!(parse(&[&ev.encode()]), vec![ev]);
    }

    #[test]
    fn an_endless_event_is_an_error_not_a_leak() {
        let mut p = Parser::new();
        let mut out = Vec::new();
        assert!(p.feed(&[b'a'; 100], 50, &mut out).is_err());
    }

    #[test]
    fn a_cut_event_is_not_delivered() {
        assert!(parse(&[b"data: {\"half\":"]).is_empty());
    }
}
