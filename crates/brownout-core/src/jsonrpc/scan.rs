//! One pass over a JSON-RPC message: it checks the text is JSON and reads, as it goes, the
//! top-level members a [`super::View`] needs, `params.name` and `result.isError`.
//!
//! Why by hand: serde_json accepts exactly this grammar, but reading the envelope into raw
//! values and then `params` and `result` again cost it three passes and a visitor call per
//! member, about a third of what the stdio relay spends on a call. This reader keeps
//! serde_json's verdicts (a test and the `jsonrpc_classify` fuzz target compare the two on
//! every input): what it accepts, what it rejects (control characters and bad escapes in
//! strings, lone surrogates in a string that is decoded, duplicate envelope members, trailing
//! text), and what a typed read of each member would give. It never recurses, so nesting
//! depth costs a bit per level and no stack.

use std::borrow::Cow;

mod pointer;
pub(super) use pointer::{argument_at, arguments};

/// What one pass read of a message that is a JSON object.
#[derive(Debug, Default)]
pub(super) struct Envelope<'a> {
    /// `jsonrpc`, decoded (`None`: absent or `null`).
    pub jsonrpc: Option<Cow<'a, str>>,
    /// `id`'s text, `null` included (`None`: absent).
    pub id: Option<&'a str>,
    /// `method`, decoded (`None`: absent or `null`).
    pub method: Option<Cow<'a, str>>,
    /// The text of `params`, `result` and `error` (`None`: absent or `null`).
    pub params: Option<&'a str>,
    pub result: Option<&'a str>,
    pub error: Option<&'a str>,
    /// `params.name` when `params` is an object whose `name` reads as a string.
    pub name: Option<Cow<'a, str>>,
    /// `result.isError` when `result` is an object whose `isError` reads as `true`.
    pub is_error: bool,
}

/// Why a text is not a JSON object (or not an envelope serde_json would read).
pub(super) type Bad = &'static str;

/// Read `text`, a whole message.
pub(super) fn envelope(text: &str) -> Result<Envelope<'_>, Bad> {
    let mut r = Reader::new(text);
    r.ws();
    if r.peek() != Some(b'{') {
        return Err("not a JSON object");
    }
    r.i += 1;
    let mut env = Envelope::default();
    // Which members were seen (serde_json refuses a second one).
    let mut seen = 0u8;
    r.members(|r, key| {
        let bit = match key.as_ref() {
            "jsonrpc" => 1,
            "id" => 2,
            "method" => 4,
            "params" => 8,
            "result" => 16,
            "error" => 32,
            _ => return r.value(),
        };
        if seen & bit != 0 {
            return Err("duplicate member");
        }
        seen |= bit;
        match bit {
            1 => env.jsonrpc = r.nullable_string()?,
            2 => env.id = Some(r.value_text()?),
            4 => env.method = r.nullable_string()?,
            8 => {
                let start = r.i;
                if r.peek() == Some(b'{') {
                    env.name = r.find_member("name", Reader::nullable_string)?.flatten();
                    env.params = Some(r.since(start));
                } else {
                    env.params = r.nullable_text()?;
                }
            }
            16 => {
                let start = r.i;
                if r.peek() == Some(b'{') {
                    env.is_error = r.find_member("isError", Reader::bool)? == Some(true);
                    env.result = Some(r.since(start));
                } else {
                    env.result = r.nullable_text()?;
                }
            }
            _ => env.error = r.nullable_text()?,
        }
        Ok(())
    })?
    .map_err(|_| "a member name is not a string")?;
    r.ws();
    if r.i != r.s.len() {
        return Err("text after the message");
    }
    Ok(env)
}

/// Decode a JSON string's text (with its quotes), as serde_json reads it into a `String`:
/// escapes decoded, a lone surrogate refused.
pub(super) fn decode_string(text: &str) -> Option<Cow<'_, str>> {
    let mut r = Reader::new(text);
    let s = r.string().ok()?.ok()?;
    (r.i == r.s.len()).then_some(s)
}

/// A position in a message's bytes.
struct Reader<'a> {
    text: &'a str,
    s: &'a [u8],
    i: usize,
}

