//! The gate grammar's tokens: words, quantities (a number with the unit written against it:
//! `800ms`, `1%`, `1.5x`, `200`), quoted strings and symbols, each with its column.

use super::grammar::GateError;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    /// `error_rate`, `p99`, `p99.9`, `over`, `calls`…
    Word(String),
    /// A number and the unit written against it (`""` when none).
    Qty { num: String, unit: String },
    /// A double-quoted string, unescaped.
    Str(String),
    /// `{ } = , < <= > >= == !=`
    Sym(&'static str),
}

impl Tok {
    /// How the token reads in an error message.
    pub(crate) fn describe(&self) -> String {
        match self {
            Tok::Word(w) => format!("`{w}`"),
            Tok::Qty { num, unit } => format!("`{num}{unit}`"),
            Tok::Str(s) => format!("\"{s}\""),
            Tok::Sym(s) => format!("`{s}`"),
        }
    }
}

/// A token and its 1-based column (in characters).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Spanned {
    pub tok: Tok,
    pub col: usize,
}

const SYMBOLS: [&str; 10] = ["<=", ">=", "==", "!=", "<", ">", "=", "{", "}", ","];

/// Split a gate into tokens.
pub(crate) fn lex(text: &str) -> Result<Vec<Spanned>, GateError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let col = i + 1;
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            // `p99.9`: a percentile may carry decimals.
            let word: String = chars[start..i].iter().collect();
            let is_pct = word.len() > 1
                && word.starts_with('p')
                && word[1..].bytes().all(|b| b.is_ascii_digit());
            if is_pct && i + 1 < chars.len() && chars[i] == '.' && chars[i + 1].is_ascii_digit() {
                i += 1;
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
            }
            out.push(Spanned {
                tok: Tok::Word(chars[start..i].iter().collect()),
                col,
            });
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            let num: String = chars[start..i].iter().collect();
            if num.matches('.').count() > 1 {
                return Err(GateError::new(col, format!("`{num}` is not a number")));
            }
            let ustart = i;
            if chars.get(i) == Some(&'%') {
                i += 1;
            } else {
                while i < chars.len() && chars[i].is_ascii_alphabetic() {
                    i += 1;
                }
            }
            let unit: String = chars[ustart..i].iter().collect();
            out.push(Spanned {
                tok: Tok::Qty { num, unit },
                col,
            });
        } else if c == '"' {
            i += 1;
            let mut s = String::new();
            loop {
                match chars.get(i) {
                    None => {
                        return Err(GateError::new(col, "this string has no closing `\"`"));
                    }
                    Some('"') => {
                        i += 1;
                        break;
                    }
                    Some('\\') => {
                        match chars.get(i + 1) {
                            Some(e @ ('"' | '\\')) => s.push(*e),
                            _ => {
                                return Err(GateError::new(
                                    i + 1,
                                    "only `\\\"` and `\\\\` are escapes inside a string",
                                ))
                            }
                        }
                        i += 2;
                    }
                    Some(ch) => {
                        s.push(*ch);
                        i += 1;
                    }
                }
            }
            out.push(Spanned {
                tok: Tok::Str(s),
                col,
            });
        } else if let Some(sym) = SYMBOLS.iter().find(|s| {
            s.chars()
                .enumerate()
                .all(|(k, sc)| chars.get(i + k) == Some(&sc))
        }) {
            i += sym.chars().count();
            out.push(Spanned {
                tok: Tok::Sym(sym),
                col,
            });
        } else {
            let hint = match c {
                '\'' => " (quote names with `\"`)",
                '≤' => " (write `<=`)",
                '≥' => " (write `>=`)",
                _ => "",
            };
            return Err(GateError::new(col, format!("unexpected `{c}`{hint}")));
        }
    }
    Ok(out)
}
