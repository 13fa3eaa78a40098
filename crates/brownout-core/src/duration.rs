//! Durations as people write them — `500ms`, `30s`, `1.5m`, `1h` — read by one parser for
//! every plan key, experiment key, gate and command-line flag.
//!
//! The units are `ms`, `s`, `m` and `h`. What else a caller accepts is a [`Rules`]: a bare
//! number read as seconds (flags), zero or only durations above it, and the longest
//! duration it takes (by default [`LONGEST`], a year: longer is a typo, and overflows the
//! clocks that would wait it out). Callers keep their own words for an error; the
//! [`DurationError`] says which rule a text broke.

use std::time::Duration;

/// The longest duration brownout takes unless a caller says less: a year.
pub const LONGEST: Duration = Duration::from_secs(365 * 24 * 3600);

/// Milliseconds in one unit of time (`ms`, `s`, `m`, `h`); `None` for anything else.
pub fn millis_per(unit: &str) -> Option<f64> {
    Some(match unit {
        "ms" => 1.0,
        "s" => 1000.0,
        "m" => 60_000.0,
        "h" => 3_600_000.0,
        _ => return None,
    })
}

/// A text's number and what follows it (trimmed): `" 1.5 m"` → (1.5, `"m"`). `None` when
/// it does not start with a number.
fn split(text: &str) -> Option<(f64, &str)> {
    let t = text.trim();
    let at = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(at);
    Some((number.parse().ok()?, unit.trim()))
}

/// Milliseconds from a duration with its unit (`"250ms"`, `"2s"`, `"1m"`, `"1h"`); `None`
/// for anything else, a bare number included. No bound: the caller's.
pub fn parse_millis(text: &str) -> Option<f64> {
    let (n, unit) = split(text)?;
    Some(n * millis_per(unit)?)
}

/// What a caller accepts besides a number with its unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// A bare number is seconds (`30` is `30s`); else it is not a duration.
    pub bare_seconds: bool,
    /// Zero is refused.
    pub above_zero: bool,
    /// The longest duration taken.
    pub max: Duration,
}

impl Rules {
    /// A key of a file: the unit written, zero allowed, at most [`LONGEST`].
    pub const KEY: Rules = Rules {
        bare_seconds: false,
        above_zero: false,
        max: LONGEST,
    };
    /// A command-line flag: a bare number is seconds, above zero, at most [`LONGEST`].
    pub const FLAG: Rules = Rules {
        bare_seconds: true,
        above_zero: true,
        max: LONGEST,
    };
}

/// Which rule a text broke.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DurationError {
    #[error("`{0}` is not a duration such as 30s, 500ms or 2m")]
    NotADuration(String),
    #[error("`{0}` is not a duration above zero")]
    NotAboveZero(String),
    #[error("`{text}` is out of range: at most {}h", max.as_secs() / 3600)]
    TooLong { text: String, max: Duration },
}

/// A duration by `rules`.
pub fn parse(text: &str, rules: Rules) -> Result<Duration, DurationError> {
    let t = text.trim();
    let not_a_duration = || DurationError::NotADuration(t.to_string());
    let (n, unit) = split(t).ok_or_else(not_a_duration)?;
    let per = match unit {
        "" if rules.bare_seconds => 1000.0,
        u => millis_per(u).ok_or_else(not_a_duration)?,
    };
    let seconds = n * per / 1000.0;
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(not_a_duration());
    }
    if rules.above_zero && seconds <= 0.0 {
        return Err(DurationError::NotAboveZero(t.to_string()));
    }
    if seconds > rules.max.as_secs_f64() {
        return Err(DurationError::TooLong {
            text: t.to_string(),
            max: rules.max,
        });
    }
    Duration::try_from_secs_f64(seconds).map_err(|_| not_a_duration())
}

/// A command-line flag's duration ([`Rules::FLAG`]), the error in words: clap's
/// `value_parser` for every `--DURATION` flag.
pub fn parse_flag(text: &str) -> Result<Duration, String> {
    parse(text, Rules::FLAG).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_bare_numbers_and_bounds_follow_the_rules() {
        assert_eq!(parse_millis("250ms"), Some(250.0));
        assert_eq!(parse_millis(" 1.5 m "), Some(90_000.0));
        assert_eq!(parse_millis("1h"), Some(3_600_000.0));
        assert_eq!(parse_millis("30"), None, "a key writes its unit");
        assert_eq!(parse_millis("2 weeks"), None);
        assert_eq!(parse("30s", Rules::KEY), Ok(Duration::from_secs(30)));
        assert_eq!(parse("0s", Rules::KEY), Ok(Duration::ZERO));
        assert!(matches!(
            parse("30", Rules::KEY),
            Err(DurationError::NotADuration(_))
        ));
        assert_eq!(parse_flag("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_flag("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(
            parse_flag("0s").unwrap_err(),
            "`0s` is not a duration above zero"
        );
        assert_eq!(
            parse_flag("9000h").unwrap_err(),
            "`9000h` is out of range: at most 8760h"
        );
        assert_eq!(
            parse_flag("soon").unwrap_err(),
            "`soon` is not a duration such as 30s, 500ms or 2m"
        );
        let day = Rules {
            max: Duration::from_secs(86_400),
            ..Rules::KEY
        };
        assert!(parse("24h", day).is_ok());
        assert!(matches!(
            parse("25h", day),
            Err(DurationError::TooLong { .. })
        ));
        assert!(parse("1e400s", Rules::KEY).is_err(), "no infinity");
        assert!(parse(".s", Rules::KEY).is_err());
    }
}
