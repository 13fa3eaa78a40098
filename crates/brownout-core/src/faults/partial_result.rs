//! `partial_result`: return some of the data as if it were all of it.
//!
//! Modes: `truncate_text` (cut each text item to a fraction of its length),
//! `drop_content` (keep only the first items of `content`), `drop_elements` (shorten the
//! arrays inside structured content and JSON text), `drop_cursor` (remove `nextCursor` from
//! a paginated list result, so the client believes it has everything). `keep` is the
//! fraction kept (default 0.5).

use super::simulated::SimOutcome;
use super::{Ctx, Shaping};
use super::{KindInfo, ResultRewrite, CALLS};
use crate::select::Direction;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    TruncateText,
    DropContent,
    DropElements,
    DropCursor,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct PartialResult {
    /// What to cut (default `truncate_text`).
    #[serde(default)]
    pub mode: Mode,
    /// Fraction kept, 0..1 (default 0.5).
    #[serde(default)]
    #[schemars(range(min = 0, max = 1))]
    pub keep: Option<f64>,
}

fn kept(len: usize, keep: f64) -> usize {
    // Always lose something when there is something to lose.
    ((len as f64 * keep).floor() as usize).min(len.saturating_sub(1))
}

impl PartialResult {
    pub fn apply(&self, _c: &Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        let keep = self.keep.unwrap_or(0.5);
        let result = s.value_mut()?.get_mut("result")?;
        let detail = match self.mode {
            Mode::TruncateText => {
                let Some(Value::Array(items)) = result.get_mut("content") else {
                    return None;
                };
                let mut cut = 0usize;
                for item in items {
                    if let Some(Value::String(t)) = item.get_mut("text") {
                        let n = t.chars().count();
                        let k = kept(n, keep);
                        if k < n {
                            cut += n - k;
                            *t = t.chars().take(k).collect();
                        }
                    }
                }
                (cut > 0).then(|| format!("truncated text by {cut} chars"))?
            }
            Mode::DropContent => {
                let Some(Value::Array(items)) = result.get_mut("content") else {
                    return None;
                };
                let n = items.len();
                let k = kept(n, keep);
                if k == n {
                    return None;
                }
                items.truncate(k);
                format!("kept {k} of {n} content items")
            }
            Mode::DropElements => {
                let mut dropped = 0usize;
                if let Some(sc) = result.get_mut("structuredContent") {
                    dropped += shorten_arrays(sc, keep);
                }
                if let Some(Value::Array(items)) = result.get_mut("content") {
                    for item in items {
                        let Some(Value::String(t)) = item.get_mut("text") else {
                            continue;
                        };
                        let Ok(mut v) = serde_json::from_str::<Value>(t) else {
                            continue;
                        };
                        let d = shorten_arrays(&mut v, keep);
                        if d > 0 {
                            dropped += d;
                            *t = v.to_string();
                        }
                    }
                }
                (dropped > 0).then(|| format!("dropped {dropped} array elements"))?
            }
            Mode::DropCursor => {
                result.as_object_mut()?.remove("nextCursor")?;
                "dropped nextCursor".to_string()
            }
        };
        s.mark_mutated();
        Some(format!("partial result: {detail}"))
    }
}

/// Shorten every array (recursively); returns how many elements went.
fn shorten_arrays(v: &mut Value, keep: f64) -> usize {
    match v {
        Value::Array(items) => {
            let n = items.len();
            let k = kept(n, keep);
            items.truncate(k);
            n - k
                + items
                    .iter_mut()
                    .map(|i| shorten_arrays(i, keep))
                    .sum::<usize>()
        }
        Value::Object(m) => m.values_mut().map(|i| shorten_arrays(i, keep)).sum(),
        _ => 0,
    }
}

pub const KIND: KindInfo = KindInfo::of::<PartialResult>(
    "partial_result",
    "truncate text, drop content items or array elements, drop nextCursor",
    CALLS,
    Direction::ToClient,
    r#"{}"#,
);

impl ResultRewrite for PartialResult {
    fn rewrite(&self, c: &mut Ctx<'_>, s: &mut Shaping<'_>) -> Option<String> {
        self.apply(c, s)
    }

    fn simulated(&self) -> SimOutcome {
        SimOutcome::Wrong
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::KindState;
    use crate::rng::StreamKey;
    use crate::time::Time;
    use serde_json::json;

    fn run(mode: Mode, msg: Value) -> (Value, Option<String>) {
        let raw = serde_json::to_vec(&msg).expect("json");
        let mut state = KindState::default();
        let c = Ctx {
            key: StreamKey::new(0, 0, 0),
            seq: 0,
            now: Time::ZERO,
            method: "tools/call",
            tool: None,
            id: None,
            tools: None,
            state: &mut state,
            schema: None,
        };
        let mut s = Shaping::new(&raw);
        let d = PartialResult { mode, keep: None }.apply(&c, &mut s);
        let out = s
            .output()
            .map(|b| serde_json::from_slice(&b).expect("json"))
            .unwrap_or(msg);
        (out, d)
    }

    #[test]
    fn each_mode_loses_data() {
        let msg = json!({"jsonrpc": "2.0", "id": 1, "result": {
            "content": [{"type": "text", "text": "0123456789"}, {"type": "text", "text": "[1,2,3,4]"}],
            "structuredContent": {"rows": [1, 2, 3, 4]}, "nextCursor": "abc"}});
        assert_eq!(
            run(Mode::TruncateText, msg.clone()).0["result"]["content"][0]["text"],
            "01234"
        );
        assert_eq!(
            run(Mode::DropContent, msg.clone()).0["result"]["content"]
                .as_array()
                .map(Vec::len),
            Some(1)
        );
        let (v, _) = run(Mode::DropElements, msg.clone());
        assert_eq!(v["result"]["structuredContent"]["rows"], json!([1, 2]));
        assert_eq!(v["result"]["content"][1]["text"], "[1,2]");
        assert!(run(Mode::DropCursor, msg.clone()).0["result"]
            .get("nextCursor")
            .is_none());
        let (_, d) = run(
            Mode::DropCursor,
            json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        );
        assert_eq!(d, None, "nothing to drop is not an injection");
    }
}