/// A value that was read but could not be taken as its typed read asked (serde_json would
/// refuse that member's typed read, not the message): e.g. a lone surrogate in a decoded
/// string.
struct Untyped;

impl<'a> Reader<'a> {
    fn new(text: &'a str) -> Reader<'a> {
        Reader {
            text,
            s: text.as_bytes(),
            i: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.i += 1;
        }
    }

    /// The text from `start` to here (always on character boundaries: both ends are at
    /// ASCII bytes or the ends of the text).
    fn since(&self, start: usize) -> &'a str {
        self.text.get(start..self.i).unwrap_or_default()
    }

    /// Read the members of an object whose `{` is consumed, up to its `}`; `each` reads
    /// each member's value (the reader is at the value, after the `:` and blanks). The inner
    /// result is `Err` when a member's name could not be decoded (the whole object was
    /// still read).
    fn members(
        &mut self,
        mut each: impl FnMut(&mut Self, Cow<'a, str>) -> Result<(), Bad>,
    ) -> Result<Result<(), Untyped>, Bad> {
        let mut names = Ok(());
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(names);
        }
        loop {
            self.ws();
            if self.peek() != Some(b'"') {
                return Err("expected a member name");
            }
            let key = match self.string()? {
                Ok(k) => k,
                Err(Untyped) => {
                    names = Err(Untyped);
                    Cow::Borrowed("")
                }
            };
            self.ws();
            if self.peek() != Some(b':') {
                return Err("expected ':'");
            }
            self.i += 1;
            self.ws();
            each(self, key)?;
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(names);
                }
                _ => return Err("expected ',' or '}'"),
            }
        }
    }

    /// Read an object (at its `{`) looking for member `want`, read with `typed`: `Some` of
    /// its typed read when the member appears exactly once, every member name decodes and
    /// the typed read succeeds (serde_json's read of a struct with that one field); `None`
    /// otherwise.
    fn find_member<T>(
        &mut self,
        want: &str,
        typed: impl Fn(&mut Self) -> Result<T, Bad>,
    ) -> Result<Option<T>, Bad> {
        self.i += 1;
        let mut found = None;
        let mut spoiled = false;
        let names = self.members(|r, key| {
            if key != want {
                return r.value();
            }
            let start = r.i;
            match typed(r) {
                Ok(v) if found.is_none() && !spoiled => found = Some(v),
                Ok(_) => {
                    found = None;
                    spoiled = true;
                }
                Err(_) => {
                    // Not its type: the member still has to be valid JSON.
                    r.i = start;
                    r.value()?;
                    found = None;
                    spoiled = true;
                }
            }
            Ok(())
        })?;
        Ok(if names.is_ok() && !spoiled {
            found
        } else {
            None
        })
    }

    /// A string or `null`, the string decoded.
    fn nullable_string(&mut self) -> Result<Option<Cow<'a, str>>, Bad> {
        match self.peek() {
            Some(b'"') => self.string()?.map(Some).map_err(|_| "a lone surrogate"),
            Some(b'n') => self.literal(b"null").map(|()| None),
            _ => Err("expected a string"),
        }
    }

    /// `true` or `false`.
    fn bool(&mut self) -> Result<bool, Bad> {
        match self.peek() {
            Some(b't') => self.literal(b"true").map(|()| true),
            Some(b'f') => self.literal(b"false").map(|()| false),
            _ => Err("expected a boolean"),
        }
    }

    /// Any value's text, or `None` for `null`.
    fn nullable_text(&mut self) -> Result<Option<&'a str>, Bad> {
        if self.peek() == Some(b'n') {
            return self.literal(b"null").map(|()| None);
        }
        self.value_text().map(Some)
    }

    fn value_text(&mut self) -> Result<&'a str, Bad> {
        let start = self.i;
        self.value()?;
        Ok(self.since(start))
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), Bad> {
        if self.s[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(())
        } else {
            Err("expected a value")
        }
    }

    /// Check and pass over one value (the reader is at it). Nesting is kept on a bit stack,
    /// not the call stack.
    fn value(&mut self) -> Result<(), Bad> {
        let mut open = Nesting::default();
        loop {
            // At a value.
            match self.peek() {
                Some(b'{') => {
                    self.i += 1;
                    self.ws();
                    if self.peek() == Some(b'}') {
                        self.i += 1;
                    } else {
                        open.push(true);
                        self.name_colon()?;
                        continue;
                    }
                }
                Some(b'[') => {
                    self.i += 1;
                    self.ws();
                    if self.peek() == Some(b']') {
                        self.i += 1;
                    } else {
                        open.push(false);
                        continue;
                    }
                }
                Some(b'"') => self.skip_string()?,
                Some(b'-' | b'0'..=b'9') => self.number()?,
                Some(b't') => self.literal(b"true")?,
                Some(b'f') => self.literal(b"false")?,
                Some(b'n') => self.literal(b"null")?,
                _ => return Err("expected a value"),
            }
            // After a value: close what ends here, or go on to the next element.
            loop {
                let Some(in_object) = open.top() else {
                    return Ok(());
                };
                self.ws();
                match self.peek() {
                    Some(b',') => {
                        self.i += 1;
                        self.ws();
                        if in_object {
                            self.name_colon()?;
                        }
                        break;
                    }
                    Some(b'}') if in_object => {
                        self.i += 1;
                        open.pop();
                    }
                    Some(b']') if !in_object => {
                        self.i += 1;
                        open.pop();
                    }
                    _ => return Err("expected ',' or the end of a container"),
                }
            }
        }
    }

    /// A member name and its `:` inside a value being passed over; leaves the reader at
    /// the member's value.
    fn name_colon(&mut self) -> Result<(), Bad> {
        if self.peek() != Some(b'"') {
            return Err("expected a member name");
        }
        self.skip_string()?;
        self.ws();
        if self.peek() != Some(b':') {
            return Err("expected ':'");
        }
        self.i += 1;
        self.ws();
        Ok(())
    }

    fn number(&mut self) -> Result<(), Bad> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => {
                self.i += 1;
                if let Some(b'0'..=b'9') = self.peek() {
                    return Err("a number with a leading zero");
                }
            }
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err("a bad number"),
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err("a bad number");
            }
            self.digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err("a bad number");
            }
            self.digits();
        }
        Ok(())
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
    }

    /// Pass over a string (at its `"`) checking it as serde_json does when it does not
    /// decode it: no control characters, every escape well formed (surrogates unchecked).
    fn skip_string(&mut self) -> Result<(), Bad> {
        self.i += 1;
        loop {
            self.i = special(self.s, self.i);
            let Some(&b) = self.s.get(self.i) else {
                return Err("an unterminated string");
            };
            self.i += 1;
            match b {
                b'"' => return Ok(()),
                b'\\' => {
                    self.escape()?;
                }
                _ => return Err("a control character in a string"),
            }
        }
    }

    /// One escape after its `\`: the code unit of a `\u` escape, or 0 for the others.
    fn escape(&mut self) -> Result<u16, Bad> {
        let Some(&e) = self.s.get(self.i) else {
            return Err("an unterminated string");
        };
        self.i += 1;
        match e {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Ok(0),
            b'u' => {
                let hex = self.s.get(self.i..self.i + 4).ok_or("a bad \\u escape")?;
                let mut n = 0u16;
                for &h in hex {
                    let d = (h as char).to_digit(16).ok_or("a bad \\u escape")?;
                    n = n << 4 | d as u16;
                }
                self.i += 4;
                Ok(n)
            }
            _ => Err("a bad escape"),
        }
    }

    /// A string (at its `"`), decoded: borrowed when it has no escapes. `Ok(Err(Untyped))`
    /// when it is valid JSON but holds a lone surrogate (serde_json refuses to decode it).
    fn string(&mut self) -> Result<Result<Cow<'a, str>, Untyped>, Bad> {
        let start = self.i + 1;
        // The common case: no escape.
        let j = special(self.s, start);
        match self.s.get(j) {
            Some(b'"') => {
                self.i = j + 1;
                return Ok(Ok(Cow::Borrowed(
                    self.text.get(start..j).unwrap_or_default(),
                )));
            }
            Some(b'\\') | None => {}
            Some(_) => return Err("a control character in a string"),
        }
        self.i = start;
        let mut out = String::new();
        let mut lone = false;
        loop {
            // Copy up to the next escape or the end (both at ASCII bytes: boundaries).
            let from = self.i;
            loop {
                match self.s.get(self.i) {
                    None => return Err("an unterminated string"),
                    Some(b'"' | b'\\') => break,
                    Some(0..=0x1f) => return Err("a control character in a string"),
                    Some(_) => self.i += 1,
                }
            }
            out.push_str(self.text.get(from..self.i).unwrap_or_default());
            let b = self.s[self.i];
            self.i += 1;
            if b == b'"' {
                return Ok(if lone {
                    Err(Untyped)
                } else {
                    Ok(Cow::Owned(out))
                });
            }
            let at = self.peek();
            let n = self.escape()?;
            let c = match at {
                Some(b'u') => match n {
                    0xD800..=0xDBFF => {
                        // A leading surrogate: a trailing one must follow at once.
                        if self.s.get(self.i..self.i + 2) == Some(b"\\u") {
                            self.i += 1;
                            let m = self.escape()?;
                            if (0xDC00..=0xDFFF).contains(&m) {
                                let c =
                                    0x1_0000 + ((n as u32 - 0xD800) << 10) + (m as u32 - 0xDC00);
                                char::from_u32(c)
                            } else {
                                None
                            }
                        } else {
                            None
                        }
                    }
                    0xDC00..=0xDFFF => None,
                    _ => char::from_u32(n as u32),
                },
                Some(b'b') => Some('\u{8}'),
                Some(b'f') => Some('\u{c}'),
                Some(b'n') => Some('\n'),
                Some(b'r') => Some('\r'),
                Some(b't') => Some('\t'),
                other => other.map(char::from),
            };
            match c {
                Some(c) => out.push(c),
                None => lone = true,
            }
        }
    }
}

