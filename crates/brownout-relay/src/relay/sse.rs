//! Server-sent events, as a relay needs them: parse a byte stream into events and write
//! them back out byte for byte.
//!
//! Written by hand on purpose: SSE client crates follow the browser rules and swallow what a
//! relay must pass on — events without data (the priming event of MCP 2025-11-25 carries only
//! an id), `retry:` fields, comments used as keep-alives, fields they do not know. The format
//! is small (WHATWG HTML §9.2.6): lines end in LF, CRLF or CR; a blank line ends an event;
//! `field: value`.
//!
//! Every parsed event keeps its raw bytes: an event nothing changes is written exactly as it
//! came (unknown fields, spacing, line endings and all), and an event whose message a fault
//! replaces is rebuilt from those bytes with only its `data` lines swapped. Data are bytes,
//! never re-decoded: bytes that are not UTF-8 reach the client as they are.

/// One event, with every field it came with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Event {
    pub id: Option<String>,
    pub event: Option<String>,
    /// The data lines joined with `\n`; `None` when the event had no `data:` field.
    pub data: Option<Vec<u8>>,
    pub retry: Option<u64>,
    /// Comment lines (`: …`), without the colon.
    pub comments: Vec<String>,
    /// The event as it came on the wire, up to and including the blank line that ended it;
    /// empty for an event brownout makes.
    pub raw: Vec<u8>,
}

impl Event {
    /// An event carrying one JSON-RPC message (brownout's own: no raw bytes).
    pub fn message(bytes: &[u8]) -> Event {
        Event {
            data: Some(bytes.to_vec()),
            ..Event::default()
        }
    }

    /// Whether the event carries a JSON-RPC message (a `message` event with data).
    pub fn carries_message(&self) -> bool {
        self.event.as_deref().is_none_or(|e| e == "message")
            && self
                .data
                .as_deref()
                .is_some_and(|d| d.iter().any(|b| !b.is_ascii_whitespace()))
    }

    /// The same event with other data: its raw bytes with the `data` lines replaced by
    /// `data`'s lines (at the place of the first one), every other line as it was.
    pub fn with_data(&self, data: &[u8]) -> Event {
        let mut ev = self.clone();
        ev.data = Some(data.to_vec());
        if self.raw.is_empty() {
            return ev;
        }
        let mut out = Vec::with_capacity(self.raw.len() + data.len());
        let mut placed = false;
        let lines = raw_lines(&self.raw);
        let last = lines.len().saturating_sub(1);
        for (i, (line, end)) in lines.into_iter().enumerate() {
            let blank_end = i == last && line.is_empty();
            if field_name(line) == b"data" && !line.starts_with(b":") {
                if !placed {
                    push_data(&mut out, data);
                    placed = true;
                }
                continue;
            }
            if blank_end && !placed {
                push_data(&mut out, data);
                placed = true;
            }
            out.extend_from_slice(line);
            out.extend_from_slice(end);
        }
        ev.raw = out;
        ev
    }

    /// The event in wire format, ending with the blank line: its raw bytes when it has
    /// them, else built from its fields.
    pub fn encode(&self) -> Vec<u8> {
        if !self.raw.is_empty() {
            return self.raw.clone();
        }
        let mut out = Vec::with_capacity(self.data.as_ref().map_or(16, |d| d.len() + 16));
        for c in &self.comments {
            out.push(b':');
            out.extend_from_slice(c.as_bytes());
            out.push(b'\n');
        }
        if let Some(e) = &self.event {
            push_field(&mut out, "event", e.as_bytes());
        }
        if let Some(id) = &self.id {
            push_field(&mut out, "id", id.as_bytes());
        }
        if let Some(r) = self.retry {
            push_field(&mut out, "retry", r.to_string().as_bytes());
        }
        if let Some(d) = &self.data {
            push_data(&mut out, d);
        }
        out.push(b'\n');
        out
    }

    /// [`Event::encode`], without a copy of the raw bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        if self.raw.is_empty() {
            self.encode()
        } else {
            self.raw
        }
    }

    fn is_empty(&self) -> bool {
        self.id.is_none()
            && self.event.is_none()
            && self.data.is_none()
            && self.retry.is_none()
            && self.comments.is_empty()
    }
}

fn push_field(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.push(b'\n');
}

