//! One SQL value as both backends read and write it: NULL, a 64-bit integer, a double or
//! text (the store's schema uses nothing else; booleans are 0/1 integers in both).
//!
//! It converts to and from rusqlite's values and PostgreSQL's binary format, so the rows of
//! a journal ([`super::ingest::rows`]) and the store's own queries are written once.

use postgres::types::{self as pg, IsNull, Type};
use rusqlite::types::{ToSqlOutput, ValueRef};
use serde_json::Value;

type BoxError = Box<dyn std::error::Error + Sync + Send>;

/// One value.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

impl Val {
    pub fn int(&self) -> Option<i64> {
        match self {
            Val::Int(i) => Some(*i),
            Val::Real(x) if x.fract() == 0.0 => Some(*x as i64),
            _ => None,
        }
    }
    pub fn real(&self) -> Option<f64> {
        match self {
            Val::Int(i) => Some(*i as f64),
            Val::Real(x) => Some(*x),
            Val::Text(t) => t.parse().ok(),
            Val::Null => None,
        }
    }
    pub fn text(&self) -> Option<&str> {
        match self {
            Val::Text(t) => Some(t),
            _ => None,
        }
    }
    /// Text, or the empty string.
    pub fn string(&self) -> String {
        self.text().unwrap_or_default().to_string()
    }
    /// As JSON (`journal query --json`).
    pub fn json(&self) -> Value {
        match self {
            Val::Null => Value::Null,
            Val::Int(i) => (*i).into(),
            Val::Real(x) => serde_json::Number::from_f64(*x).map_or(Value::Null, Value::Number),
            Val::Text(t) => t.clone().into(),
        }
    }
    /// Bytes of text it holds (for a query's byte limit).
    pub fn text_len(&self) -> usize {
        self.text().map_or(0, str::len)
    }
}

impl From<&str> for Val {
    fn from(s: &str) -> Val {
        Val::Text(s.to_string())
    }
}
impl From<String> for Val {
    fn from(s: String) -> Val {
        Val::Text(s)
    }
}
impl From<i64> for Val {
    fn from(i: i64) -> Val {
        Val::Int(i)
    }
}
impl From<f64> for Val {
    fn from(x: f64) -> Val {
        Val::Real(x)
    }
}
impl From<bool> for Val {
    fn from(b: bool) -> Val {
        Val::Int(i64::from(b))
    }
}
impl<T: Into<Val>> From<Option<T>> for Val {
    fn from(o: Option<T>) -> Val {
        o.map_or(Val::Null, Into::into)
    }
}

impl rusqlite::ToSql for Val {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Val::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Val::Int(i) => ToSqlOutput::Borrowed(ValueRef::Integer(*i)),
            Val::Real(x) => ToSqlOutput::Borrowed(ValueRef::Real(*x)),
            Val::Text(t) => ToSqlOutput::Borrowed(ValueRef::Text(t.as_bytes())),
        })
    }
}

impl From<ValueRef<'_>> for Val {
    fn from(v: ValueRef<'_>) -> Val {
        match v {
            ValueRef::Null => Val::Null,
            ValueRef::Integer(i) => Val::Int(i),
            ValueRef::Real(x) => Val::Real(x),
            ValueRef::Text(t) => Val::Text(String::from_utf8_lossy(t).into_owned()),
            ValueRef::Blob(b) => Val::Text(format!("<{} bytes>", b.len())),
        }
    }
}

impl pg::ToSql for Val {
    fn to_sql(&self, ty: &Type, out: &mut bytes::BytesMut) -> Result<IsNull, BoxError> {
        match (self, ty) {
            (Val::Null, _) => Ok(IsNull::Yes),
            (Val::Int(i), &Type::INT8) => i.to_sql(ty, out),
            (Val::Int(i), &Type::INT4) => i32::try_from(*i)?.to_sql(ty, out),
            (Val::Int(i), &Type::FLOAT8) => (*i as f64).to_sql(ty, out),
            (Val::Int(i), &Type::BOOL) => (*i != 0).to_sql(ty, out),
            (Val::Real(x), &Type::FLOAT8) => x.to_sql(ty, out),
            (Val::Text(t), _) => t.as_str().to_sql(ty, out),
            (v, t) => Err(format!("cannot store {v:?} in a column of type {t}").into()),
        }
    }
    fn accepts(_: &Type) -> bool {
        true
    }
    pg::to_sql_checked!();
}