/// The first index at or after `i` of a byte that ends a run of plain string text: `"`,
/// `\` or a control character (`s.len()` if none). Strings are most of a message's bytes:
/// the first 16 bytes are read eight at a time (most strings end there), a longer run with
/// memchr's vector search and a vectorisable check for control characters.
fn special(s: &[u8], mut i: usize) -> usize {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = ONES << 7;
    // A byte of `x` is zero: its high bit set in `zero(x)`; bits above the first such byte
    // may be set too, so only the lowest is read.
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    for _ in 0..2 {
        let Some(chunk) = s.get(i..).and_then(<[u8]>::first_chunk::<8>) else {
            break;
        };
        let w = u64::from_le_bytes(*chunk);
        let hit = zero(w ^ (ONES * u64::from(b'"')))
            | zero(w ^ (ONES * u64::from(b'\\')))
            | (w.wrapping_sub(ONES * 0x20) & !w & HIGH);
        if hit != 0 {
            return i + (hit.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    let rest = s.get(i..).unwrap_or_default();
    let end = memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len());
    let run = &rest[..end];
    // No early exit inside a block, so the compiler can compare a vector at a time.
    let controls = run
        .chunks(64)
        .any(|c| c.iter().fold(false, |any, &b| any | (b < 0x20)));
    i + if controls {
        run.iter().position(|&b| b < 0x20).unwrap_or(end)
    } else {
        end
    }
}

/// The open containers of a value being passed over: a bit each (object or array), in one
/// word for the first 64 levels and a vector beyond.
#[derive(Default)]
struct Nesting {
    bits: u64,
    depth: usize,
    deeper: Vec<bool>,
}

impl Nesting {
    fn push(&mut self, object: bool) {
        if self.depth < 64 {
            self.bits = (self.bits & !(1 << self.depth)) | (u64::from(object) << self.depth);
        } else {
            self.deeper.push(object);
        }
        self.depth += 1;
    }

    fn pop(&mut self) {
        self.depth -= 1;
        if self.depth >= 64 {
            self.deeper.pop();
        }
    }

    fn top(&self) -> Option<bool> {
        match self.depth {
            0 => None,
            d if d <= 64 => Some(self.bits >> (d - 1) & 1 == 1),
            _ => self.deeper.last().copied(),
        }
    }
}