/// `data:` lines for `data` (one per line of it).
fn push_data(out: &mut Vec<u8>, data: &[u8]) {
    for line in data.split(|&b| b == b'\n') {
        push_field(out, "data", line);
    }
}

/// The name of a field line: up to its first colon, or the whole line.
fn field_name(line: &[u8]) -> &[u8] {
    match line.iter().position(|&b| b == b':') {
        Some(i) => &line[..i],
        None => line,
    }
}

/// Split raw event bytes into (line, line ending) pairs.
fn raw_lines(raw: &[u8]) -> Vec<(&[u8], &[u8])> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'\n' => {
                out.push((&raw[start..i], &raw[i..i + 1]));
                i += 1;
                start = i;
            }
            b'\r' => {
                let end = if raw.get(i + 1) == Some(&b'\n') {
                    i + 2
                } else {
                    i + 1
                };
                out.push((&raw[start..i], &raw[i..end]));
                i = end;
                start = i;
            }
            _ => i += 1,
        }
    }
    if start < raw.len() {
        out.push((&raw[start..], &raw[raw.len()..]));
    }
    out
}

/// An incremental parser: feed it chunks as they arrive, take the events they complete.
#[derive(Debug, Default)]
pub struct Parser {
    line: Vec<u8>,
    /// The previous chunk ended in CR: a LF starting the next one belongs to it.
    after_cr: bool,
    current: Event,
    /// The bytes of the event being read, as they came.
    raw: Vec<u8>,
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

    /// Feed a chunk; complete events are appended to `out`. A line's text is copied a run
    /// at a time (up to the next CR or LF, found with memchr), not a byte at a time.
    pub fn feed(&mut self, chunk: &[u8], max: usize, out: &mut Vec<Event>) -> Result<(), TooLarge> {
        let mut i = 0;
        if self.after_cr && !chunk.is_empty() {
            // The LF of a CRLF split across chunks: kept with the bytes, not a line end.
            self.after_cr = false;
            if chunk[0] == b'\n' {
                self.raw.push(b'\n');
                i = 1;
            }
        }
        while i < chunk.len() {
            let rest = &chunk[i..];
            let run = memchr::memchr2(b'\n', b'\r', rest).unwrap_or(rest.len());
            if run > 0 {
                let text = &rest[..run];
                self.raw.extend_from_slice(text);
                self.line.extend_from_slice(text);
                self.pending += run;
                if self.pending > max {
                    return Err(TooLarge(max));
                }
                i += run;
                continue;
            }
            let b = chunk[i];
            i += 1;
            self.raw.push(b);
            if b == b'\r' {
                // Keep a CRLF's LF with the line it ends when it is in this chunk.
                if chunk.get(i) == Some(&b'\n') {
                    self.raw.push(b'\n');
                    i += 1;
                } else {
                    self.after_cr = i == chunk.len();
                }
            }
            self.end_line(out);
        }
        Ok(())
    }

    /// The stream ended: an event without its final blank line is discarded (as the SSE
    /// rules say), so a cut stream never delivers half a message.
    pub fn finish(self) {}

    fn end_line(&mut self, out: &mut Vec<Event>) {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            let mut ev = std::mem::take(&mut self.current);
            self.pending = 0;
            if !ev.is_empty() {
                // A CRLF split across chunks: its LF is still to come and is taken with
                // this event's bytes by the next one (the bytes stay in order either way).
                ev.raw = std::mem::take(&mut self.raw);
                out.push(ev);
            }
            return;
        }
        if let Some(comment) = line.strip_prefix(b":") {
            self.current
                .comments
                .push(String::from_utf8_lossy(comment).into_owned());
            return;
        }
        let name = field_name(&line);
        let value = line.get(name.len() + 1..).unwrap_or_default();
        let value = value.strip_prefix(b" ").unwrap_or(value);
        let text = || String::from_utf8_lossy(value).into_owned();
        match name {
            b"data" => match &mut self.current.data {
                Some(d) => {
                    d.push(b'\n');
                    d.extend_from_slice(value);
                }
                None => self.current.data = Some(value.to_vec()),
            },
            b"id" if !value.contains(&0) => self.current.id = Some(text()),
            b"event" => self.current.event = Some(text()),
            b"retry" => {
                if let Ok(ms) = text().parse() {
                    self.current.retry = Some(ms);
                }
            }
            _ => {} // unknown fields are ignored (but kept in the raw bytes)
        }
    }
}
/// Legacy HTTP+SSE: sees the `endpoint` event, may rewrite it, returns the session key the
/// rest of the stream belongs to.
pub type EndpointHook = Box<dyn FnMut(&mut Event) -> Option<String> + Send>;

