//! A streaming finder of the top-level `id` of a JSON-RPC message (for messages too big to
//! keep: an oversized line is answered at its caller's id, never at an `id` nested in its
//! payload).

/// What [`TopLevelId`] found at the top level of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopId {
    /// The raw JSON text of the top-level `id` (a string, a number or `null`), exactly as
    /// the sender wrote it, so a reply can carry it unchanged.
    Found(String),
    /// The message is a complete object without a top-level `id`.
    Absent,
    /// The input ended before the top-level `id` was seen.
    Unknown,
    /// Not a JSON object, or an `id` that is not a string, a number or `null`.
    Invalid,
}

/// A streaming finder of the top-level `id` of a JSON-RPC message, fed in pieces (a
/// message too big to keep is read chunk by chunk and forgotten). Keys and values nested in
/// `params`, `result` or `arguments` never count, nor does `"id"` inside a string; escaped
/// keys (`"\u0069d"`) are decoded. It keeps only a few small buffers, whatever the size of
/// the message.
#[derive(Debug, Default)]
pub struct TopLevelId {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// At depth 1: the next string is a key.
    expect_key: bool,
    /// At depth 1: a `:` was seen and the value has not started.
    awaiting_value: bool,
    /// The top-level key being read (without quotes), while it is read.
    key: Option<Vec<u8>>,
    /// The last top-level key was `id`.
    key_is_id: bool,
    /// The raw text of the id value, while it is read.
    value: Option<Vec<u8>>,
    result: Option<TopId>,
}

/// Longest top-level key worth decoding (`"id"` escaped in full is 12 bytes).
const MAX_KEY: usize = 64;
/// Longest id text accepted.
const MAX_ID: usize = 1024;

impl TopLevelId {
    pub fn new() -> TopLevelId {
        TopLevelId::default()
    }

    /// Whether the answer is known (more input changes nothing).
    pub fn is_done(&self) -> bool {
        self.result.is_some()
    }

    /// Feed the next piece of the message.
    pub fn feed(&mut self, chunk: &[u8]) {
        for &b in chunk {
            if self.result.is_some() {
                return;
            }
            self.byte(b);
        }
    }

    /// What was found, once the whole message (or all of it there is) was fed.
    pub fn finish(mut self) -> TopId {
        if self.result.is_none() {
            if let Some(v) = self.value.take() {
                if v.first() != Some(&b'"') {
                    // A number or `null` at the very end of the input: it may go on.
                    return TopId::Unknown;
                }
            }
        }
        self.result.unwrap_or(TopId::Unknown)
    }

    fn byte(&mut self, b: u8) {
        if let Some(v) = &mut self.value {
            if v.first() == Some(&b'"') {
                v.push(b);
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.end_value();
                    return;
                }
            } else if b == b',' || b == b'}' || b.is_ascii_whitespace() {
                self.end_value();
                return;
            } else {
                v.push(b);
            }
            if self.value.as_ref().is_some_and(|v| v.len() > MAX_ID) {
                self.result = Some(TopId::Invalid);
            }
            return;
        }
        if self.in_string {
            let mut end = false;
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                end = true;
            }
            if end {
                self.in_string = false;
                if let Some(k) = self.key.take() {
                    self.key_is_id = key_is_id(&k);
                }
            } else if let Some(k) = &mut self.key {
                if k.len() <= MAX_KEY {
                    k.push(b);
                }
            }
            return;
        }
        if b.is_ascii_whitespace() {
            return;
        }
        if self.depth == 1 && self.awaiting_value {
            self.awaiting_value = false;
            if self.key_is_id {
                match b {
                    b'"' | b'-' | b'0'..=b'9' | b'n' => {
                        self.value = Some(vec![b]);
                        return;
                    }
                    _ => {
                        self.result = Some(TopId::Invalid);
                        return;
                    }
                }
            }
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.expect_key = false;
                    self.key = Some(Vec::new());
                }
            }
            b'{' | b'[' => {
                if self.depth == 0 && b == b'[' {
                    self.result = Some(TopId::Invalid);
                    return;
                }
                if self.depth == 0 {
                    self.expect_key = true;
                }
                self.depth += 1;
            }
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 0 {
                    self.result = Some(TopId::Absent);
                }
            }
            b':' if self.depth == 1 => self.awaiting_value = true,
            b',' if self.depth == 1 => {
                self.expect_key = true;
                self.key_is_id = false;
            }
            _ if self.depth == 0 => self.result = Some(TopId::Invalid),
            _ => {}
        }
    }

    fn end_value(&mut self) {
        let text = self.value.take().unwrap_or_default();
        self.result = Some(match serde_json::from_slice::<serde_json::Value>(&text) {
            Ok(
                serde_json::Value::String(_)
                | serde_json::Value::Number(_)
                | serde_json::Value::Null,
            ) => TopId::Found(String::from_utf8_lossy(&text).into_owned()),
            _ => TopId::Invalid,
        });
    }
}

