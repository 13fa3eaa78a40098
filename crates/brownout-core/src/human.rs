//! Figures for people: milliseconds, durations, percentages and plain numbers rounded to
//! what a reader can use (`1.09 s`, `7.14 %`, `0.0714`), never `0.07142857142857142`. Full
//! precision stays in JSON; every human-facing figure goes through here.

/// A number with `sig` significant digits (at least the integer part), trailing zeros
/// trimmed: `0.07142857` → `0.0714`, `1234.56` → `1235`, `2.5` → `2.5`.
pub fn num(x: f64) -> String {
    sig(x, 3)
}

/// `x` to `digits` significant digits, trailing zeros trimmed.
pub fn sig(x: f64, digits: u32) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            "n/a".into()
        } else {
            format!("{x}")
        };
    }
    if x == 0.0 {
        return "0".into();
    }
    let magnitude = x.abs().log10().floor() as i32;
    let decimals = (digits as i32 - 1 - magnitude).clamp(0, 12) as usize;
    trim(format!("{x:.decimals$}"))
}

fn trim(s: String) -> String {
    if s.contains('.') {
        let t = s.trim_end_matches('0').trim_end_matches('.');
        if t == "-0" {
            "0".into()
        } else {
            t.to_string()
        }
    } else {
        s
    }
}

/// Milliseconds for people: `0.5 ms`, `18 ms`, `1.09 s`, `2.5 min`, `3.2 h`.
pub fn ms(ms: f64) -> String {
    if !ms.is_finite() {
        return "unbounded".into();
    }
    let a = ms.abs();
    if a < 1000.0 {
        format!("{} ms", sig(ms, 3))
    } else if a < 60_000.0 {
        format!("{} s", sig(ms / 1000.0, 3))
    } else if a < 3_600_000.0 {
        format!("{} min", sig(ms / 60_000.0, 3))
    } else {
        format!("{} h", sig(ms / 3_600_000.0, 3))
    }
}

/// A duration for people (see [`ms`]).
pub fn duration(d: std::time::Duration) -> String {
    ms(d.as_secs_f64() * 1000.0)
}

/// A fraction (0..=1) as a percentage: `0.0714` → `7.14 %`, `1.0` → `100 %`; tiny non-zero
/// values keep their significant digits (`0.0012 %`).
pub fn pct(fraction: f64) -> String {
    if !fraction.is_finite() {
        return "n/a".into();
    }
    let p = fraction * 100.0;
    let s = if p.abs() >= 1.0 || p == 0.0 {
        trim(format!("{p:.2}"))
    } else {
        sig(p, 2)
    };
    format!("{s} %")
}

/// A text safe to print on a terminal or a log line: control characters (newlines, escape
/// sequences) shown as `\u{..}`, at most `n` characters (then `…`).
pub fn clean_n(text: &str, n: usize) -> String {
    let mut out: String = text
        .chars()
        .take(n)
        .map(|c| {
            if c.is_control() {
                format!("\\u{{{:x}}}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect();
    if text.chars().count() > n {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_rounded_for_people() {
        assert_eq!(num(0.071_428_571_428_571_42), "0.0714");
        assert_eq!(num(1.085_915_999_999_999_9), "1.09");
        assert_eq!(num(1234.56), "1235");
        assert_eq!(num(2.5), "2.5");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(-0.000_4), "-0.0004");
        assert_eq!(num(f64::NAN), "n/a");
    }

    #[test]
    fn durations_pick_their_unit() {
        assert_eq!(ms(0.5), "0.5 ms");
        assert_eq!(ms(18.0), "18 ms");
        assert_eq!(ms(1085.916), "1.09 s");
        assert_eq!(ms(150_000.0), "2.5 min");
        assert_eq!(ms(360_000_000.0), "100 h");
        assert_eq!(ms(f64::INFINITY), "unbounded");
    }

    #[test]
    fn percentages_keep_what_matters() {
        assert_eq!(pct(0.071_428_571_428_571_42), "7.14 %");
        assert_eq!(pct(1.0), "100 %");
        assert_eq!(pct(0.0), "0 %");
        assert_eq!(pct(0.000_012_34), "0.0012 %");
        assert_eq!(pct(0.995_4), "99.54 %");
    }
}