/// One event of a server's stream, as a relay sorts it.
#[derive(Debug)]
pub enum Incoming {
    /// An event carrying a JSON-RPC message (its data): for the engine.
    Message(Event, Vec<u8>),
    /// Anything else (priming events, `retry:`, comments, `endpoint`): passed on as it is.
    Other(Event),
}

/// A server's SSE stream read as every relay path reads it: events parsed (bounded), the
/// legacy `endpoint` event shown to the hook (which may rename the session), whether the
/// server gave an event id (then the client can resume an early end), messages told apart.
pub struct Reader {
    parser: Parser,
    max_event: usize,
    pub on_endpoint: Option<EndpointHook>,
    /// The server gave an event id: the client can resume the stream.
    pub resumable: bool,
}

impl Reader {
    pub fn new(max_event: usize, on_endpoint: Option<EndpointHook>) -> Reader {
        Reader {
            parser: Parser::new(),
            max_event,
            on_endpoint,
            resumable: false,
        }
    }

    /// Feed a chunk; the events it completes are appended to `out`. The `endpoint` hook
    /// may set `key`, the session the rest of the stream belongs to.
    pub fn feed(
        &mut self,
        chunk: &[u8],
        key: &mut String,
        out: &mut Vec<Incoming>,
    ) -> Result<(), TooLarge> {
        let mut events = Vec::new();
        self.parser.feed(chunk, self.max_event, &mut events)?;
        for mut ev in events {
            self.resumable |= ev.id.as_deref().is_some_and(|id| !id.is_empty());
            if ev.event.as_deref() == Some("endpoint") {
                if let Some(hook) = self.on_endpoint.as_mut() {
                    if let Some(k) = hook(&mut ev) {
                        *key = k;
                    }
                }
            }
            out.push(if ev.carries_message() {
                let bytes = ev.data.clone().unwrap_or_default();
                Incoming::Message(ev, bytes)
            } else {
                Incoming::Other(ev)
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parser as it read a byte at a time before it read runs: the reference the run
    /// reader is held to.
    fn feed_bytewise(
        p: &mut Parser,
        chunk: &[u8],
        max: usize,
        out: &mut Vec<Event>,
    ) -> Result<(), TooLarge> {
        let mut i = 0;
        while i < chunk.len() {
            let b = chunk[i];
            i += 1;
            p.raw.push(b);
            if p.after_cr {
                p.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' => p.end_line(out),
                b'\r' => {
                    if chunk.get(i) == Some(&b'\n') {
                        p.raw.push(b'\n');
                        i += 1;
                    } else {
                        p.after_cr = true;
                    }
                    p.end_line(out);
                }
                _ => {
                    p.line.push(b);
                    p.pending += 1;
                    if p.pending > max {
                        return Err(TooLarge(max));
                    }
                }
            }
        }
        Ok(())
    }

    #[test]
    fn runs_are_read_as_bytes_were() {
        // Streams of SSE fields, CR, LF, CRLF and blank lines, cut into chunks of every size
        // up to 9 at random: the events (their bytes included), the errors and the state
        // left are those of the byte-at-a-time reader. A fixed seed, so a failure replays.
        let pieces: [&[u8]; 12] = [
            b"data: ",
            b"{\"id\":1}",
            b"\n",
            b"\r",
            b"\r\n",
            b"event: message",
            b":c",
            b"id: 7",
            b"retry: 10",
            b"x",
            b"data:",
            b"\n\n",
        ];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for _ in 0..3_000 {
            let mut input = Vec::new();
            for _ in 0..next(40) {
                input.extend_from_slice(pieces[next(pieces.len())]);
            }
            let max = [8, 30, 1 << 20][next(3)];
            let (mut a, mut b) = (Parser::new(), Parser::new());
            let (mut out_a, mut out_b) = (Vec::new(), Vec::new());
            let mut at = 0;
            while at < input.len() {
                let end = (at + 1 + next(9)).min(input.len());
                let chunk = &input[at..end];
                let ra = a.feed(chunk, max, &mut out_a).map_err(|e| e.0);
                let rb = feed_bytewise(&mut b, chunk, max, &mut out_b).map_err(|e| e.0);
                assert_eq!(ra, rb, "{:?}", String::from_utf8_lossy(&input));
                if ra.is_err() {
                    break;
                }
                at = end;
            }
            assert_eq!(
                format!("{out_a:?}"),
                format!("{out_b:?}"),
                "{:?}",
                String::from_utf8_lossy(&input)
            );
            if at >= input.len() {
                assert_eq!(format!("{a:?}"), format!("{b:?}"));
            }
        }
    }

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
        assert_eq!(evs[0].data.as_deref(), Some(&b""[..]));
        assert_eq!(evs[1].comments, vec![" keep-alive".to_string()]);
        assert_eq!(evs[2].retry, Some(500));
        assert_eq!(evs[2].event.as_deref(), Some("message"));
        assert_eq!(evs[2].data.as_deref(), Some(&b"{\"a\":1}"[..]));
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
            assert_eq!(
                data,
                vec![b"one\ntwo".to_vec(), b"three".to_vec(), b"x".to_vec()],
                "cut at {cut}"
            );
            let raw: Vec<u8> = evs.iter().flat_map(|e| e.raw.clone()).collect();
            assert_eq!(raw, whole, "cut at {cut}");
        }
    }

    #[test]
    fn encode_then_parse_is_identity() {
        let ev = Event {
            id: Some("s1-42".into()),
            event: Some("message".into()),
            data: Some(b"{\"x\":\"a\\nb\"}\nsecond line".to_vec()),
            retry: Some(1000),
            comments: vec![" hi".into()],
            raw: Vec::new(),
        };
        let wire = ev.encode();
        let back = parse(&[&wire]);
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].raw, wire);
        assert_eq!(
            Event {
                raw: Vec::new(),
                ..back[0].clone()
            },
            ev
        );
    }

