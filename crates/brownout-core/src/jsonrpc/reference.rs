//! The reference reader that [`super::classify`]'s one pass is checked against: the same
//! view, read with serde_json (the envelope into raw values, then `params` and `result`
//! again into typed structs), as brownout read messages before the one-pass reader.
//!
//! Not used by the relays: only by the differential tests and the `jsonrpc_classify` fuzz
//! target, which require that both readers agree on every input ([`agree`]).

use super::{kind_and_id, Kind, Message, View};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "raw_present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

/// Keep `"id": null` as a present raw value (plain `Option` would read it as absent).
fn raw_present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct NameParam<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct IsError {
    #[serde(rename = "isError", default)]
    is_error: bool,
}

/// [`super::classify`], read with serde_json.
pub fn classify(bytes: &[u8]) -> Message<'_> {
    super::classify_with(bytes, view_of)
}

fn view_of(text: &str) -> Result<View<'_>, String> {
    if !text.trim_start().starts_with('{') {
        return Err("not a JSON object".into());
    }
    let env: Envelope<'_> = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let (kind, id) = kind_and_id(
        env.jsonrpc.as_deref(),
        env.id.map(RawValue::get),
        env.method.is_some(),
        env.result.is_some(),
        env.error.is_some(),
    )?;
    // serde reads a struct from an array too (its first element); `params.name` is only
    // ever read from an object.
    let tool = if kind == Kind::Request && env.method.as_deref() == Some("tools/call") {
        env.params
            .filter(|p| p.get().starts_with('{'))
            .and_then(|p| serde_json::from_str::<NameParam<'_>>(p.get()).ok())
            .and_then(|p| p.name)
    } else {
        None
    };
    let tool_error = env
        .result
        .filter(|r| r.get().starts_with('{'))
        .and_then(|r| serde_json::from_str::<IsError>(r.get()).ok())
        .is_some_and(|r| r.is_error);
    Ok(View {
        kind,
        id,
        method: env.method,
        tool,
        params: env.params.map(RawValue::get),
        result: env.result.map(RawValue::get),
        error: env.error.map(RawValue::get),
        tool_error,
    })
}

/// `Err` with both readings when the two readers disagree on `bytes`: whether it is a
/// message, and if so everything read from it (ids by their text, not by value). The
/// reasons given for invalid input may differ.
pub fn agree(bytes: &[u8]) -> Result<(), String> {
    let show = |m: &Message<'_>| match m {
        Message::Invalid(_) => "invalid".to_string(),
        Message::Single(v) => format!("{v:?}"),
        Message::Batch(items) => {
            let each: Vec<String> = items
                .iter()
                .map(|r| match r {
                    Ok(v) => format!("{v:?}"),
                    Err(_) => "invalid".into(),
                })
                .collect();
            format!("batch {each:?}")
        }
    };
    let (one_pass, serde) = (show(&super::classify(bytes)), show(&classify(bytes)));
    if one_pass == serde {
        Ok(())
    } else {
        Err(format!("one pass: {one_pass}\nserde:    {serde}"))
    }
}