impl<'a> pg::FromSql<'a> for Val {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Val, BoxError> {
        Ok(match *ty {
            Type::BOOL => Val::Int(i64::from(bool::from_sql(ty, raw)?)),
            Type::INT2 => Val::Int(i16::from_sql(ty, raw)?.into()),
            Type::INT4 => Val::Int(i32::from_sql(ty, raw)?.into()),
            Type::INT8 => Val::Int(i64::from_sql(ty, raw)?),
            Type::OID => Val::Int(u32::from_sql(ty, raw)?.into()),
            Type::FLOAT4 => Val::Real(f32::from_sql(ty, raw)?.into()),
            Type::FLOAT8 => Val::Real(f64::from_sql(ty, raw)?),
            Type::NUMERIC => numeric(raw)?,
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
                Val::Text(String::from_utf8_lossy(raw).into_owned())
            }
            Type::JSON => Val::Text(String::from_utf8_lossy(raw).into_owned()),
            // jsonb: a version byte (1), then the text.
            Type::JSONB => Val::Text(String::from_utf8_lossy(raw.get(1..).unwrap_or(&[])).into()),
            Type::TIMESTAMP | Type::TIMESTAMPTZ => {
                // Microseconds since 2000-01-01 UTC.
                let us = i64::from_sql(&Type::INT8, raw)?;
                let t = chrono::DateTime::from_timestamp_micros(us + 946_684_800_000_000)
                    .ok_or("a timestamp out of range")?;
                Val::Text(t.to_rfc3339())
            }
            _ => Val::Text(format!("<{ty}: cast to text to see it>")),
        })
    }
    fn from_sql_null(_: &Type) -> Result<Val, BoxError> {
        Ok(Val::Null)
    }
    fn accepts(_: &Type) -> bool {
        true
    }
}

/// PostgreSQL's binary NUMERIC (digits in base 10,000, a weight, a sign, a display scale)
/// as an integer when it has no fraction and fits, else a double.
fn numeric(raw: &[u8]) -> Result<Val, BoxError> {
    let word = |k: usize| -> Result<u16, BoxError> {
        raw.get(2 * k..2 * k + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| "a truncated NUMERIC".into())
    };
    let (n, weight, sign, scale) = (word(0)?, word(1)? as i16, word(2)?, word(3)?);
    if sign == 0xC000 {
        return Ok(Val::Null); // NaN
    }
    // The digits as one integer, then scaled once (a division by a power of ten rounds
    // correctly; adding scaled digits one by one would not).
    let mut m = 0f64;
    for k in 0..usize::from(n) {
        m = m * 10_000.0 + f64::from(word(4 + k)?);
    }
    let exp = i32::from(weight) - (i32::from(n) - 1);
    let mut x = if exp >= 0 {
        m * 10_000f64.powi(exp)
    } else {
        m / 10_000f64.powi(-exp)
    };
    if sign == 0x4000 {
        x = -x;
    }
    Ok(if scale == 0 && x.abs() < 9.0e15 {
        Val::Int(x as i64)
    } else {
        Val::Real(x)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numerics_decode() {
        // 12345.67: digits [1, 2345, 6700], weight 1, scale 2.
        let raw = [0, 3, 0, 1, 0, 0, 0, 2, 0, 1, 0x09, 0x29, 0x1a, 0x2c];
        assert_eq!(numeric(&raw).ok(), Some(Val::Real(12345.67)));
        // -20000: digits [2], weight 1, negative.
        let raw = [0, 1, 0, 1, 0x40, 0, 0, 0, 0, 2];
        assert_eq!(numeric(&raw).ok(), Some(Val::Int(-20000)));
        assert!(numeric(&[0, 2, 0]).is_err(), "truncated");
    }
}
