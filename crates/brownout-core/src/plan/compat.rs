//! mcp-chaos compatibility: plans written for the Python tool mcp-chaos load unchanged.
//!
//! `type:` is an alias of `kind:`, and mcp-chaos kinds become native faults with their field
//! names translated on the position-carrying tree, so errors still point into the file
//! the user wrote.

use super::source::{Entry, Node, NodeValue};

fn rename_key(entries: &mut [Entry], from: &str, to: &str) {
    if entries.iter().any(|e| e.key == to) {
        return;
    }
    if let Some(e) = entries.iter_mut().find(|e| e.key == from) {
        e.key = to.to_string();
    }
}

fn set(entries: &mut Vec<Entry>, key: &str, value: NodeValue, near: &Node) {
    if entries.iter().any(|e| e.key == key) {
        return;
    }
    entries.push(Entry {
        key: key.to_string(),
        key_pos: near.pos,
        value: Node {
            value,
            pos: near.pos,
        },
    });
}

fn str_node(s: &str) -> NodeValue {
    NodeValue::Str(s.to_string())
}

fn num(x: f64) -> NodeValue {
    NodeValue::Float(x)
}

fn remove(entries: &mut Vec<Entry>, key: &str) -> Option<Entry> {
    entries
        .iter()
        .position(|e| e.key == key)
        .map(|i| entries.remove(i))
}

fn float_of(e: &Entry) -> Option<f64> {
    match e.value.value {
        NodeValue::Int(i) => Some(i as f64),
        NodeValue::Float(f) => Some(f),
        _ => None,
    }
}

/// In mcp-chaos an absent or empty `tools` list means "all tools" for some kinds and "no
/// tool" for others; brownout's absent `tools` means all, `tools: []` means none.
fn tools_default(entries: &mut Vec<Entry>, empty_means_all: bool, at: &Node) {
    let empty = match entries.iter().find(|e| e.key == "tools") {
        None => true,
        Some(e) => matches!(&e.value.value, NodeValue::Seq(items) if items.is_empty()),
    };
    if !empty {
        return;
    }
    remove(entries, "tools");
    if !empty_means_all {
        set(entries, "tools", NodeValue::Seq(Vec::new()), at);
    }
}

/// The error answer mcp-chaos's proxy gives: the server's response replaced by -32000.
fn mcp_chaos_error(entries: &mut Vec<Entry>, message: &str, at: &Node) {
    set(entries, "phase", str_node("response"), at);
    set(entries, "code", NodeValue::Int(-32000), at);
    set(entries, "message", str_node(message), at);
}

fn burst(
    entries: &mut Vec<Entry>,
    rate_key: &str,
    len_key: &str,
    default_rate: f64,
    default_len: f64,
    at: &Node,
) {
    match remove(entries, rate_key) {
        Some(mut e) => {
            e.key = "probability".into();
            entries.push(e);
        }
        None => set(entries, "probability", num(default_rate), at),
    }
    let len = remove(entries, len_key);
    let len_value = len
        .as_ref()
        .and_then(float_of)
        .map_or(default_len, |l| l.max(1.0));
    let len_pos = len.as_ref().map_or(at.pos, |e| e.key_pos);
    let corr = vec![
        Entry {
            key: "mode".into(),
            key_pos: at.pos,
            value: Node {
                value: str_node("burst"),
                pos: at.pos,
            },
        },
        Entry {
            key: "mean_burst_calls".into(),
            key_pos: len_pos,
            value: Node {
                value: num(len_value),
                pos: len_pos,
            },
        },
    ];
    set(entries, "correlation", NodeValue::Map(corr), at);
}

/// Rewrite every fault of the plan tree in place. A fault written with `type:` is an
/// mcp-chaos fault: its keys keep their mcp-chaos meaning and defaults.
pub fn translate(root: &mut Node) {
    let Some(faults) = root_faults(root) else {
        return;
    };
    for fault in faults.iter_mut() {
        let at = fault.clone();
        let NodeValue::Map(entries) = &mut fault.value else {
            continue;
        };
        if entries.iter().any(|e| e.key == "kind") || !entries.iter().any(|e| e.key == "type") {
            continue;
        }
        rename_key(entries, "type", "kind");
        let Some(kind_entry) = entries.iter_mut().find(|e| e.key == "kind") else {
            continue;
        };
        let NodeValue::Str(kind) = &kind_entry.value.value else {
            continue;
        };
        let kind = kind.clone();
        let native = match kind.as_str() {
            "drop_tool" | "registry_inconsistency" => "registry",
            "error_injection" | "burst_error" | "server_degradation" => "error",
            other => other,
        };
        kind_entry.value.value = str_node(native);
        match kind.as_str() {
            "latency" => {
                // mcp-chaos adds uniform [0, jitter]; brownout adds ±jitter around added_ms.
                let added = entries
                    .iter()
                    .find(|e| e.key == "added_ms")
                    .and_then(float_of)
                    .unwrap_or(250.0);
                let jitter = remove(entries, "jitter_ms");
                let j = jitter.as_ref().and_then(float_of).unwrap_or(0.0);
                remove(entries, "added_ms");
                set(entries, "added_ms", num(added + j / 2.0), &at);
                if let Some(mut e) = jitter {
                    e.value.value = num(j / 2.0);
                    entries.push(e);
                }
            }
            "drop_tool" => {
                tools_default(entries, false, &at);
                set(entries, "action", str_node("remove"), &at);
            }
            "registry_inconsistency" => {
                tools_default(entries, false, &at);
                set(entries, "action", str_node("dangling"), &at);
            }
            "schema_drift" | "partial_result" => tools_default(entries, true, &at),
            "error_injection" => {
                tools_default(entries, true, &at);
                match remove(entries, "rate") {
                    Some(mut e) => {
                        e.key = "probability".into();
                        entries.push(e);
                    }
                    None => set(entries, "probability", num(0.02), &at),
                }
                mcp_chaos_error(entries, "injected error", &at);
            }
            "burst_error" => {
                tools_default(entries, true, &at);
                burst(entries, "rate", "burst_len", 0.02, 8.0, &at);
                mcp_chaos_error(entries, "injected burst error", &at);
            }
            "server_degradation" => {
                tools_default(entries, false, &at);
                burst(entries, "episode_rate", "episode_len", 0.08, 20.0, &at);
                mcp_chaos_error(entries, "server degraded", &at);
            }
            _ => {}
        }
    }
}

fn root_faults(root: &mut Node) -> Option<&mut Vec<Node>> {
    let NodeValue::Map(entries) = &mut root.value else {
        return None;
    };
    let e = entries.iter_mut().find(|e| e.key == "faults")?;
    match &mut e.value.value {
        NodeValue::Seq(items) => Some(items),
        _ => None,
    }
}
