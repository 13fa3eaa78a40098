//! The message a fault shapes: its bytes, its value when a fault needs one, and every
//! effect the faults that hit it asked for (delay, drop, reply, duplicates, hold,
//! corruption, extra messages, process signals, HTTP actions, stream shapes).

use super::malformed;
use crate::jsonrpc::Id;
use crate::time::Time;
use crate::verdict::{HttpAction, ProcessAction, StreamShape};
use serde_json::Value;

/// How an expired session answers whatever it sends from then on (the id of a request, or
/// `None` for a notification).
pub type Answer = fn(Option<&Id>, &mut Shaping<'_>);

/// The message being shaped, and everything the hits so far asked for.
#[derive(Debug)]
pub struct Shaping<'a> {
    pub original: &'a [u8],
    value: Option<Value>,
    /// A fault changed the JSON value: the message must be re-serialized.
    pub mutated: bool,
    pub delay: Time,
    pub drop: bool,
    /// Answer the sender instead of forwarding (short-circuit).
    pub reply: Option<Vec<u8>>,
    pub duplicates: u32,
    pub duplicate_gap: Time,
    pub hold: Option<Time>,
    pub corrupt: Option<(malformed::Mode, u64)>,
    /// Extra messages toward the receiver, after this one.
    pub extra: Vec<Vec<u8>>,
    pub process: Vec<ProcessAction>,
    /// An HTTP-level action (HTTP fronts prefer it over `reply`).
    pub http: Option<HttpAction>,
    /// How the answer's body or stream is shaped (HTTP fronts).
    pub stream: Option<StreamShape>,
    /// Expire the session: from now on the engine answers everything it sends with this.
    pub expire: Option<Answer>,
}

impl<'a> Shaping<'a> {
    pub fn new(original: &'a [u8]) -> Shaping<'a> {
        Shaping {
            original,
            value: None,
            mutated: false,
            delay: Time::ZERO,
            drop: false,
            reply: None,
            duplicates: 0,
            duplicate_gap: Time::ZERO,
            hold: None,
            corrupt: None,
            extra: Vec::new(),
            process: Vec::new(),
            http: None,
            stream: None,
            expire: None,
        }
    }

    /// Add a stream shape to the ones asked for so far.
    pub fn merge_stream(&mut self, shape: &StreamShape) {
        self.stream
            .get_or_insert_with(StreamShape::default)
            .merge(shape);
    }

    /// The message as a JSON value, parsed on first use. A kind that changes it calls
    /// [`Shaping::mark_mutated`], so a message nobody changed keeps its bytes.
    pub fn value_mut(&mut self) -> Option<&mut Value> {
        if self.value.is_none() {
            self.value = serde_json::from_slice(self.original).ok();
        }
        self.value.as_mut()
    }

    /// The changed message as a value, when a fault changed it (and no byte corruption
    /// follows): what the receiver gets, without parsing the output again.
    pub fn changed_value(&self) -> Option<&Value> {
        self.value
            .as_ref()
            .filter(|_| self.mutated && self.corrupt.is_none())
    }

    pub fn mark_mutated(&mut self) {
        self.mutated = self.value.is_some();
    }

    /// Replace the whole message.
    pub fn replace(&mut self, v: Value) {
        self.value = Some(v);
        self.mutated = true;
    }

    /// Whether the message still goes on to its receiver.
    pub fn forwards(&self) -> bool {
        !self.drop && self.reply.is_none()
    }

    /// The bytes to forward: the original when nothing changed it, else re-serialized,
    /// then corrupted if a malformed fault asked for it.
    pub fn output(&self) -> Option<Vec<u8>> {
        let base: Option<Vec<u8>> = match (&self.value, self.mutated) {
            (Some(v), true) => Some(crate::splice::to_vec_like(v, self.original)),
            _ => None,
        };
        match self.corrupt {
            Some((mode, seed)) => {
                let bytes = base.as_deref().unwrap_or(self.original);
                Some(malformed::corrupt(bytes, mode, seed))
            }
            None => base,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unchanged_messages_keep_their_bytes() {
        let raw = br#"{"jsonrpc":"2.0", "id":1, "result":{"b":1,"a":2}}"#;
        let s = Shaping::new(raw);
        assert_eq!(
            s.output(),
            None,
            "no output means: forward the original bytes"
        );
    }
}