    #[test]
    fn untouched_events_keep_their_bytes_and_changed_ones_keep_their_other_lines() {
        let whole: &[u8] =
            b"id:e1\r\nfoo:  bar\r\nevent:message\r\ndata:{\"a\":\r\ndata:1}\r\n: c\r\n\r\n";
        let evs = parse(&[whole]);
        assert_eq!(evs.len(), 1);
        assert_eq!(evs[0].encode(), whole);
        assert_eq!(evs[0].data.as_deref(), Some(&b"{\"a\":\n1}"[..]));
        let bad = b"{\"a\":\xff}";
        let changed = evs[0].with_data(bad);
        assert_eq!(
            changed.encode(),
            b"id:e1\r\nfoo:  bar\r\nevent:message\r\ndata: {\"a\":\xff}\n: c\r\n\r\n".to_vec()
        );
        let again = parse(&[&changed.encode()]);
        assert_eq!(again[0].data.as_deref(), Some(&bad[..]));
        assert_eq!(again[0].id.as_deref(), Some("e1"));
    }

    #[test]
    fn brownout_s_own_events_carry_bytes_as_they_are() {
        let ev = Event::message(b"{\"x\":\"\xc3\x28\"}");
        assert_eq!(ev.encode(), b"data: {\"x\":\"\xc3\x28\"}\n\n".to_vec());
        let no_data = Event {
            id: Some("7".into()),
            raw: b"id: 7\n\n".to_vec(),
            ..Event::default()
        };
        assert_eq!(
            no_data.with_data(b"{}").encode(),
            b"id: 7\ndata: {}\n\n".to_vec()
        );
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
    #[test]
    fn a_reader_sorts_events_and_sees_the_endpoint() {
        let mut r = Reader::new(
            1 << 20,
            Some(Box::new(|ev: &mut Event| {
                *ev = ev.with_data(b"/local?x=1");
                Some("legacy".to_string())
            })),
        );
        let mut key = "start".to_string();
        let mut out = Vec::new();
        r.feed(
            b"event: endpoint\ndata: http://up/m?x=1\n\nid: 1\ndata: {\"id\":1}\n\n: ka\n\n",
            &mut key,
            &mut out,
        )
        .expect("within limit");
        assert_eq!(key, "legacy");
        assert!(r.resumable);
        assert!(
            matches!(&out[0], Incoming::Other(e) if e.encode() == b"event: endpoint\ndata: /local?x=1\n\n")
        );
        assert!(matches!(&out[1], Incoming::Message(_, b) if b == b"{\"id\":1}"));
        assert!(matches!(&out[2], Incoming::Other(_)));
    }
}