fn key_is_id(k: &[u8]) -> bool {
    if k == b"id" {
        return true;
    }
    if k.len() > MAX_KEY || !k.contains(&b'\\') {
        return false;
    }
    let mut quoted = Vec::with_capacity(k.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(k);
    quoted.push(b'"');
    serde_json::from_slice::<String>(&quoted).is_ok_and(|s| s == "id")
}

/// The top-level id of a whole message (see [`TopLevelId`]).
pub fn top_level_id(bytes: &[u8]) -> TopId {
    let mut f = TopLevelId::new();
    f.feed(bytes);
    f.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_level_id_ignores_nested_and_quoted_ids() {
        let found = |s: &str| TopId::Found(s.to_string());
        assert_eq!(
            top_level_id(br#"{"jsonrpc":"2.0","id":7,"method":"x"}"#),
            found("7")
        );
        // `arguments.id` comes first in the text; the caller's id is the top-level one.
        assert_eq!(
            top_level_id(
                br#"{"params":{"name":"get","arguments":{"id":"INC-1"}},"id":42,"jsonrpc":"2.0"}"#
            ),
            found("42")
        );
        assert_eq!(
            top_level_id(br#"{"method":"m","params":[{"id":1},["id",{"id":2}]],"id":"abc"}"#),
            found(r#""abc""#)
        );
        // "id" inside strings, as a value and with escaped quotes, never counts.
        assert_eq!(
            top_level_id(br#"{"note":"\"id\": 5","x":"id","id" : -3 }"#),
            found("-3")
        );
        // An escaped key is still `id`; an escaped string id keeps its exact text.
        assert_eq!(top_level_id(br#"{"\u0069d":1e2}"#), found("1e2"));
        assert_eq!(top_level_id(br#"{"id":"a\"b\\"}"#), found(r#""a\"b\\""#));
        assert_eq!(top_level_id(br#"{"id":null}"#), found("null"));
        assert_eq!(
            top_level_id(b"{\"id\":123456789012345678901234567890}"),
            found("123456789012345678901234567890")
        );
        // A key that only looks like `id`.
        assert_eq!(top_level_id(br#"{"ids":1,"xid":2}"#), TopId::Absent);
    }

    #[test]
    fn top_level_id_knows_what_it_does_not_know() {
        assert_eq!(
            top_level_id(br#"{"jsonrpc":"2.0","method":"x"}"#),
            TopId::Absent
        );
        assert_eq!(
            top_level_id(br#"{"params":{"arguments":{"id":9,"blob":"xxxx"#),
            TopId::Unknown
        );
        assert_eq!(top_level_id(br#"{"id":12"#), TopId::Unknown);
        assert_eq!(top_level_id(br#"{"id":{"a":1}}"#), TopId::Invalid);
        assert_eq!(top_level_id(br#"{"id":true}"#), TopId::Invalid);
        assert_eq!(top_level_id(br#"[{"id":1}]"#), TopId::Invalid);
        assert_eq!(top_level_id(b"garbage"), TopId::Invalid);
    }

    #[test]
    fn top_level_id_streams_in_any_pieces() {
        let msg = br#"{"params":{"arguments":{"id":"nested","s":"}{\"id\":0"}}, "\u0069d" : "real\"one" ,"method":"m"}"#;
        for size in 1..msg.len() {
            let mut f = TopLevelId::new();
            for chunk in msg.chunks(size) {
                f.feed(chunk);
            }
            assert_eq!(
                f.finish(),
                TopId::Found(r#""real\"one""#.to_string()),
                "chunks of {size}"
            );
        }
    }
}
