//! `malformed`: corrupt the bytes of a message.
//!
//! Modes: `truncate` (cut the JSON short), `garbage` (random printable bytes),
//! `invalid_utf8` (splice in bytes that are not UTF-8), and JSON-RPC violations that are
//! still valid JSON: `missing_id`, `wrong_version` (`"jsonrpc": "1.0"`) and
//! `mismatched_id` (an id nobody asked for). Corrupted bytes never contain a newline, so
//! a stdio peer sees exactly one bad line.

use super::simulated::{SimOutcome, SimulatedCall};
use super::{AddedDelay, FaultKind, KindInfo, Phase, CALLS};
use super::{Ctx, Shaping};
use crate::rng::SplitMix;
use crate::select::Direction;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    Truncate,
    Garbage,
    InvalidUtf8,
    MissingId,
    WrongVersion,
    MismatchedId,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct Malformed {
    /// How to corrupt the message (default `truncate`).
    #[serde(default)]
    pub mode: Mode,
}

impl Malformed {
    pub fn apply(&self, c: &Ctx<'_>, s: &mut Shaping<'_>) -> String {
        s.corrupt = Some((self.mode, c.mutation_seed()));
        format!(
            "malformed: {}",
            serde_json::to_value(self.mode)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default()
        )
    }
}

/// Corrupt `bytes` as `mode` says, deterministically from `seed`.
pub fn corrupt(bytes: &[u8], mode: Mode, seed: u64) -> Vec<u8> {
    let mut rng = SplitMix::new(seed);
    let json_edit = |f: &dyn Fn(&mut serde_json::Map<String, Value>)| -> Option<Vec<u8>> {
        let mut v: Value = serde_json::from_slice(bytes).ok()?;
        f(v.as_object_mut()?);
        Some(crate::splice::to_vec_like(&v, bytes))
    };
    let out = match mode {
        Mode::Truncate => None,
        Mode::Garbage => {
            let n = 8 + rng.below(56);
            return (0..n).map(|_| b'!' + rng.below(94) as u8).collect();
        }
        Mode::InvalidUtf8 => {
            let mut out = bytes.to_vec();
            let at = if out.is_empty() {
                0
            } else {
                rng.below(out.len())
            };
            out.splice(at..at, [0xC3, 0x28, 0xFF, 0xFE]);
            return out;
        }
        Mode::MissingId => json_edit(&|o| {
            o.remove("id");
        }),
        Mode::WrongVersion => json_edit(&|o| {
            o.insert("jsonrpc".into(), Value::String("1.0".into()));
        }),
        Mode::MismatchedId => json_edit(&|o| {
            o.insert(
                "id".into(),
                Value::String(format!("brownout-mismatch-{seed:x}")),
            );
        }),
    };
    out.unwrap_or_else(|| {
        // Truncate: keep between a quarter and three quarters of the message.
        let len = bytes.len();
        let keep = if len < 2 {
            0
        } else {
            len / 4 + rng.below(len / 2 + 1)
        };
        bytes[..keep.min(len.saturating_sub(1))].to_vec()
    })
}

pub const KIND: KindInfo = KindInfo::of::<Malformed>(
    "malformed",
    "corrupt the bytes: truncated JSON, garbage, invalid UTF-8, JSON-RPC violations",
    CALLS,
    Direction::ToClient,
    r#"{}"#,
);

impl FaultKind for Malformed {
    fn acts_on_loose_messages(&self) -> bool {
        true
    }

    fn act(&self, _phase: Phase, c: &mut Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        Some(self.apply(c, s))
    }

    fn simulate(&self, _direction: Direction, _c: &mut Ctx<'_>, out: &mut SimulatedCall) -> bool {
        out.worsen(SimOutcome::NoAnswer);
        true
    }

    fn max_added_delay(&self) -> AddedDelay {
        AddedDelay::NONE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::{classify, Message};

    const MSG: &[u8] =
        br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hello world"}]}}"#;

    #[test]
    fn every_mode_breaks_the_message_and_keeps_one_line() {
        for mode in [
            Mode::Truncate,
            Mode::Garbage,
            Mode::InvalidUtf8,
            Mode::MissingId,
            Mode::WrongVersion,
        ] {
            let out = corrupt(MSG, mode, 99);
            assert!(
                matches!(classify(&out), Message::Invalid(_)),
                "{mode:?}: {}",
                String::from_utf8_lossy(&out)
            );
            assert!(!out.contains(&b'\n'), "{mode:?} added a newline");
        }
        let out = corrupt(MSG, Mode::MismatchedId, 99);
        let Message::Single(v) = classify(&out) else {
            panic!("still JSON-RPC")
        };
        assert_ne!(v.id, Some(crate::jsonrpc::Id::Num("3".into())));
    }

    #[test]
    fn corruption_is_deterministic() {
        assert_eq!(
            corrupt(MSG, Mode::Garbage, 5),
            corrupt(MSG, Mode::Garbage, 5)
        );
        assert_eq!(
            corrupt(MSG, Mode::Truncate, 5),
            corrupt(MSG, Mode::Truncate, 5)
        );
    }
}
