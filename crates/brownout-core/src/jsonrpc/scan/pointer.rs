//! A JSON pointer inside a message's `params.arguments`, followed on the text: only the
//! pointed value is read, nothing off its path is decoded (a selector's argument condition);
//! the rest is only checked to be what serde_json reads as a `Value`.

use super::{Bad, Reader};

/// The text of the `arguments` of `params` (an object's text), when serde_json would read
/// them into a `Value` ([`reads_as_value`]: checked over the whole text, without building
/// anything). `None` when `arguments` is absent, `null` or duplicated, a name of `params`
/// does not decode, or serde_json would refuse the arguments.
pub(crate) fn arguments(params: &str) -> Option<&str> {
    let mut r = Reader::new(params);
    if r.peek() != Some(b'{') {
        return None;
    }
    let at = r.find_member("arguments", Reader::nullable_text).ok()???;
    reads_as_value(at).then_some(at)
}

/// The text of the value at JSON pointer `tokens` (already split and unescaped) inside
/// `arguments` (from [`arguments`]), read as serde_json's `Value::pointer` reads a parsed
/// value: the last of duplicate names, arrays by a plain decimal index. `None` when there
/// is no such value or a name on the path does not decode. Off the path, nothing is
/// decoded.
pub(crate) fn argument_at<'a>(arguments: &'a str, tokens: &[String]) -> Option<&'a str> {
    let mut at = arguments;
    for token in tokens {
        let mut r = Reader::new(at);
        at = match r.peek()? {
            b'{' => r.last_member(token).ok()??,
            b'[' => r.element(index(token)?).ok()??,
            _ => return None,
        };
    }
    Some(at)
}

/// An array index in a JSON pointer token: decimal digits, no sign, no leading zero.
fn index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() > 1) {
        return None;
    }
    token.parse().ok()
}

impl<'a> Reader<'a> {
    /// In an object (at its `{`): the text of the last member named `want`; `None` when
    /// there is none or a member name does not decode.
    fn last_member(&mut self, want: &str) -> Result<Option<&'a str>, Bad> {
        self.i += 1;
        let mut found = None;
        let names = self.members(|r, key| {
            if key == want {
                found = Some(r.value_text()?);
                Ok(())
            } else {
                r.value()
            }
        })?;
        Ok(found.filter(|_| names.is_ok()))
    }

    /// In an array (at its `[`): the text of element `n`.
    fn element(&mut self, n: usize) -> Result<Option<&'a str>, Bad> {
        self.i += 1;
        self.ws();
        if self.peek() == Some(b']') {
            return Ok(None);
        }
        let mut k = 0;
        loop {
            self.ws();
            let text = self.value_text()?;
            if k == n {
                return Ok(Some(text));
            }
            k += 1;
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b']') => return Ok(None),
                _ => return Err("expected ',' or ']'"),
            }
        }
    }
}

/// Deepest nesting serde_json reads in `arguments` (itself the first level): its limit of
/// 128 counts `params` and stops at the 128th level, so `arguments` may hold 126.
const MAX_DEPTH: usize = 126;

/// Whether serde_json reads `arguments` (a value's text, known to be JSON) into a `Value`
/// as part of `params`, as `View::tool_arguments` does: every string and member name
/// decodes (no lone surrogate), every number is within `f64`'s range, and no container is
/// nested deeper than [`MAX_DEPTH`]. Only checked: nothing is built.
fn reads_as_value(arguments: &str) -> bool {
    let mut r = Reader::new(arguments);
    let mut depth = 0usize;
    while let Some(b) = r.peek() {
        match b {
            b'{' | b'[' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return false;
                }
                r.i += 1;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                r.i += 1;
            }
            b'"' => {
                if !r.string_decodes() {
                    return false;
                }
            }
            b'-' | b'0'..=b'9' => {
                let start = r.i;
                while let Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') = r.peek() {
                    r.i += 1;
                }
                if !number_in_range(r.since(start)) {
                    return false;
                }
            }
            _ => r.i += 1,
        }
    }
    true
}

/// Whether serde_json reads number `text` into a `Value` (it refuses one beyond `f64`'s
/// range). Without an exponent, 300 characters cannot reach it; anything else is asked of
/// serde_json itself, whose rounding at the edge of the range is its own.
fn number_in_range(text: &str) -> bool {
    (text.len() <= 300 && !text.contains(['e', 'E']))
        || serde_json::from_str::<serde_json::Value>(text).is_ok()
}

impl<'a> Reader<'a> {
    /// Pass over a string (at its `"`, known to be valid JSON): whether serde_json decodes
    /// it, i.e. every `\u` surrogate is a leading one followed at once by a trailing one.
    fn string_decodes(&mut self) -> bool {
        self.i += 1;
        loop {
            self.i = super::special(self.s, self.i);
            let Some(&b) = self.s.get(self.i) else {
                return false;
            };
            self.i += 1;
            if b == b'"' {
                return true;
            }
            if b != b'\\' {
                return false;
            }
            let u = self.peek() == Some(b'u');
            match self.escape() {
                Ok(0xD800..=0xDBFF) if u => {
                    if self.s.get(self.i..self.i + 2) != Some(b"\\u") {
                        return false;
                    }
                    self.i += 1;
                    if !matches!(self.escape(), Ok(0xDC00..=0xDFFF)) {
                        return false;
                    }
                }
                Ok(0xDC00..=0xDFFF) if u => return false,
                Ok(_) => {}
                Err(_) => return false,
            }
        }
    }
}
