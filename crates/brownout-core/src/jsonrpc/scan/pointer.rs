//! A JSON pointer inside a message's `params.arguments`, followed on the text: only the
//! pointed value is read, nothing off its path is decoded (a selector's argument condition).

use super::{Bad, Reader};

/// The text of the value at JSON pointer `tokens` (already split and unescaped) inside
/// the `arguments` of `params` (an object's text), read as serde_json's `Value::pointer`
/// reads a parsed value: the last of duplicate names, arrays by a plain decimal index.
/// `None` when there is no such value, `arguments` is absent, `null`, duplicated or not
/// decodable, or a name on the path does not decode. Nothing off the path is decoded.
pub(crate) fn argument_at<'a>(params: &'a str, tokens: &[String]) -> Option<&'a str> {
    let mut r = Reader::new(params);
    if r.peek() != Some(b'{') {
        return None;
    }
    let mut at = r.find_member("arguments", Reader::nullable_text).ok()???;
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
